"""Exact checks of a generated turn, run before any model judges it.

Each check returns None when the turn passes, else the reason, phrased as feedback the
generator can act on. They are cheap and they do not guess: a follow-up that asks again what
was asked, quotes evidence that is not in the document, or names "the document" is rejected
whatever a model would say (whether it leans on the conversation: :mod:`.conversation`). The words they read are
English only (:mod:`..text.english`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..base.models import GeneratedTurn
from ..text.english import (
    STOPWORDS,
    normalized,
    numbers,
    overlap,
    same_word,
    supporting_sentences,
    words,
)

MENTIONS_SOURCE = re.compile(
    r"\b(the|this|your|that) (source|text|document|passage|article|context)\b", re.IGNORECASE
)


def repeated_question(candidate: GeneratedTurn, earlier: Sequence[GeneratedTurn]) -> str | None:
    """None unless the candidate asks again what an earlier turn asked."""
    for index, turn in enumerate(earlier, 1):
        same_text = normalized(candidate.rag_input) == normalized(turn.rag_input)
        if same_text or overlap(candidate.standalone_question, turn.standalone_question) >= 0.75:
            # the earlier question is not quoted: a small model copies what it is shown
            return f"it asks again what turn {index} asked; ask about the fact you are given"
    return None


def asks_its_fact(candidate: GeneratedTurn, earlier: Sequence[GeneratedTurn],
                  said: Sequence[str]) -> str | None:
    """None when the stand-alone question asks about the turn's fact: it has a word (or a
    number) of the fact that the conversation has not said. A small model given a fact and
    a conversation often asks about the conversation again, with the fact as the answer key
    ("Where is the terminal?" keyed "The terminal also contains a cafe"). A fact an earlier
    turn asked about (a short document's facts run out) is left to the repeat check."""
    if any(turn.evidence == candidate.evidence for turn in earlier):
        return None
    spoken = {w for text in said for w in words(text)}
    new = [w for w in words(candidate.evidence)
           if w not in STOPWORDS and not any(same_word(w, s) for s in spoken)]
    asked = [w for w in words(candidate.standalone_question) if w not in STOPWORDS]
    if not new or any(same_word(w, n) for w in asked for n in new):
        return None
    return ("standalone_question asks nothing that the fact states and the conversation has "
            "not said; ask about the fact you are given")


def unsupported_key(candidate: GeneratedTurn, document: str) -> str | None:
    """None when the quoted evidence matches a sentence of the document that holds every
    number of the answer key; else what to fix."""
    if not candidate.evidence.strip():
        return "evidence is empty; copy the sentence of the source text that states the answer"
    sentences = supporting_sentences(candidate.evidence, document)
    if not sentences:
        return ("evidence is not copied from the source text; copy the sentence that states "
                "the answer as it is written")
    stated = numbers(candidate.ground_truth)
    if any(all(n in numbers(s) for n in stated) for s in sentences):
        return None
    missing = sorted({n for n in stated if not any(n in numbers(s) for s in sentences)})
    return (f"ground_truth states {', '.join(missing or stated)}, which the quoted sentence of "
            f"the source text does not; take the answer only from that sentence")


def mentions_source(candidate: GeneratedTurn) -> str | None:
    text = f"{candidate.rag_input} {candidate.standalone_question} {candidate.ground_truth}"
    match = MENTIONS_SOURCE.search(text)
    if match:
        return f'it mentions "{match.group(0)}"; a real user has not seen any document'
    return None
