"""The parts of an answer key that a right reply must state, by what its question asks.

A small model quotes whole sentences as answer keys ("The club was founded in 2011 and has
240 cars, 90 of them electric" for "When was the club founded?"): correctness asks about
the parts the question asks (:mod:`.binary`). English patterns, like the exact checks.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

from .english import content_words, numbers, stem, words

#: a verb that may begin a part of an answer key that leaves out its subject
VERB = r"(?:is|are|was|were|has|have|had|can|costs?|takes?|runs?|opens?|closes?|[a-z]+ed)\b"
#: where an answer key's parts meet: a sentence's end, a semicolon, a colon, a comma (with
#: "and" after it), or an "and" before a phrase with a figure ("... 350 g water and 10 g
#: salt") or before a verb ("... and is valid for 90 minutes"), and before a condition
#: ("... by Pedalwerk until the end of 2028"); the joint is kept
_KEY_PART = re.compile(r"((?<=[.!?])\s+(?=[A-Z])|;\s+|:\s+|,\s+(?:and\s+)?"
                       rf"|\s+and\s+(?=(?:a |an |the )?[\w.,-]*\d|{VERB})"
                       r"|\s+(?=(?:until|depending on|including|except)\b))")
_BARE = {"yes", "no"}
_SEVERAL = re.compile(r"\b(?:and|or)\b", re.IGNORECASE)
#: a range's first end: its "and" or "until" does not cut ("between 2.00 and 7.50 marks")
_BETWEEN = re.compile(r"\b(?:between|from)\s+\S+$")
_QUESTION_WORD = re.compile(r"\b(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
#: a part that renames the one before it ("the company that runs the ferries")
_APPOSITIVE = re.compile(r"(?:the|an?)\s+[^,]*?\b(?:that|who|which)\b")
_DIGIT = re.compile(r"\d")
#: a question whose answer is a figure: an amount, a count, a duration, a time or a date
_ASKS_FIGURE = re.compile(r"\bhow\s+(?:much|many|long|often|old|far|early|late|soon)\b|\bwhen\b"
                          r"|\b(?:what|which)\s+(?:year|time|date|day|hours?|price|fee)\b",
                          re.IGNORECASE)
_LOWER = re.compile(r"(?<![\w'-])[a-z][a-z'-]*")


def _pieces(answer_key: str) -> list[str]:
    """The answer key cut where its parts meet (:data:`_KEY_PART`); a piece with neither a
    figure nor two words of content goes with the one before it, a bare "Yes" or "No" with
    the one after it."""
    cut = _KEY_PART.split(answer_key.strip())
    pieces: list[str] = []
    for piece, joint in zip(cut[::2], [""] + cut[1::2]):
        piece = piece.strip()
        if not piece.strip("."):
            continue
        if pieces and (set(words(pieces[-1])) <= _BARE or _BETWEEN.search(pieces[-1])
                       or not (_DIGIT.search(piece) or len(content_words(piece)) >= 2)):
            pieces[-1] += joint.rstrip() + " " + piece
        else:
            pieces.append(piece)
    return [p.strip(" .") for p in pieces]


def _shared(question: AbstractSet[str], part: str) -> int:
    """How many of the ``question``'s words (stems, :func:`.english.stem`) ``part`` holds."""
    return len(question & {stem(w) for w in content_words(part)})


def subject_of(part: str) -> str:
    """What ``part`` is about: its words before its first verb ("A single ticket costs ..."
    -> "A single ticket")."""
    verb = re.search(rf"\b{VERB}", part)
    return part[:verb.start()] if verb else part


def key_parts(answer_key: str, question: str) -> list[str]:
    """The parts of an answer key that a right reply to ``question`` must each state.

    The key is cut at sentences, semicolons, colons, commas, an "and" before a figure or a
    verb ("costs 2.40 marks and is valid for 90 minutes") and a condition ("until ..."). A question that asks several
    things ("and", "or", or two question words) must have the first part and each part that
    shares a word with the question ("450 g bread flour, 50 g wholemeal flour and 10 g salt" -> three).
    A question that asks one thing must have one: a key that quotes a whole sentence holds
    clauses nobody asked for ("..., 90 of them electric" for "When was the club founded?").
    That part is one with a figure when the question asks for one ("How much ...?", "When
    ...?") and the key has one, then the one that shares the most of the question's common
    (lower-case) words, then of its names (which say what it is about, not what it asks), the first on a tie;
    never a part that renames the one before ("the company that ...") or that the question
    states whole while another part holds what it asks ("When does Line 3 run every 4
    minutes?"). A part without its subject ("... and is valid for 90 minutes") is read with
    the subject of the one before, and a short first part that shares no word with the
    question is the answer ("3 years, if ...")."""
    parts = _pieces(answer_key) or [answer_key]
    asked = {stem(w) for w in content_words(question)}
    if _SEVERAL.search(question) or len(_QUESTION_WORD.findall(question)) >= 2:
        return [p for i, p in enumerate(parts) if i == 0 or _shared(asked, p)]
    read = [f"{subject_of(parts[i - 1])} {p}" if i and re.match(VERB, p) else p
            for i, p in enumerate(parts)]
    own = [{stem(w) for w in content_words(p)} for p in parts]
    held = [asked & {stem(w) for w in content_words(r)} for r in read]
    figures = set(numbers(question))

    def stated(i: int) -> bool:  # whole in the question, with a figure or beside what is asked
        return (own[i] <= asked and figures.issuperset(numbers(parts[i]))
                and (bool(numbers(parts[i]))
                     or any(held[j] - own[i] for j in range(len(parts)) if j != i)))

    if len(content_words(parts[0])) < 3 and not held[0] and not stated(0):
        return parts[:1]
    common = {stem(w) for w in content_words(" ".join(_LOWER.findall(question)))}
    figure = bool(_ASKS_FIGURE.search(question))
    score = [(False, False, -1, -1) if i and _APPOSITIVE.match(p) else
             (not stated(i), not figure or bool(numbers(p)), len(held[i] & common),
              len(held[i] - common))
             for i, p in enumerate(parts)]
    return [parts[score.index(max(score))]]
