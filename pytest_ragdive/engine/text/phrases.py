"""Putting a phrase of an English question as a pronoun: "How many passengers does the
Tern carry?" -> "How many passengers does it carry?". The phrases are the runs of words
between stop words and prepositions; the caller ranks them (:func:`put_pronoun`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from .english import content_words

#: a token is a word or a mark, or a name with its number and label ("Line 2 (green)"), so
#: that the label goes with the name it belongs to
_TOKEN = re.compile(r"[A-Z][\w'-]*(?: \d[\w.]*)+(?: \([\w' -]+\))?|[\w'-]+|[^\w\s]",
                    re.UNICODE)
DETERMINERS = frozenset(["the", "a", "an", "this", "that", "these", "those"])
_PREPOSITIONS = frozenset(
    ["between", "after", "before", "during", "per", "via", "across", "through", "near",
     "around", "without", "within", "against", "since", "until", "while", "because", "toward",
     "towards", "among", "along", "behind", "beyond", "inside", "outside", "onto", "upon"]
)
#: short prepositions (stopwords) after which a question's last word may be its verb
_SHORT_PREPOSITIONS = frozenset(["on", "in", "at", "to", "for", "from", "with", "by", "of",
                                 "into", "over", "under", "about"])
_RELATIVE = frozenset(["that", "which", "who"])
QUANTIFIERS = frozenset(["every", "each", "all", "any", "some", "no", "both", "either"])
#: words before a noun that ask which one it is: "What line circles the old town?"
INTERROGATIVE = frozenset(["what", "which", "whose", "how"])
_BE_HAVE = frozenset(["is", "are", "was", "were", "has", "have", "had"])
_AUXILIARIES = frozenset(["did", "does", "do", "can", "could", "will", "would", "should", "may",
                          "might", "must", "shall"])


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
