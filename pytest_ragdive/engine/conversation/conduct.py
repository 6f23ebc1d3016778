"""How one dialogue is held: the settings :func:`.dialogue.arun_dialogue` checked, as one
value the steps of the dialogue share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...llm.client import LLMClient
from ..base.judges import Judges

#: ``progress(document_id, turn, stage)`` is called as a dialogue advances; stage is
#: one of "generate", "validate", "answer", "evaluate", "done".
Progress = Callable[[str, int, str], None]


@dataclass(frozen=True)
class Conduct:
    """What a dialogue is held with: its models and client, its length, how its turns are
    validated (``model_checks``: the validator model's checks, each with the P(yes) it
    needs), the generator's seed, the adapter's time, the metrics to score, a real user's
    first message (``opener``), whether a document that runs out of facts ends it
    (``hold_short``), and whom to tell how it advances."""

    judges: Judges
    client: LLMClient
    turns: int
    max_regenerations: int
    validation: str
    model_checks: Mapping[str, float]
    seed: int
    adapter_timeout: float
    metrics: tuple[str, ...]
    opener: str | None
    hold_short: bool
    progress: Progress
