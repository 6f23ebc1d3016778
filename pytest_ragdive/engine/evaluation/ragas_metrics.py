"""ragas 0.4.3's faithfulness, context precision and context recall, with their model
calls through the package's :class:`~pytest_ragdive.llm.client.LLMClient` and cache."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from ...llm.client import LLMClient
from ...llm.library import freeze_imports, import_litellm
from ...llm.model import Model
from ...llm.stand_in import mark_failed_attempts, stand_in
from ..base.models import Judgement, Turn

RAGAS_METRICS = ("faithfulness", "context_precision", "context_recall")
#: how a bot gets them scored that returned no contexts ({} names them)
CONTEXTS_FIX = ("return the retrieved texts in RagAnswer(contexts=[...]) to score {} "
                "(docs/adapters.md)")

#: ragas' outputs that hold one entry per statement of an input that is never empty (the
#: answer key), with the list that must not be empty. Allowed an empty list, the embedded
#: model gave one for 7 of the example's 27 baseline turns, which left them unscored.
NON_EMPTY = {"ContextRecallOutput": "classifications"}


def non_empty(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with ``minItems: 1`` on the list of a :data:`NON_EMPTY` output's schema."""
    spec = (request.get("response_format") or {}).get("json_schema") or {}
    field = NON_EMPTY.get(str(spec.get("name")))
    properties = (spec.get("schema") or {}).get("properties") or {}
    if field not in properties:
        return request
    schema = {**spec["schema"],
              "properties": {**properties, field: {**properties[field], "minItems": 1}}}
    return {**request, "response_format": {**request["response_format"],
                                           "json_schema": {**spec, "schema": schema}}}


class RagasMetrics:
    """ragas' metric objects over an LLM whose calls go through our client."""

    def __init__(self, client: LLMClient, model: Model) -> None:
        import_litellm()
        import instructor
        from ragas.llms import llm_factory
        from ragas.metrics.collections import ContextPrecision, ContextRecall, Faithfulness

        freeze_imports("ragas")
        self.client = client

        # JSON_SCHEMA: instructor sends ragas' messages as they are and the schema as data
        # (response_format json_schema; at instructor 1.3.7 json_object with a schema), never
        # to be read back from a prompt; stand_in writes it into the prompt too, in this
        # package's words, and the client sends it in the model's mode (structured.py)
        instructed = instructor.from_litellm(stand_in(client, model, non_empty),
                                             mode=instructor.Mode.JSON_SCHEMA)
        llm = llm_factory(
            model.name,
            provider="litellm",
            adapter="litellm",
            client=instructed,
            temperature=0.0,
            seed=0,
        )
        self.metrics = {
            "faithfulness": Faithfulness(llm=llm),
            "context_precision": ContextPrecision(llm=llm),
            "context_recall": ContextRecall(llm=llm),
        }

    def job(self, metric: str, turn: Turn) -> Callable[[], Awaitable[Judgement]]:
        question = turn.generated.standalone_question
        contexts = turn.answer.contexts
        if metric == "faithfulness":
            kwargs: dict[str, Any] = {"user_input": question, "response": turn.answer.answer,
                                      "retrieved_contexts": contexts}
        else:
            kwargs = {"user_input": question, "reference": turn.generated.ground_truth,
                      "retrieved_contexts": contexts}

        async def job() -> Judgement:
            if not contexts:
                return Judgement(reason="not scored: the RAG returned no contexts", by_bot=True)
            try:
                result = await self.metrics[metric].ascore(**kwargs)
            except Exception as exc:
                mark_failed_attempts(self.client, exc)  # asked again on the next run
                raise
            value = result.value
            if value is None or not math.isfinite(float(value)):
                return Judgement(reason=f"not scored: ragas found nothing to judge ({metric})")
            return Judgement(score=min(1.0, max(0.0, float(value))), reason=result.reason or "")

        return job
