"""The user's message of a follow-up turn: the stand-alone question as a chat user types it.

A small generator model writes good stand-alone questions but, asked for the short chat
form, mostly writes the stand-alone question again or a bare noun phrase. Whether a message
depends on the conversation can be decided exactly: it leaves out something its stand-alone
question names that the conversation has already said. When the model's message does not,
the message is made from the stand-alone question by referring to the phrase it repeats
from the conversation with "it" (or "they"/"them"), the way people write in a chat.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..base.models import Document, Turn
from ..text.english import (
    content_words,
    is_question,
    repeated_subject,
    singles_out,
    singular,
    words,
)
from ..text.phrases import INTERROGATIVE, QUANTIFIERS, put_pronoun

#: words a phrase must have more than to be what the conversation is about
_GENERIC = frozenset(
    ["name", "names", "number", "cost", "price", "length", "time", "times", "maximum",
     "minimum", "location", "type", "types", "kind", "city", "total", "first", "last",
     "largest", "smallest", "main", "year", "years", "day", "days", "called"]
)
#: at most this many phrases of a message are put as pronouns by :func:`unnamed`
_UNNAMED_PASSES = 2


def said_before(history: Sequence[Turn]) -> list[str]:
    """What the conversation has said: every earlier message, its stand-alone form and the
    answer."""
    return [text for t in history
            for text in (t.generated.rag_input, t.generated.standalone_question, t.answer.answer)]


def depends_on_conversation(message: str, standalone: str, said: Sequence[str]) -> bool:
    """Whether ``message`` leaves to the conversation something ``standalone`` names: a
    content word of the stand-alone question, not a generic one ("name", "cost"), that an
    earlier turn said and the message does not."""
    spoken = {w for text in said for w in content_words(text)}
    omitted = set(content_words(standalone)) - set(content_words(message)) - _GENERIC
    return bool(omitted & spoken)


def chat_message(message: str, standalone: str, said: Sequence[str], last: Sequence[str]) -> str:
    """The message to send: the model's own when it is a question that depends on the
    conversation and repeats none of its subject; else the stand-alone question referring
    back (:func:`refer_back`); else the model's message, for the validator to judge.
    ``said`` is every earlier message and answer, ``last`` those of the last turn."""
    if (is_question(message) and depends_on_conversation(message, standalone, said)
            and repeated_subject(message, said) is None):
        return message
    return refer_back(standalone, said, last) or message


def follow_up(message: str, standalone: str, said: Sequence[str], last: Sequence[str],
              subject: str | None) -> tuple[str, str]:
    """The message to send and its stand-alone question.

    A follow-up about a fact that names its own subject ("When did the first motor bus
    route open?") leans on nothing the conversation said, though a user asks it only
    because the conversation is about the regional buses. When neither the model's message
    nor :func:`refer_back` depends on the conversation, the stand-alone question says what
    the conversation is about (``subject``, the document's heading): "About Brenmouth
    Regional Buses: When did ...?". The message, which leaves that out, then depends on
    the conversation the way a user's topic-less question does."""
    sent = chat_message(message, standalone, said, last)
    if subject is None or depends_on_conversation(sent, standalone, said):
        return sent, standalone
    about = anchored(subject, standalone)
    return (sent if depends_on_conversation(sent, about, said) else message), about


def unnamed(message: str, said: Sequence[str], document: Document) -> str:
    """``message`` with each phrase that tells ``document`` apart from the documents it was
    loaded with (:func:`~..text.english.singles_out`) put as a pronoun, where the conversation has
    said that phrase: after an answer that named the Tern, "How many passengers does the
    Tern carry?" becomes "How many passengers does it carry?". A message that names what
    only its document holds is answered as well by a bot that kept no history, so it tests
    nothing about the conversation. A phrase the conversation did not say stays: "it"
    would then refer to nothing, and the validator sends the turn back."""
    spoken = {singular(w) for text in said for w in content_words(text)}
    for _ in range(_UNNAMED_PASSES):
        named = {singular(w) for w in singles_out(message, document.text, document.others)}
        if not named:
            break

        def rank(tokens: list[str], begin: int, end: int) -> tuple[int, ...] | None:
            meaning = {singular(w) for w in content_words(" ".join(tokens[begin:end]))}
            hit = meaning & named
            if begin and tokens[begin - 1].lower() in QUANTIFIERS | INTERROGATIVE:
                return None  # "which boat" is not "which it"
            if not hit or not meaning - _GENERIC <= spoken:
                return None
            return (len(hit), len(meaning))

        shorter = put_pronoun(message, rank)
        if shorter is None:
            break
        message = shorter
    return message


def anchored(subject: str, standalone: str) -> str:
    """``standalone`` saying what the conversation is about."""
    return f"About {subject}: {standalone}"


def refer_back(standalone: str, said: Sequence[str], last: Sequence[str]) -> str | None:
    """``standalone`` with the phrase it takes from the conversation replaced by a pronoun.

    The phrases are the runs of words between stopwords and prepositions ("the Tern
    ferry", "Brenmouth's tram network"); one qualifies when the conversation said it in the
    same words, or when it holds a name the conversation said. One of the last turn goes
    first, then one with a name, then the longest. None when no phrase qualifies with more
    than generic words ("the name").
    """
    spoken = {w for text in said for w in content_words(text)}
    heard = {w for text in last for w in content_words(text)}
    spoken_singular = {singular(w) for w in spoken}
    earlier = [f" {' '.join(words(text))} " for text in said]

    def rank(tokens: list[str], begin: int, end: int) -> tuple[int, ...] | None:
        meaning = set(content_words(" ".join(tokens[begin:end]))) - _GENERIC
        names = {t.lower().removesuffix("'s") for t in tokens[begin:end]
                 if t[:1].isupper() and (begin or t is not tokens[0])}
        verbatim = any(f" {' '.join(words(' '.join(tokens[begin:end])))} " in text
                       for text in earlier)
        if begin and tokens[begin - 1].lower() in QUANTIFIERS | INTERROGATIVE:
            return None  # "every tram" is not "every it", "what line" not "what it"
        # a name alone is not enough: "a Brenmouth library card" is not "Brenmouth"
        known = names & spoken and {singular(w) for w in meaning} <= spoken_singular
        if not meaning or not (verbatim or known):
            return None
        return (bool(meaning & heard), bool(names), len(meaning))

    return put_pronoun(standalone, rank)


