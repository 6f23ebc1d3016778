"""One turn of a dialogue, generated and validated: a rejected attempt is generated again
with the validator's feedback, up to ``max_regenerations`` times."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...llm.client import LLMClient
from ...llm.errors import ReplyError
from ...llm.model import Model
from ..base.errors import DialogueError, DocumentExhausted, GenerationError
from ..base.models import Dialogue, DocumentGroup, GeneratedTurn, Rejection, Validation
from ..generation.exhausted import nothing_left
from ..generation.generator import Writer, generate_turn
from ..roles import registry
from ..text.english import is_question
from ..validation.validator import exact_verdict, judge_turn
from .conduct import Conduct

#: the one fault an attempt may have and still be used under validation "once": not leaning
#: on the conversation. A question asked before, an invented answer key or a message that is
#: no question never is.
_TOLERABLE = ["rag_input_not_connected"]


async def next_turn(
    dialogue: Dialogue,
    group: DocumentGroup,
    index: int,
    conduct: Conduct,
    report: Callable[[str], None],
) -> tuple[GeneratedTurn, list[Rejection], bool]:
    """Turn ``index`` of ``dialogue``: the accepted attempt, the rejected ones before it, and
    whether it was validated (under ``validation="once"`` only a turn's first attempt is
    checked). ``report(stage)`` is called as the turn advances; the conduct's ``opener`` is
    a real user's first message for turn 1, its ``model_checks`` the validator model's
    checks to ask, each with the P(yes) it needs (:func:`.validator.model_checks`)."""
    models = conduct.judges.models
    writer = Writer(conduct.client, models["generator"], conduct.judges.generator_temperature)
    role = registry.role(dialogue.role)
    rejections: list[Rejection] = []
    feedback = ""
    judged = False  # under "once", the validator model judges one attempt per turn
    fallback: GeneratedTurn | None = None  # the latest attempt with only a tolerable fault
    for attempt in range(conduct.max_regenerations + 1):
        report("generate")
        candidate = await generate_turn(
            writer, group=group, role=role, history=dialogue.turns, feedback=feedback,
            seed=conduct.seed + attempt, opener=conduct.opener,
        )
        report("validate")
        verdict = exact_verdict(candidate, group, dialogue.turns, role=role,
                                opener=conduct.opener is not None)
        validated = not (conduct.validation == "once" and judged)
        if verdict.valid and validated and conduct.model_checks:
            verdict = await _judged(conduct.client, models["validator"], group, dialogue,
                                    candidate, conduct.model_checks,
                                    f"turn {index}, validating attempt {attempt + 1}")
            judged = True
        if verdict.valid:
            return candidate, rejections, validated
        rejections.append(Rejection(turn=candidate, validation=verdict))
        feedback = verdict.feedback or ", ".join(verdict.categories) or "invalid turn"
        if verdict.categories == _TOLERABLE and is_question(candidate.rag_input):
            fallback = candidate
    if conduct.validation == "once" and fallback is not None:
        # the paper's set-up uses a regenerated turn unchecked; here its answer key must at
        # least be the document's
        return fallback, rejections, False
    raise _none_accepted(dialogue, group, index, conduct.max_regenerations + 1, feedback,
                         conduct.opener)


async def _judged(client: LLMClient, model: Model, group: DocumentGroup, dialogue: Dialogue,
                  candidate: GeneratedTurn, checks: Mapping[str, float], where: str) -> Validation:
    """The validator model's verdict on ``candidate``; a model that gives no yes/no answer
    ends the dialogue, naming the fix."""
    try:
        return await judge_turn(client, model, group=group, history=dialogue.turns,
                                candidate=candidate, checks=checks)
    except ReplyError as exc:
        raise DialogueError(
            f"{where}: {exc}. Use a validator model that answers yes/no questions, or "
            f"ragdive_validator_checks = exact to validate with the exact checks only") from None


def _none_accepted(dialogue: Dialogue, group: DocumentGroup, index: int, attempts: int,
                   feedback: str, opener: str | None) -> DialogueError:
    """Why turn ``index`` has no accepted attempt: a real user's opener the document does not
    answer, or a generator whose every attempt the validator rejected (:class:`DocumentExhausted`
    when no fact of the document was left to ask about)."""
    if opener is not None and index == 1:
        return DialogueError(
            f"turn 1: the opening message {opener!r} could not be answered from document "
            f"{group.id!r} ({attempts} attempts; last feedback: {feedback}); give it the "
            f"\"document\" it concerns in the openers file, or leave it out")
    left = nothing_left(group, dialogue.turns)
    return (DocumentExhausted if left else GenerationError)(
        f"turn {index}: the validator rejected all {attempts} attempts "
        f"(max_regenerations={attempts - 1}); last feedback: {feedback}{left}")
