"""Which fact of the document a follow-up asks about.

Left to choose, a small generator asks the same thing again and again (the example's
tram-network dialogue asked its first question three times). So the plugin chooses: a
sentence of the document that no turn used yet, drawn by seed among those that share a
word with the last turn (so that the follow-up can lean on it), else among all unused ones.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence

from .checks import content_words, supporting_sentences, words
from .models import Document, Turn

_CLAUSE = re.compile(r"(?<=[.!?])\s+|;\s+")


def facts(document: Document) -> list[str]:
    """The document's sentences and semicolon clauses of at least four words, headings
    left out."""
    lines = [line for line in document.text.splitlines() if not line.lstrip().startswith("#")]
    return [c.strip() for c in _CLAUSE.split(" ".join(lines)) if len(words(c)) >= 4]


def used_facts(every: Sequence[str], history: Sequence[Turn]) -> set[str]:
    """The sentences of ``every`` that earlier turns asked about: those their evidence
    quotes, and the readings of a vague turn (:mod:`.readings`)."""
    return {s for t in history
            for s in [*supporting_sentences(t.generated.evidence, " ".join(every)),
                      *t.generated.readings]}


def next_fact(document: Document, history: Sequence[Turn], seed: int,
              eligible: Callable[[str], object] | None = None) -> str:
    """The fact the next turn asks about (see the module); with ``eligible``, one it
    accepts where the document has any (one that holds a figure, for a false premise,
    :mod:`.premises`; one with readings, :mod:`.readings`)."""
    every = facts(document) or [document.text.strip()]
    if eligible is not None:
        every = [f for f in every if eligible(f)] or every
    used = used_facts(every, history)
    pool = [f for f in every if not any(f in s or s in f for s in used)] or every
    draw = random.Random(f"{document.id}|{seed}|{len(history)}")
    if not history:
        return draw.choice(pool)
    vocabulary = [set(content_words(f)) for f in every]
    last = history[-1]
    # words most sentences share (the document's own subject) relate nothing
    topic = {w for w in content_words(f"{last.generated.standalone_question} "
                                      f"{last.generated.ground_truth} {last.answer.answer}")
             if sum(w in v for v in vocabulary) <= len(every) / 3}
    related = [f for f in pool if topic & set(content_words(f))]
    return draw.choice(related or pool)
