"""A document with no fact left to ask about (one of one sentence, after turn 1): the
generator can only ask again what a turn asked, the validator rejects it every time, and the
failure says why and what to change, instead of feedback no attempt can follow; or, where
the dialogue may hold what the document can (``arun_dialogue(hold_short=True)``), it ends
there."""

from __future__ import annotations

from collections.abc import Sequence

from ..base.models import Document, DocumentGroup, Turn
from .facts import facts, used_facts

#: why a dialogue held fewer turns than asked (``Dialogue.ended_early``)
RAN_OUT = "its document ran out of facts"


def unasked(document: Document, history: Sequence[Turn]) -> list[str]:
    """The facts of ``document`` that no turn of ``history`` asked about, counted as
    :func:`~.facts.next_fact` counts them."""
    every = facts(document) or [document.text.strip()]
    used = used_facts(every, history, document)
    return [f for f in every if not any(f in s or s in f for s in used)]


def nothing_left(group: DocumentGroup, history: Sequence[Turn]) -> str:
    """What a failed follow-up's error adds when every fact of the group's documents was
    asked before it; "" while any is left."""
    if not history or any(unasked(d, history) for d in group.documents):
        return ""
    documents = group.documents
    names = " and ".join(repr(d.id) for d in documents)
    count = sum(len(facts(d) or [d.text]) for d in documents)
    asked = "the only fact" if count == 1 else f"all {count} facts"
    them = "it" if len(documents) == 1 else "them"
    return (f". Nothing of {names} is left to ask about: the turns before turn "
            f"{len(history) + 1} asked {asked} (a fact: a sentence or clause of four words or "
            f"more); give {them} more text, or ask fewer turns")
