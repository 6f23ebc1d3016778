"""Stage 1, the Conversation Generator: an LLM playing a user writes the next turn."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ..llm.client import LLMClient
from ..llm.model import Model
from .models import Document, GeneratedTurn, Turn
from .templates import history_view, render, role_description


class FirstQuestion(BaseModel):
    """What the generator writes for turn 1: no context yet, so nothing to rewrite."""

    question: str
    evidence: str
    ground_truth: str


class NextQuestion(BaseModel):
    """What the generator writes for later turns. The self-contained question comes
    first and the short follow-up form second: writing the full question and then
    shortening it is what keeps small models from repeating the subject. The evidence
    (a sentence copied from the document) comes before the answer key it supports."""

    standalone_question: str
    rag_input: str
    evidence: str
    ground_truth: str
    question_type: Literal["follow_up", "clarification", "correction", "comparative"]


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
) -> GeneratedTurn:
    """The next turn about ``document`` given the accepted ``history``.

    ``feedback`` is the validator's reason for rejecting the previous attempt at this
    turn; the rejected attempt itself is not shown, which keeps prompts short.
    """
    prompt = render(
        "generator",
        role=role_description(role),
        document=document.text,
        history=history_view(history),
        index=len(history) + 1,
        feedback=feedback,
    )
    messages = [{"role": "user", "content": prompt}]
    if not history:
        first = await client.structured(
            model, messages, FirstQuestion, temperature=temperature, seed=seed
        )
        return GeneratedTurn(
            rag_input=first.question,
            standalone_question=first.question,
            ground_truth=first.ground_truth,
            question_type="initial",
            evidence=first.evidence,
        )
    nxt = await client.structured(model, messages, NextQuestion, temperature=temperature, seed=seed)
    return GeneratedTurn(**nxt.model_dump())
