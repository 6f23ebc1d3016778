"""Stage 2, the Conversation Validator: a judge accepts or rejects each generated turn."""

from __future__ import annotations

from pydantic import BaseModel

from .generator import history_view
from .llm import LLMClient, Model, ReplyError
from .models import Document, GeneratedTurn, RejectionCategory, Turn, Verdict
from .templates import render


class ValidatorReply(BaseModel):
    """The validator's JSON: the rules it found broken come before its decision."""

    categories: list[RejectionCategory]
    feedback: str
    valid: bool


async def validate_turn(
    client: LLMClient,
    model: Model,
    *,
    document: Document,
    history: list[Turn],
    candidate: GeneratedTurn,
) -> Verdict:
    """The verdict on ``candidate``. A reply that cannot be parsed is a rejection."""
    prompt = render(
        "validator",
        document=document.text,
        history=history_view(history),
        index=len(history) + 1,
        candidate=candidate,
    )
    try:
        reply = await client.structured(
            model, [{"role": "user", "content": prompt}], ValidatorReply
        )
    except ReplyError as exc:
        return Verdict(valid=False, feedback=f"the validator's reply could not be read: {exc}")
    if reply.valid:
        return Verdict(valid=True)
    return Verdict(valid=False, categories=reply.categories, feedback=reply.feedback)
