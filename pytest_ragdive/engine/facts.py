"""Which fact of the document a follow-up asks about.

Left to choose, a small generator asks the same thing again and again (the example's
tram-network dialogue asked its first question three times). So the plugin chooses: a
sentence of the document that no turn used yet, drawn by seed among those that share a
word with the last turn (so that the follow-up can lean on it), else among all unused ones.
Of one document, it first keeps the unused facts that the other documents of its knowledge
base state most alike (:func:`look_alikes`): their follow-ups need the conversation to say
which service, product or place they are about.

In a conversation about a group of documents (:mod:`.groups`) the plugin also chooses the
document: a follow-up asks about a document no turn asked about yet while there is one
(the user moves on, "and does the ferry take bikes too?"); after that, drawn by seed, it
is a ``cross_document`` turn with probability ``CROSS_SHARE`` (one fact of the last turn's
document and one of another, the second sharing a word with the first where one does), else
about any document of the group. A premise (role ``mistaken``) states one fact, and the
readings of a vague question (role ``vague``, :mod:`.readings`) are facts of one document,
so those roles have no cross-document turns.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from .checks import (
    content_words,
    numbers,
    singular,
    stem,
    supporting_sentences,
    word_weights,
    words,
)
from .models import Document, DocumentGroup, GeneratedTurn, Turn

_CLAUSE = re.compile(r"(?<=[.!?])\s+|;\s+")
#: a verb that may begin a part of an answer key that leaves out its subject
_VERB = r"(?:is|are|was|were|has|have|had|can|costs?|takes?|runs?|opens?|closes?|[a-z]+ed)\b"
#: where an answer key's parts meet: a sentence's end, a semicolon, a colon, a comma (with
#: "and" after it), or an "and" before a phrase with a figure ("... 350 g water and 10 g
#: salt") or before a verb ("... and is valid for 90 minutes"), and before a condition
#: ("... by Pedalwerk until the end of 2028"); the joint is kept
_KEY_PART = re.compile(r"((?<=[.!?])\s+(?=[A-Z])|;\s+|:\s+|,\s+(?:and\s+)?"
                       rf"|\s+and\s+(?=(?:a |an |the )?[\w.,-]*\d|{_VERB})"
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
#: the chance that a follow-up in a group, once every document was asked about, uses two
CROSS_SHARE = 0.5


def facts(document: Document) -> list[str]:
    """The document's sentences and semicolon clauses of at least four words, headings
    left out."""
    lines = [line for line in document.text.splitlines() if not line.lstrip().startswith("#")]
    return [c.strip() for c in _CLAUSE.split(" ".join(lines)) if len(words(c)) >= 4]


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
    """How many of the ``question``'s words (stems, :func:`.checks.stem`) ``part`` holds."""
    return len(question & {stem(w) for w in content_words(part)})


def _subject(part: str) -> str:
    """What ``part`` is about: its words before its first verb ("A single ticket costs ..."
    -> "A single ticket")."""
    verb = re.search(rf"\b{_VERB}", part)
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
    read = [f"{_subject(parts[i - 1])} {p}" if i and re.match(_VERB, p) else p
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


def quotes(turn: GeneratedTurn) -> list[str]:
    """The sentences a turn's evidence quotes: one, or one per document of a
    cross_document turn."""
    return turn.evidence.split("\n") if "+" in turn.source else [turn.evidence]


def quoted_from(turn: GeneratedTurn, document: Document) -> list[str]:
    """What a turn's evidence quotes of ``document``: all of it about one document."""
    if not turn.source:
        return [turn.evidence]
    return [q for name, q in zip(turn.source.split("+"), quotes(turn)) if name == document.id]


def used_facts(every: Sequence[str], history: Sequence[Turn], document: Document) -> set[str]:
    """The sentences of ``every`` (facts of ``document``) that earlier turns asked about:
    those their evidence quotes of it, and the readings of a vague turn about it
    (:mod:`.readings`)."""
    return {s for t in history
            for s in [*(q for quote in quoted_from(t.generated, document)
                        for q in supporting_sentences(quote, " ".join(every))),
                      *(t.generated.readings if t.generated.source in ("", document.id)
                        else [])]}


def _kind_words(text: str, leave_out: AbstractSet[str] = frozenset()) -> set[str]:
    lower = " ".join(_LOWER.findall(text))  # a name or a figure is what a question asks for
    return {singular(w) for w in content_words(lower)} - leave_out


def look_alikes(pool: list[str], document: Document) -> list[str]:
    """The half of ``pool`` whose facts the knowledge base's other documents state most
    alike: by the mean weight of a fact's words (names, figures and its subject's words
    left out), a word weighing log(documents / documents that hold it). "It is operated by
    the company Riverline" has its like in every service's document, "The Old Quay landing
    stage has a lift" in none. A question about such a fact, its subject put as "it", can be
    answered only by a bot that knows which service the conversation is about."""
    if not document.others or len(pool) < 2:
        return pool
    weight = word_weights([_kind_words(text) for text in (document.text, *document.others)])
    subject = _kind_words(document.subject or "")

    def rarity(fact: str) -> float:
        own = _kind_words(fact, subject)
        # fsum: the same in every process whatever the set's order, so ties stay ties
        return math.fsum(weight[w] for w in own) / max(len(own), 1)

    scores = {f: rarity(f) for f in pool}
    cut = sorted(scores.values())[(len(pool) - 1) // 2]
    return [f for f in pool if scores[f] <= cut]


def next_fact(document: Document, history: Sequence[Turn], seed: int,
              eligible: Callable[[str], object] | None = None, about: str | None = None,
              alike: bool = False) -> str:
    """The fact the next turn asks about (see the module); with ``eligible``, one it
    accepts where the document has any (one that holds a figure, for a false premise,
    :mod:`.premises`; one with readings, :mod:`.readings`); with ``about``, one related to
    that text instead of to the last turn; with ``alike``, one of :func:`look_alikes`."""
    every = facts(document) or [document.text.strip()]
    if eligible is not None:
        every = [f for f in every if eligible(f)] or every
    used = used_facts(every, history, document)
    pool = [f for f in every if not any(f in s or s in f for s in used)] or every
    draw = random.Random(f"{document.id}|{seed}|{len(history)}")
    if not history:
        return draw.choice(pool)
    if alike:
        pool = look_alikes(pool, document)
    vocabulary = [set(content_words(f)) for f in every]
    last = history[-1]
    if about is None:
        about = (f"{last.generated.standalone_question} {last.generated.ground_truth} "
                 f"{last.answer.answer}")
    # words most sentences share (the document's own subject) relate nothing
    topic = {w for w in content_words(about)
             if sum(w in v for v in vocabulary) <= len(every) / 3}
    related = [f for f in pool if topic & set(content_words(f))]
    return draw.choice(related or pool)


@dataclass(frozen=True)
class Asked:
    """What a follow-up asks about: a fact of one document, or one of each of two (a
    cross_document turn), in the group's order."""

    sources: tuple[str, ...]
    facts: tuple[str, ...]


def next_facts(group: DocumentGroup, history: Sequence[Turn], seed: int,
               eligible: Callable[[str], object] | None = None, cross: bool = True) -> Asked:
    """The fact or facts the next follow-up asks about, and their documents (see the
    module); for a group of one, :func:`next_fact` of its document. With ``eligible``
    (:func:`next_fact`) or not ``cross``, never two documents."""
    documents = group.documents
    if len(documents) == 1:
        return Asked((documents[0].id,), (next_fact(documents[0], history, seed, eligible,
                                                    alike=eligible is None),))
    draw = random.Random(f"{group.id}|{seed}|{len(history)}|documents")
    asked = {s for t in history for s in t.generated.source.split("+")}
    fresh = [d for d in documents if d.id not in asked]
    if fresh or eligible is not None or not cross or draw.random() >= CROSS_SHARE:
        document = draw.choice(fresh or documents)
        return Asked((document.id,), (next_fact(document, history, seed, eligible),))
    last = history[-1].generated.source.split("+")
    first = group.get(last[0]) if len(last) == 1 else None
    first = first or draw.choice(documents)
    second = draw.choice([d for d in documents if d is not first])
    fact = next_fact(first, history, seed)
    chosen = {first.id: fact, second.id: next_fact(second, history, seed, about=fact)}
    pair = [d.id for d in documents if d.id in chosen]
    return Asked(tuple(pair), tuple(chosen[i] for i in pair))
