"""What a calibration will cost, before it runs: its model calls counted from the prompts
it will send, their tokens estimated, and the price litellm knows for the model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..engine.base.models import Document, DocumentGroup
from ..engine.base.tokens import (
    CHARS_PER_TOKEN,
    GENERATOR_PROMPT,
    GENERATOR_REPLY,
    RAGAS_PROMPT,
    RAGAS_REPLY,
)
from ..engine.evaluation.binary import exact_yes, judge_prompts
from ..engine.validation import validator
from ..llm.library import import_litellm
from ..llm.model import Model
from .cases import Case, documents


@dataclass(frozen=True)
class Estimate:
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float | None  # dollars; None when litellm knows no price for the model

    def describe(self) -> str:
        cost = (f"${self.cost:.4f}" if self.cost is not None
                else "no price known to litellm for this model")
        return (f"{self.calls} model calls, about {self.prompt_tokens:,} prompt and "
                f"{self.completion_tokens:,} completion tokens, {cost} (before the cache: a "
                f"call recorded there is replayed for nothing)")


def _calls(case: Case) -> list[str]:
    """The prompts of one case's model calls (ragas' stand as one placeholder each)."""
    turn, earlier = case.turns()
    if case.judgement.startswith("validator."):
        source = DocumentGroup.of(Document(id=case.group or "source", text=case.source or ""))
        return [validator.check_prompt(case.judgement.removeprefix("validator."),
                                       turn.generated, source, earlier)]
    if case.judgement == "faithfulness":  # statements, then a verdict on them
        return ["", ""]
    if case.judgement == "context_precision":  # one call per context
        return [""] * len(case.contexts)
    if case.judgement == "context_recall":
        return [""]
    exact = exact_yes(case.judgement)
    if exact is not None and exact[0](turn):
        return []
    return judge_prompts(case.judgement, turn, earlier, case.subject)


def estimate(model: Model, cases: Sequence[Case], follow_ups: Sequence[Case] = ()
             ) -> Estimate:
    """The calls, tokens and price of calibrating ``model`` on ``cases`` (and its follow-up
    messages on ``follow_ups``' conversations), as if nothing were in the cache."""
    calls = prompt = completion = 0
    for case in cases:
        for text in _calls(case):
            calls += 1
            prompt += len(text) // CHARS_PER_TOKEN if text else RAGAS_PROMPT
            completion += 1 if text else RAGAS_REPLY
    sources = documents("documents") if follow_ups else {}
    for case in follow_ups:
        said = len(sources[case.group].text) + sum(len(h.user) + len(h.assistant)
                                                   for h in case.history)
        calls += 1
        prompt += GENERATOR_PROMPT + said // CHARS_PER_TOKEN
        completion += GENERATOR_REPLY
    return Estimate(calls, prompt, completion, price(model, prompt, completion))


def price(model: Model, prompt_tokens: int, completion_tokens: int) -> float | None:
    """The price litellm knows for these tokens of ``model``; None when it knows none."""
    litellm = import_litellm()
    try:
        costs = litellm.cost_per_token(model=model.name, prompt_tokens=prompt_tokens,
                                       completion_tokens=completion_tokens)
    except Exception:  # noqa: BLE001  (litellm raises several kinds for a model it has no price of)
        return None
    return float(sum(costs))
