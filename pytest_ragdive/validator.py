"""Stage 2, the Conversation Validator: a judge accepts or rejects each generated turn."""

from __future__ import annotations

from pydantic import BaseModel

from .generator import history_view
from .llm import LLMClient, Model, ReplyError
from .models import Document, GeneratedTurn, RejectionCategory, Turn, Verdict
from .templates import render


class Checklist(BaseModel):
    """The validator's JSON: one yes/no per rule, then what to fix.

    A checklist of separate decisions is answered far more reliably than a list of
    broken rules to pick from (small models copy the whole list); the rejection
    categories follow from the failed checks.
    """

    refers_back: bool
    standalone: bool
    same_meaning: bool
    answer_supported: bool
    type_fits: bool
    reads_naturally: bool
    feedback: str


#: check -> the paper's rejection class when it fails, and whether turn 1 has it
CHECKS: dict[str, tuple[RejectionCategory, bool]] = {
    "refers_back": ("rag_input_not_connected", False),
    "standalone": ("not_standalone", False),
    "same_meaning": ("question_not_consistent", False),
    "answer_supported": ("ground_truth", True),
    "type_fits": ("type", False),
    "reads_naturally": ("document_mentioned", True),
}


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
        reply = await client.structured(model, [{"role": "user", "content": prompt}], Checklist)
    except ReplyError as exc:
        return Verdict(valid=False, feedback=f"the validator's reply could not be read: {exc}")
    failed = [
        category
        for check, (category, on_first_turn) in CHECKS.items()
        if (history or on_first_turn) and not getattr(reply, check)
    ]
    if not failed:
        return Verdict(valid=True)
    return Verdict(valid=False, categories=failed, feedback=reply.feedback)
