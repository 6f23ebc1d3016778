"""Stage 1, the Conversation Generator: an LLM playing a user writes the next turn.

Each turn asks about one fact of the document that no turn has asked about yet, chosen
by seed among those that share a word with the last turn: a small model left to choose
asks the same thing again and again, and a fact given is an answer key the document states. The model writes the question, its stand-alone form and the answer; a
follow-up that the model wrote out in full is put as a user types it, with "it" for the
subject it names (``checks.pronoun_form``).
"""

from __future__ import annotations

import random
import re
from typing import Literal

from pydantic import BaseModel

from ..llm.client import LLMClient, Model
from . import checks
from .models import Document, GeneratedTurn, Turn
from .templates import history_view, render, role_description

_PARAGRAPH = re.compile(r"\n\s*\n")
_CLAUSE = re.compile(r"(?<=[.!?])\s+|;\s+")


class FirstQuestion(BaseModel):
    """What the generator writes for turn 1: no context yet, so nothing to rewrite. The
    answer comes first, from the fact: a question written after it is the fact's."""

    ground_truth: str
    question: str


class NextQuestion(BaseModel):
    """What the generator writes for later turns, in the order a small model can write
    them: the fact's answer (a question written first drifts back to the conversation's
    earlier questions), the self-contained question, its subject, the short follow-up."""

    ground_truth: str
    standalone_question: str
    subject: str
    rag_input: str
    question_type: Literal["follow_up", "clarification", "correction", "comparative"]


def facts(document: Document) -> list[list[str]]:
    """The document's facts by paragraph: its sentences and semicolon clauses of at least
    three words, headings left out."""
    out = []
    for paragraph in _PARAGRAPH.split(document.text):
        lines = [line for line in paragraph.splitlines() if not line.lstrip().startswith("#")]
        found = [c.strip() for c in _CLAUSE.split(" ".join(lines))
                 if len(checks.words(c)) >= 3]
        if found:
            out.append(found)
    return out


def next_fact(document: Document, history: list[Turn], seed: int, attempt: int) -> str:
    """The fact the next turn asks about: one no turn used, drawn by ``seed`` (and
    ``attempt``, so a retry may take another) among those that share a word with the
    last turn (words most facts share, the document's own subject, left out), else among
    those of the last turn's paragraph."""
    paragraphs = facts(document) or [[document.text.strip()]]
    every = [f for p in paragraphs for f in p]
    used = {t.generated.evidence for t in history}
    pool = [f for f in every if f not in used] or every
    draw = random.Random(f"{document.id}|{seed}|{len(history)}|{attempt}")
    if not history:
        return draw.choice(pool)
    last = history[-1].generated
    words = {f: set(checks.content_words(f)) for f in every}
    topic = {w for w in checks.content_words(f"{last.standalone_question} {last.ground_truth}")
             if sum(w in ws for ws in words.values()) <= len(every) / 2}
    related = [f for f in pool if topic & words[f]]
    if related:
        return draw.choice(related)
    near = [f for p in paragraphs if last.evidence in p for f in p if f in pool]
    return draw.choice(near or pool)


async def generate_turn(
    client: LLMClient,
    model: Model,
    *,
    document: Document,
    role: str,
    history: list[Turn],
    feedback: str = "",
    temperature: float,
    seed: int,
    attempt: int = 0,
) -> GeneratedTurn:
    """The next turn about ``document`` given the accepted ``history``.

    ``feedback`` is the validator's reason for rejecting the previous attempt at this
    turn; the rejected attempt itself is not shown, which keeps prompts short.
    """
    fact = next_fact(document, history, seed, attempt)
    prompt = render(
        "generator",
        role=role_description(role),
        document=document.text,
        history=history_view(history),
        index=len(history) + 1,
        fact=fact,
        feedback=feedback,
    )
    messages = [{"role": "user", "content": prompt}]
    if not history:
        first = await client.structured(
            model, messages, FirstQuestion, temperature=temperature, seed=seed + attempt
        )
        return GeneratedTurn(rag_input=first.question, standalone_question=first.question,
                             ground_truth=first.ground_truth, question_type="initial",
                             evidence=fact)
    nxt = await client.structured(model, messages, NextQuestion, temperature=temperature,
                                  seed=seed + attempt)
    return GeneratedTurn(rag_input=_as_typed(nxt, history), standalone_question=nxt.standalone_question,
                         ground_truth=nxt.ground_truth, question_type=nxt.question_type,
                         evidence=fact)


def _as_typed(turn: NextQuestion, history: list[Turn]) -> str:
    """The model's rag_input when it is a follow-up as users type them; else its
    stand-alone question with "it" for the subject, when that is one."""
    if checks.follow_up_fault(turn.rag_input, turn.standalone_question, history) is None:
        return turn.rag_input
    typed = checks.pronoun_form(turn.standalone_question, turn.subject)
    if typed is None or checks.follow_up_fault(typed, turn.standalone_question, history):
        return turn.rag_input
    return typed
