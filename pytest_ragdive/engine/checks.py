"""Exact checks of a generated turn, run before any model judges it.

Each check returns None when the turn passes, else the reason, phrased as feedback the
generator can act on. They are cheap and they do not guess: a follow-up that repeats the
subject of earlier turns, asks again what was asked, quotes evidence that is not in the
document, or names "the document" is rejected whatever a model would say.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .models import GeneratedTurn, Turn

_WORD = re.compile(r"[\w'-]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
STOPWORDS = frozenset(
    ["a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "but", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "has", "have", "had", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "many", "much", "long", "far", "often", "there", "their", "they", "them", "it", "its", "this", "that", "these", "those", "he", "she", "his", "her", "one", "ones", "i", "you", "we", "me", "my", "your", "our", "can", "could", "would", "should", "will", "shall", "may", "might", "must", "about", "into", "than", "then", "so", "if", "not", "no", "yes", "any", "some", "all", "each", "every", "more", "most", "less", "least", "also", "just", "only", "very", "too", "as", "up", "down", "out", "over", "under", "again", "please", "tell", "know", "say", "said", "like", "get", "got"]
)
REFERRING = frozenset(
    ["it", "its", "it's", "itself", "they", "them", "their", "theirs", "themselves", "this", "that", "these", "those", "there", "then", "one", "ones", "he", "she", "him", "his", "her", "he's", "she's", "same", "other", "former", "latter", "both", "either"]
)
ELLIPTICAL_STARTS = ("and ", "what about", "how about", "but ", "or ", "also", "so ", "why", "then ")
MENTIONS_SOURCE = re.compile(
    r"\b(the|this|your|that) (source|text|document|passage|article|context)\b", re.IGNORECASE
)


def words(text: str) -> list[str]:
    return [w.lower().strip("'-") for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    return [w for w in words(text) if w and w not in STOPWORDS and not w.isdigit()]


def _normalized(text: str) -> str:
    return " ".join(words(text))


def repeated_subject(rag_input: str, questions: Sequence[str], answers: Sequence[str] = ()) -> str | None:
    """The phrase of the conversation that ``rag_input`` repeats instead of referring to
    it: two content words in a row from an earlier question, or a name (a capitalized
    word inside a sentence) from an earlier question or answer."""
    mine = content_words(rag_input)
    pairs = {" ".join(p) for p in zip(mine, mine[1:])}
    names = {w.lower() for w in re.findall(r"(?<!^)(?<![.?!] )\b[A-Z][\w-]+", rag_input)}
    names -= STOPWORDS
    for question in questions:
        theirs = content_words(question)
        for pair in zip(theirs, theirs[1:]):
            if " ".join(pair) in pairs:
                return " ".join(pair)
    for text in (*questions, *answers):
        shared = names & set(content_words(text))
        if shared:
            return sorted(shared)[0]
    return None


def refers_back(rag_input: str, questions: Sequence[str], answers: Sequence[str] = ()) -> str | None:
    """None when a follow-up leaves its subject to the conversation (a pronoun, or just
    not naming it again); else what to fix."""
    phrase = repeated_subject(rag_input, questions, answers)
    if phrase:
        return (f'rag_input repeats "{phrase}" from earlier turns; refer to it the way people '
                f'do in a chat ("it", "they", "that one") or leave it out')
    return None


def _named(text: str) -> set[str]:
    """The words and numbers that say what a question is about."""
    return {w for w in words(text) if w and w not in STOPWORDS}


def left_to_conversation(rag_input: str, standalone: str) -> set[str]:
    """What the stand-alone question names and the user's message leaves out: what a
    reader needs the conversation for."""
    return _named(standalone) - _named(rag_input)


def leans_back(rag_input: str, standalone: str, earlier: Sequence[str]) -> str | None:
    """None when the user's message cannot be understood without the conversation but can
    with it: it leaves out something its stand-alone question names, and only what earlier
    turns said."""
    left_out = left_to_conversation(rag_input, standalone)
    said = {w for text in earlier for w in _named(text)}
    if not left_out:
        return ("rag_input can be understood without the conversation; ask about what the "
                "conversation is about and refer to it with \"it\" or \"they\"")
    unknown = sorted(left_out - said)
    if unknown:
        return (f"rag_input leaves out {', '.join(unknown)}, which the conversation has not "
                f"said; ask about what the conversation is about")
    return None


def is_question(rag_input: str) -> str | None:
    """None when the user's message is a question as people type it."""
    if rag_input.strip().endswith("?") and len(words(rag_input)) >= 2:
        return None
    return "rag_input must be a whole question a user would type, ending with \"?\""


def follow_up_fault(rag_input: str, standalone: str, history: Sequence[Turn]) -> str | None:
    """None when a follow-up is typed as a user in this conversation would: a question that
    leans on the conversation without repeating it; else what to fix."""
    questions = [q for t in history for q in (t.generated.rag_input, t.generated.standalone_question)]
    answers = [a for t in history for a in (t.generated.ground_truth, t.answer.answer)]
    return (refers_back(rag_input, questions, answers)
            or leans_back(rag_input, standalone, [*questions, *answers])
            or is_question(rag_input))


def pronoun_form(standalone: str, subject: str) -> str | None:
    """``standalone`` with ``subject`` (and a possessive "'s" after it) replaced by "it"
    ("its"), as a user who already named it would ask; None when the subject is not in it."""
    match = re.search(rf"\b{re.escape(subject.strip())}('s)?(?!\w)", standalone, re.IGNORECASE)
    if not subject.strip() or match is None:
        return None
    pronoun = "its" if match.group(1) else "it"
    if match.start() == 0:
        pronoun = pronoun.capitalize()
    return f"{standalone[:match.start()]}{pronoun}{standalone[match.end():]}"


def _overlap(a: str, b: str) -> float:
    x, y = set(content_words(a)), set(content_words(b))
    return len(x & y) / len(x | y) if x | y else 1.0


def repeated_question(candidate: GeneratedTurn, earlier: Sequence[GeneratedTurn]) -> str | None:
    """None unless the candidate asks again what an earlier turn asked."""
    for index, turn in enumerate(earlier, 1):
        same_text = _normalized(candidate.rag_input) == _normalized(turn.rag_input)
        if same_text or _overlap(candidate.standalone_question, turn.standalone_question) >= 0.75:
            return (f"it asks again what turn {index} asked ({turn.standalone_question!r}); "
                    f"ask about another fact")
    return None


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def supporting_sentences(evidence: str, document: str) -> list[str]:
    """The document's sentences that ``evidence`` may quote: those holding at least half of
    its content words (a small model shortens and rewords its quotes)."""
    wanted = set(content_words(evidence)) or set(words(evidence))
    return [
        sentence.strip() for sentence in _SENTENCE.split(document)
        if wanted and len(wanted & set(words(sentence))) >= len(wanted) / 2
    ]


def unsupported_key(candidate: GeneratedTurn, document: str) -> str | None:
    """None when the quoted evidence matches a sentence of the document that holds every
    number of the answer key; else what to fix."""
    if not candidate.evidence.strip():
        return "evidence is empty; copy the sentence of the source text that states the answer"
    sentences = supporting_sentences(candidate.evidence, document)
    if not sentences:
        return ("evidence is not copied from the source text; copy the sentence that states "
                "the answer as it is written")
    stated = set(content_words(" ".join(sentences))) | set(content_words(
        candidate.standalone_question))
    key = content_words(candidate.ground_truth)
    if len([w for w in key if w not in stated]) > len(key) / 2:
        return ("ground_truth is not what the quoted sentence of the source text says; take "
                "the answer only from that sentence")
    numbers = _NUMBER.findall(candidate.ground_truth)
    if any(all(n in _NUMBER.findall(s) for n in numbers) for s in sentences):
        return None
    missing = sorted({n for n in numbers if not any(n in _NUMBER.findall(s) for s in sentences)})
    return (f"ground_truth states {', '.join(missing or numbers)}, which the quoted sentence of "
            f"the source text does not; take the answer only from that sentence")


def mentions_source(candidate: GeneratedTurn) -> str | None:
    text = f"{candidate.rag_input} {candidate.standalone_question} {candidate.ground_truth}"
    match = MENTIONS_SOURCE.search(text)
    if match:
        return f'it mentions "{match.group(0)}"; a real user has not seen any document'
    return None
