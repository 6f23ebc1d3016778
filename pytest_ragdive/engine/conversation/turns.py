"""One turn of a dialogue, generated and validated: a rejected attempt is generated again
with the validator's feedback, up to ``max_regenerations`` times."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...llm.client import LLMClient
from ...llm.errors import ReplyError
from ..base.errors import DialogueError, GenerationError
from ..generation.exhausted import nothing_left
from ..generation.follow_ups import is_question
from ..generation.generator import generate_turn
from ..roles import registry
from ..base.judges import Judges
from ..base.models import Dialogue, DocumentGroup, GeneratedTurn, Rejection
from ..validation.validator import exact_verdict, judge_turn

#: the one fault an attempt may have and still be used under validation "once": not leaning
#: on the conversation. A question asked before, an invented answer key or a message that is
#: no question never is.
_TOLERABLE = ["rag_input_not_connected"]


async def next_turn(
    dialogue: Dialogue,
    group: DocumentGroup,
    index: int,
    *,
    judges: Judges,
    client: LLMClient,
    max_regenerations: int,
    validation: str,
    model_checks: Mapping[str, float],
    seed: int,
    report: Callable[[str], None],
    opener: str | None = None,
) -> tuple[GeneratedTurn, list[Rejection], bool]:
    """Turn ``index`` of ``dialogue``: the accepted attempt, the rejected ones before it, and
    whether it was validated (under ``validation="once"`` only a turn's first attempt is
    checked). ``report(stage)`` is called as the turn advances; ``opener`` is a real user's
    first message for turn 1; ``model_checks`` are the validator model's checks to ask, each
    with the P(yes) it needs (:func:`.validator.model_checks`)."""
    models = judges.models
    role = registry.role(dialogue.role)
    rejections: list[Rejection] = []
    feedback = ""
    validated = True
    judged = False  # under "once", the validator model judges one attempt per turn
    fallback: GeneratedTurn | None = None  # the latest attempt with only a tolerable fault
    for attempt in range(max_regenerations + 1):
        report("generate")
        candidate = await generate_turn(
            client, models["generator"], document=group, role=role,
            history=dialogue.turns, feedback=feedback,
            temperature=judges.generator_temperature, seed=seed + attempt, opener=opener,
        )
        report("validate")
        verdict = exact_verdict(candidate, group, dialogue.turns, role=role,
                                opener=opener is not None)
        validated = not (validation == "once" and judged)
        if verdict.valid and validated and model_checks:
            try:
                verdict = await judge_turn(
                    client, models["validator"], document=group, history=dialogue.turns,
                    candidate=candidate, checks=model_checks,
                )
            except ReplyError as exc:
                raise DialogueError(
                    f"turn {index}, validating attempt {attempt + 1}: {exc}. Use a validator "
                    f"model that answers yes/no questions, or ragdive_validator_checks = "
                    f"exact to validate with the exact checks only") from None
            judged = True
        if verdict.valid:
            break
        rejections.append(Rejection(turn=candidate, verdict=verdict))
        feedback = verdict.feedback or ", ".join(verdict.categories) or "invalid turn"
        if verdict.categories == _TOLERABLE and is_question(candidate.rag_input):
            fallback = candidate
    else:
        if validation == "once" and fallback is not None:
            # the paper's set-up uses a regenerated turn unchecked; here its answer key
            # must at least be the document's
            candidate, validated = fallback, False
        elif opener is not None and index == 1:
            raise DialogueError(
                f"turn 1: the opening message {opener!r} could not be answered from document "
                f"{group.id!r} ({max_regenerations + 1} attempts; last feedback: "
                f"{feedback}); give it the \"document\" it concerns in the openers file, or "
                f"leave it out")
        else:
            raise GenerationError(
                f"turn {index}: the validator rejected all {max_regenerations + 1} attempts "
                f"(max_regenerations={max_regenerations}); last feedback: {feedback}"
                + nothing_left(group, dialogue.turns)
            )
    return candidate, rejections, validated
