"""The exact checks of a turn about a group of documents: its evidence is in the document it
names, and a cross_document turn's answer key uses both of its facts.

A turn names the document its evidence is quoted from (``GeneratedTurn.source``: the
generator names it for turn 1, the plugin for a follow-up, whose fact it chooses). The
answer key is what ragas' context recall takes as its reference, so these checks are what
tie the reference to the right document.
"""

from __future__ import annotations

from ..base.models import Document, DocumentGroup, GeneratedTurn
from ..generation.facts import quotes
from ..text.english import content_words, numbers
from .checks import supporting_sentences, unsupported_key


def named(candidate: GeneratedTurn, group: DocumentGroup) -> list[Document]:
    """The documents a turn names, in its order; none when it names one the group lacks."""
    found = [group.get(i) for i in candidate.source.split("+")]
    return [d for d in found if d is not None] if all(found) else []


def documents_of(candidate: GeneratedTurn, group: DocumentGroup) -> list[Document]:
    """The documents a turn's evidence is from: those it names, else the whole group."""
    return (named(candidate, group) if len(group.documents) > 1 else []) or group.documents


def evidence_check(candidate: GeneratedTurn, group: DocumentGroup) -> str | None:
    """The exact check of a turn's evidence: for a group of one, that it is a sentence of the
    document holding every figure of the answer key (:func:`.checks.unsupported_key`); for
    a group, :func:`source_check`."""
    if len(group.documents) == 1:
        return unsupported_key(candidate, group.documents[0].text)
    return source_check(candidate, group)


def source_check(candidate: GeneratedTurn, group: DocumentGroup) -> str | None:
    """None when the turn names documents of the group and its evidence is copied from
    them (one sentence of each for a cross_document turn), holding every figure of the
    answer key; else what to fix."""
    documents = named(candidate, group)
    if not documents:
        choices = " or ".join(f'"{d.id}"' for d in group.documents)
        return (f"source {candidate.source!r} is none of the source texts; name the one the "
                f"evidence is copied from: {choices}")
    parts = quotes(candidate)
    if len(documents) == 1:
        reason = unsupported_key(candidate, documents[0].text)
        if reason is None or supporting_sentences(candidate.evidence, documents[0].text):
            return reason
        elsewhere = [d.id for d in group.documents
                     if supporting_sentences(candidate.evidence, d.text)]
        if elsewhere:
            return (f'the evidence is copied from "{elsewhere[0]}", not from '
                    f'"{documents[0].id}" that source names; name the source text the '
                    f"evidence is copied from")
        return reason
    if len(parts) != len(documents):
        return (f"the evidence quotes {len(parts)} sentences for {len(documents)} source "
                f"texts; quote one sentence of each, a line each")
    found: list[str] = []
    for document, part in zip(documents, parts):
        sentences = supporting_sentences(part, document.text)
        if not sentences:
            return (f'the evidence {part!r} is not copied from "{document.id}"; copy its '
                    f"sentence as it is written")
        found += sentences
    missing = sorted({n for n in numbers(candidate.ground_truth)
                      if not any(n in numbers(s) for s in found)})
    if missing:
        return (f"ground_truth states {', '.join(missing)}, which neither fact states; take the "
                f"answer only from the two facts")
    return None


def uses_both(candidate: GeneratedTurn) -> str | None:
    """None unless a cross_document turn's answer key leaves out one of its facts: it must
    state something of each (a figure, or a word by its first five letters) that the other
    fact does not."""
    names, parts = candidate.source.split("+"), quotes(candidate)
    key = _marks(candidate.ground_truth)
    for index, (name, part) in enumerate(zip(names, parts)):
        own = _marks(part).difference(*(_marks(p) for i, p in enumerate(parts) if i != index))
        if own and not key & own:
            return (f'ground_truth uses nothing of the fact of "{name}" ({part!r}); a '
                    f"cross-document answer states something of each fact")
    return None


def _marks(text: str) -> set[str]:
    return {w[:5] for w in content_words(text)} | set(numbers(text))
