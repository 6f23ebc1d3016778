"""The user's message of a follow-up turn: the stand-alone question as a chat user types it.

A small generator model writes good stand-alone questions but, asked for the short chat
form, mostly writes the stand-alone question again or a bare noun phrase. Whether a message
depends on the conversation can be decided exactly: it leaves out something its stand-alone
question names that the conversation has already said. When the model's message does not,
the message is made from the stand-alone question by referring to the phrase it repeats
from the conversation with "it" (or "they"/"them"), the way people write in a chat.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ..validation.checks import content_words, repeated_subject, singles_out, singular, words
from ..base.models import Document, GeneratedTurn, Turn

#: a token is a word or a mark, or a name with its number and label ("Line 2 (green)"), so
#: that the label goes with the name it belongs to
_TOKEN = re.compile(r"[A-Z][\w'-]*(?: \d[\w.]*)+(?: \([\w' -]+\))?|[\w'-]+|[^\w\s]",
                    re.UNICODE)
DETERMINERS = frozenset(["the", "a", "an", "this", "that", "these", "those"])
#: words a phrase must have more than to be what the conversation is about
_GENERIC = frozenset(
    ["name", "names", "number", "cost", "price", "length", "time", "times", "maximum",
     "minimum", "location", "type", "types", "kind", "city", "total", "first", "last",
     "largest", "smallest", "main", "year", "years", "day", "days", "called"]
)
_PREPOSITIONS = frozenset(
    ["between", "after", "before", "during", "per", "via", "across", "through", "near",
     "around", "without", "within", "against", "since", "until", "while", "because", "toward",
     "towards", "among", "along", "behind", "beyond", "inside", "outside", "onto", "upon"]
)
#: short prepositions (stopwords) after which a question's last word may be its verb
_SHORT_PREPOSITIONS = frozenset(["on", "in", "at", "to", "for", "from", "with", "by", "of",
                                 "into", "over", "under", "about"])
_RELATIVE = frozenset(["that", "which", "who"])
_ABOUT = re.compile(r"About [^:?]+: ")
_QUANTIFIERS = frozenset(["every", "each", "all", "any", "some", "no", "both", "either"])
#: words before a noun that ask which one it is: "What line circles the old town?"
_INTERROGATIVE = frozenset(["what", "which", "whose", "how"])
_BE_HAVE = frozenset(["is", "are", "was", "were", "has", "have", "had"])
#: at most this many phrases of a message are put as pronouns by :func:`unnamed`
_UNNAMED_PASSES = 2
_AUXILIARIES = frozenset(["did", "does", "do", "can", "could", "will", "would", "should", "may",
                          "might", "must", "shall"])


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


def leans_back(candidate: GeneratedTurn, history: Sequence[Turn],
               also_said: Sequence[str] = ()) -> str | None:
    """The exact check of a follow-up: None when its message is a question that depends on
    the conversation (and on ``also_said``, said since: a premise the message states before
    it asks) and repeats none of its subject; else what to fix."""
    said = [*said_before(history), *also_said]
    message, standalone = candidate.rag_input, candidate.standalone_question
    if not is_question(message):
        return f"rag_input {message!r} is not a question; write it as the user's question"
    phrase = repeated_subject(message, said)
    if phrase:
        return (f'rag_input repeats "{phrase}" from earlier turns; refer to it the way people '
                f'do in a chat ("it", "they", "that one") or leave it out')
    if not depends_on_conversation(message, standalone, said):
        return ("the follow-up can be understood without the conversation; ask about "
                "something the last answer talked about, named in standalone_question and "
                "referred to as \"it\" in rag_input")
    return None


def told_apart(message: str, document: Document) -> str | None:
    """None unless ``message`` names what only ``document`` holds among the documents it
    was loaded with (:func:`~.checks.singles_out`): "When do boats leave the Old Quay?"
    finds its service without the conversation, "Who owns it?" among look-alikes does not.
    A bot that kept no history answers the first as well as one that did."""
    named = singles_out(message, document.text, document.others)
    if not named:
        return None
    quoted = ", ".join(f'"{w}"' for w in named[:4])
    return (f"rag_input says {quoted}, which only this topic has among those a user could "
            f"mean, so it can be understood without the conversation; ask it the way a user "
            f"who relies on the conversation does, with \"it\" for the topic and without "
            f"those words")


def names_its_topic(question: str, document: Document) -> str | None:
    """None when a first question tells its document apart from the documents it was
    loaded with (its words alone pick it out, :func:`~.checks.singles_out`); else what to
    fix. "What is the name of the ferry?" where the knowledge base has two ferries leaves
    even a bot that keeps the conversation guessing, at turn 1 and at every "it" after."""
    if (not document.others or singles_out(question, document.text, document.others)
            or not singles_out(document.text, document.text, document.others)):
        return None  # alone, told apart, or with no word of its own to be told apart by
    return ("the question could be about several of the services or topics a user could "
            "mean; name the one it asks about, as a user who starts a conversation does")


def is_question(message: str) -> bool:
    """A message a user types to ask: at least two words and a question mark."""
    return message.rstrip().endswith("?") and len(words(message)) >= 2


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
    loaded with (:func:`~.checks.singles_out`) put as a pronoun, where the conversation has
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
            if begin and tokens[begin - 1].lower() in _QUANTIFIERS | _INTERROGATIVE:
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


def about_subject(standalone: str) -> bool:
    """Whether :func:`follow_up` gave ``standalone`` the conversation's subject."""
    return _ABOUT.match(standalone) is not None


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
        if begin and tokens[begin - 1].lower() in _QUANTIFIERS | _INTERROGATIVE:
            return None  # "every tram" is not "every it", "what line" not "what it"
        # a name alone is not enough: "a Brenmouth library card" is not "Brenmouth"
        known = names & spoken and {singular(w) for w in meaning} <= spoken_singular
        if not meaning or not (verbatim or known):
            return None
        return (bool(meaning & heard), bool(names), len(meaning))

    return put_pronoun(standalone, rank)


def put_pronoun(text: str, rank: Callable[[list[str], int, int], tuple[int, ...] | None],
                replace: Callable[[list[str], int, int], str | None] | None = None
                ) -> str | None:
    """``text`` with its phrase of highest ``rank`` (of the phrases it ranks; the first of
    equals) put as a pronoun, its determiner with it; None when it ranks none. ``replace``
    (of the tokens, the phrase's start with its determiner, and its end) may give other
    words for the phrase; None from it, the pronoun."""
    tokens = _TOKEN.findall(text)
    best: tuple[tuple[int, ...], int, int] | None = None
    for begin, end in _phrases(tokens):
        ranked = rank(tokens, begin, end)
        if ranked is not None and (best is None or ranked > best[0]):
            best = (ranked, begin, end)
    if best is None:
        return None
    _, begin, end = best
    if begin > 0 and tokens[begin - 1].lower() in DETERMINERS:
        begin -= 1
    while end < len(tokens) and tokens[end][:1].isdigit():  # its number: "line 3" is a name
        end += 1
    said = replace(tokens, begin, end) if replace else None
    rest = ([*tokens[:begin], said, *tokens[end:]] if said
            else _possessive(tokens, begin, end)
            or [*tokens[:begin], _pronoun(tokens, begin, end), *tokens[end:]])
    joined = re.sub(r"\s+([?.!,;:])", r"\1", " ".join(rest))
    return joined[0].upper() + joined[1:]


def _possessive(tokens: list[str], begin: int, end: int) -> list[str] | None:
    """The tokens with "the X of <phrase>" written "its X" ("their X" for a plural); None
    when the phrase does not follow "of" after another phrase."""
    of = begin - 1
    if of < 1 or tokens[of].lower() != "of" or not content_words(tokens[of - 1]):
        return None
    start = of - 1
    while (start > 0 and content_words(tokens[start - 1])
           and tokens[start - 1].lower() not in _PREPOSITIONS):
        start -= 1
    head = start - 1 if start > 0 and tokens[start - 1].lower() in DETERMINERS else start
    owner = "its" if _pronoun(tokens, begin, end) == "it" else "their"
    return [*tokens[:head], owner, *tokens[start:of], *tokens[end:]]


def _phrases(tokens: list[str]) -> list[tuple[int, int]]:
    """The runs of tokens that are words, not stopwords and not prepositions."""
    runs: list[tuple[int, int]] = []
    begin = None
    for i, token in enumerate([*tokens, "."]):
        inside = bool(content_words(token)) and token.lower() not in _PREPOSITIONS
        if inside and begin is None:
            begin = i
        elif not inside and begin is not None:
            runs.append((_verb_skipped(tokens, begin), _verb_trimmed(tokens, begin, i)))
            begin = None
    return [(b, e) for b, e in runs if e > b]


def _verb_skipped(tokens: list[str], begin: int) -> int:
    """The start of a run without the verb of a relative clause ("the line that connects
    the harbour")."""
    if begin > 1 and tokens[begin - 1].lower() in _RELATIVE:
        return begin + 1
    return begin


def _verb_trimmed(tokens: list[str], begin: int, end: int) -> int:
    """The end of a run without its verb: the one a question puts after its subject where
    the question ends or a preposition follows ("When did the tower open?", "Are the bikes
    allowed on it?"), and the one before an object ("Who owns the city?")."""
    after = tokens[end].lower() if end < len(tokens) else "?"
    if after in DETERMINERS:
        return end - 1
    if not (after in ("?", ".", "!") or after in _PREPOSITIONS | _SHORT_PREPOSITIONS):
        return end
    before = begin - 1
    if before >= 0 and tokens[before].lower() in DETERMINERS:
        before -= 1
    if end - begin < 2 or before < 0:
        return end
    auxiliary, last = tokens[before].lower(), tokens[end - 1].lower()
    if auxiliary == "of":  # "When did the route of the network open?": the question's own
        auxiliary = next((t.lower() for t in tokens[:2] if t.lower() in _AUXILIARIES), "")
    if auxiliary in _AUXILIARIES or (auxiliary in _BE_HAVE and last.endswith(("ed", "en"))):
        return end - 1
    return end


def _pronoun(tokens: list[str], begin: int, end: int) -> str:
    """"it", or for a plural "they" as the subject (after an auxiliary, or first) and
    "them" elsewhere."""
    head = tokens[end - 1]
    plural = (head.lower().endswith("s") and not head.lower().endswith(("ss", "us", "is", "'s"))
              and not head[:1].isupper())
    if not plural:
        return "it"
    before = tokens[begin - 1].lower() if begin > 0 else ""
    return "they" if not before or before in _AUXILIARIES | _BE_HAVE else "them"
