"""Which fact of the document a follow-up asks about.

Left to choose, a small generator asks the same thing again and again (the example's
tram-network dialogue asked its first question three times). So the plugin chooses: a
sentence of the document that no turn used yet, drawn by seed among those that share a
word with the last turn (so that the follow-up can lean on it), else among all unused ones.
Of one document loaded with others, it first keeps the unused facts of a kind not asked yet
(:mod:`.kinds`: an operator, a start date, fares ...), whose follow-up names nothing ("Who
runs it?"); without one, those about the subject that the other documents of its knowledge
base state most alike (:func:`shared_kinds`, :func:`look_alikes`): their follow-ups need the
conversation to say which service, product or place they are about.

In a conversation about a group of documents (:mod:`.groups`) the plugin also chooses the
document: a follow-up asks about a document no turn asked about yet while there is one
(the user moves on, "and does the ferry take bikes too?"); after that, drawn by seed, it
is a ``cross_document`` turn with probability ``CROSS_SHARE`` (one fact of the last turn's
document and one of another, the second sharing a word with the first where one does), else
about any document of the group. A premise (role ``mistaken``) states one fact, and the
readings of a vague question (role ``vague``, :mod:`.vague`) are facts of one document,
so those roles have no cross-document turns.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from ..base.models import Document, DocumentGroup, GeneratedTurn, Turn
from ..text.answer_keys import subject_of
from ..text.english import content_words, singular, supporting_sentences, word_weights, words
from .kinds import unasked_kind

_CLAUSE = re.compile(r"(?<=[.!?])\s+|;\s+")
_LOWER = re.compile(r"(?<![\w'-])[a-z][a-z'-]*")
_NAME = re.compile(r"(?<![\w'-])[A-Z][\w'-]*")
#: the most facts :func:`facts` gives of one document (about 20 KB of text): a sample of a
#: longer one
MOST_FACTS = 200
#: the chance that a follow-up in a group, once every document was asked about, uses two
CROSS_SHARE = 0.5


def facts(document: Document) -> list[str]:
    """The document's sentences and semicolon clauses of at least four words, headings
    left out. Of a document with more than :data:`MOST_FACTS` (a long manual, an export),
    its distinct ones sampled from the whole, every k-th in order, the same in every run:
    a dialogue asks about a handful, and choosing one compares facts with each other
    (:func:`next_fact`, :mod:`.vague`), at a cost that grew with the square of the
    document's length."""
    return list(_facts(document.text))


@functools.lru_cache(maxsize=64)
def _facts(text: str) -> tuple[str, ...]:
    """:func:`facts` of a document's text, kept: it is asked at every attempt of a turn."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    every = [c.strip() for c in _CLAUSE.split(" ".join(lines)) if len(words(c)) >= 4]
    if len(every) <= MOST_FACTS:
        return tuple(every)
    distinct = list(dict.fromkeys(every))  # boilerplate, table rows: once each
    step = max(len(distinct) / MOST_FACTS, 1.0)
    return tuple(distinct[int(i * step)] for i in range(min(MOST_FACTS, len(distinct))))


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
    (:mod:`.vague`)."""
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
    # by the pool, which may hold a sentence twice (boilerplate), not by the distinct ones
    cut = sorted(scores[f] for f in pool)[(len(pool) - 1) // 2]
    return [f for f in pool if scores[f] <= cut]


def shared_kinds(pool: list[str], document: Document) -> list[str]:
    """The facts of ``pool`` about the document's subject, of a kind another document
    states too: what comes before the fact's verb names nothing but the subject ("It is
    operated by ...", not "The Tern carries ..."), and another document holds at least half
    of its words, names, figures and the subject's words left out ("The scheme is operated
    by the company Pedalwerk" among services that each name an operator, not "Every station
    has a solar panel"). Asked with the subject put as "it", such a question can be
    answered only by a bot that knows which one the conversation is about."""
    if not document.others:
        return pool
    subject = _kind_words(document.subject or "")
    others = [_kind_words(text) for text in document.others]
    own_names = {w.lower() for w in _NAME.findall(document.subject or "")}

    def shared(fact: str) -> bool:
        named = {w.lower() for w in _NAME.findall(subject_of(fact)[1:])} - own_names
        own = _kind_words(fact, subject)
        return (not named and bool(own)
                and any(2 * len(own & theirs) >= len(own) for theirs in others))

    return [f for f in pool if shared(f)]


def next_fact(document: Document, history: Sequence[Turn], seed: int,
              eligible: Callable[[str], object] | None = None, about: str | None = None,
              alike: bool = False) -> str:
    """The fact the next turn asks about (see the module); with ``eligible``, one it
    accepts where the document has any (one that holds a figure, for a false premise,
    :mod:`.mistaken`; one with readings, :mod:`.vague`); with ``about``, one related to
    that text instead of to the last turn; with ``alike``, one of a kind not asked yet, else
    one of :func:`look_alikes`."""
    every = facts(document) or [document.text.strip()]
    if eligible is not None:
        every = [f for f in every if eligible(f)] or every
    used = used_facts(every, history, document)
    pool = [f for f in every if not any(f in s or s in f for s in used)] or every
    draw = random.Random(f"{document.id}|{seed}|{len(history)}")
    if not history:
        return draw.choice(pool)
    if alike and document.others:
        asked = [t.generated.rag_input for t in history]
        pool = ([f for f in pool if unasked_kind(f, asked)]
                or look_alikes(shared_kinds(pool, document) or pool, document))
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
