"""One session's results as plain, serialisable data: what the HTML and JSON reports show.

The models hold values, never pytest objects, so that any caller can fill them (the plugin's
hooks, an xdist worker, a script reading band files) and a worker's record can travel to the
controller as JSON. ``RunRecord.merge`` joins the records of several workers.

``--ragdive-json`` writes ``record.model_dump_json(indent=2)``; ``RunRecord.model_validate_json``
reads it back, dialogues included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from ..engine.base.metrics import METRICS
from ..engine.base.models import Dialogue
from .breakdown import merge, table, weakest
from .records import (
    DIGITS,
    BandDoc,
    FunctionResult,
    ItemResult,
    Limit,
    MetricBand,
    Rule,
    Status,
)

__all__ = ["Band", "BandVerdict", "ItemRecord", "MetricRecord", "MetricVerdictRecord", "Outcome",
           "RunRecord", "TestRecord", "metric_records"]

#: How a value relates to its band. "not scored": the metric could not be computed.
BandVerdict = Literal["in band", "worse", "better", "no band", "not scored"]
Outcome = Literal["passed", "failed", "error", "skipped"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Band(_Model):
    """A metric's baseline band: the range of its recorded runs, widened by ``margin``
    on both sides when checked."""

    min: float
    max: float
    runs: list[float] = Field(default_factory=list)
    margin: float = 0.0

    @classmethod
    def from_stats(cls, stats: MetricBand, margin: float = 0.0) -> Band:
        """The band of one metric entry of a band file."""
        return cls(min=stats.min, max=stats.max, runs=list(stats.runs), margin=margin)

    def verdict(self, value: float, higher_is_better: bool) -> BandVerdict:
        """Where ``value`` falls, exactly as the plugin's band check decides it."""
        low, high = self.min - self.margin, self.max + self.margin
        if low - 1e-9 <= round(value, DIGITS) <= high + 1e-9:
            return "in band"
        return "worse" if (value < low) == higher_is_better else "better"


class MetricRecord(_Model):
    """One metric's value today against its band."""

    name: str
    higher_is_better: bool
    band: Band | None = None
    value: float | None = None
    verdict: BandVerdict

    @classmethod
    def judge(
        cls, name: str, value: float | None, band: Band | None,
        higher_is_better: bool | None = None,
    ) -> MetricRecord:
        """A record whose verdict is computed from ``value`` and ``band``. The direction
        defaults to the metric's entry in ``METRICS`` (higher is better when unknown)."""
        better_up = METRICS.get(name, True) if higher_is_better is None else higher_is_better
        verdict: BandVerdict
        if value is None:
            verdict = "not scored"
        elif band is None:
            verdict = "no band"
        else:
            verdict = band.verdict(value, better_up)
        return cls(name=name, higher_is_better=better_up, band=band, value=value, verdict=verdict)


def metric_records(
    scores: Mapping[str, float],
    band_file: BandDoc | None,
    margin: float = 0.0,
    names: Iterable[str] | None = None,
) -> list[MetricRecord]:
    """Records of ``names`` (default: every metric scored or banded) from a dialogue's (or a
    mean's) ``scores`` and a band file's content (None when there is none), in ``METRICS``
    order. A name without a score is "not scored"."""
    stats = dict(band_file.metrics) if band_file else {}
    wanted = set(names) if names is not None else set(scores) | set(stats)
    order = [m for m in METRICS if m in wanted] + sorted(wanted - set(METRICS))
    return [
        MetricRecord.judge(
            name, scores.get(name),
            Band.from_stats(stats[name], margin) if name in stats else None,
        )
        for name in order
    ]


class ItemRecord(_Model):
    """One test item: one test function on one document."""

    nodeid: str
    document_id: str
    outcome: Outcome
    message: str = Field(default="", description="Why it failed, errored or was skipped.")
    duration_s: float | None = None
    metrics: list[MetricRecord] = Field(default_factory=list)
    runs: int = Field(default=1, description="Dialogues held: baseline runs on update, else "
                      "the first run and its confirmation runs.")
    rejections: int = Field(default=0, description="Generated turns the validator sent back.")
    rejected_for: dict[str, int] = Field(
        default_factory=dict, description="Rejected attempts per fault (the paper's classes).")
    dialogue: Dialogue | None = None
    result: ItemResult | None = Field(
        default=None, description="What the plugin kept of the item to decide its test (runs, "
        "its band file's content, ...; {} when it has none): a merge of shard records decides "
        "from it.")

    @field_validator("result", mode="before")
    @classmethod
    def _none_when_empty(cls, value: Any) -> Any:
        return value or None

    @field_serializer("result")
    def _empty_when_none(self, value: ItemResult | None) -> Any:
        return value if value is not None else {}

    @property
    def failed(self) -> bool:
        return self.outcome in ("failed", "error")


class MetricVerdictRecord(_Model):
    """One metric's permutation verdict over a test's documents (``verdict.MetricVerdict``)."""

    metric: str
    verdict: Literal["worse", "not worse", "inconclusive"]
    p: float
    delta: float = Field(description="Candidate minus baseline, the mean over documents.")
    smallest_p: float = Field(description="The smallest p-value these scores can give.")
    reason: str
    tested: bool = Field(default=True, description="In Holm's family: its scores can reach "
                         "significance (Tarone's rule).")


class TestRecord(_Model):
    """A test function: its items, the mean of each metric over them against the test's
    aggregate band, and the test's verdict."""

    __test__ = False  # not a pytest test class, despite its name

    key: str = Field(description="The node id without parameters: 'path::test_name'.")
    collected: list[str] = Field(default_factory=list, description="Every item of the test "
                                 "collected, also those deselected (a shard's others).")
    rule: Rule = "band"
    status: Status | Literal[""] = Field(
        default="", description="regressed, inconclusive, passed, improved, recorded or "
        "skipped (nothing decided).")
    design: str = Field(default="", description="What the permutation verdict stood on.")
    verdicts: list[MetricVerdictRecord] = Field(default_factory=list)
    metrics: list[MetricRecord] = Field(default_factory=list)
    by_turn: dict[str, dict[str, tuple[float, int]]] = Field(
        default_factory=dict, description="metric -> turn position -> (mean, turns scored), "
        "over every dialogue the test held.")
    by_type: dict[str, dict[str, tuple[float, int]]] = Field(
        default_factory=dict, description="metric -> question type -> (mean, turns scored).")
    weakest: str = Field(default="", description="The cell clearly worse than the rest, if any.")
    note: str = Field(default="", description="e.g. why the aggregate was not checked.")
    limits: list[Limit] = Field(default_factory=list, description="Its floors and ceilings: "
                                "absolute bounds on the means over its documents, held.")
    items: list[ItemRecord] = Field(default_factory=list)

    @property
    def failed(self) -> bool:
        return (any(i.failed for i in self.items) or self.status == "regressed"
                or any(limit.failed for limit in self.limits))


class RunRecord(_Model):
    """A session: its settings and every ragdive test it ran."""

    settings: dict[str, str] = Field(
        default_factory=dict,
        description="What shaped the run, for the reader: models, turns, role, seeds, ...")
    started: datetime | None = None
    duration_s: float = 0.0
    tests: list[TestRecord] = Field(default_factory=list)

    @classmethod
    def build(
        cls,
        *,
        settings: Mapping[str, str],
        started: datetime,
        duration_s: float,
        chosen: Mapping[str, list[str]],
        collected: Mapping[str, list[str]],
        results: Mapping[str, ItemResult],
        outcomes: Mapping[str, tuple[Outcome, str]],
        aggregates: Iterable[FunctionResult],
    ) -> RunRecord:
        """The record of a session from what the plugin kept: the items chosen per test
        function, their results (sent by xdist workers), the outcome and failure text pytest
        reported for each, and the test functions' verdicts; the band margin is the one its
        ``settings`` show."""
        margin = float(settings.get("band margin", 0.0))
        rows = {row.function: row for row in aggregates}
        tests = []
        for function, nodeids in chosen.items():
            test = _test_record(function, sorted(collected.get(function, nodeids)),
                                rows.get(function), [results[n] for n in nodeids if n in results],
                                margin)
            test.items = [_item_record(nodeid, results.get(nodeid),
                                       outcomes.get(nodeid, ("skipped", "did not run")), margin)
                          for nodeid in sorted(nodeids)]
            tests.append(test)
        return cls(settings=dict(settings), started=started, duration_s=duration_s,
                   tests=sorted(tests, key=lambda t: t.key))


def _test_record(function: str, collected: list[str], row: FunctionResult | None,
                 results: list[ItemResult], margin: float) -> TestRecord:
    """A test function's record, without its items."""
    cells = merge(r.breakdown for r in results)
    shown = table(cells)
    return TestRecord(
        collected=collected, by_turn=shown["turn"], by_type=shown["type"],
        weakest=weakest(cells) or "", key=function, note=row.note if row else "",
        rule=row.rule if row else "band", status=row.status if row else "",
        design=row.design if row else "", limits=list(row.limits) if row else [],
        verdicts=[MetricVerdictRecord(**asdict(v)) for v in row.verdicts] if row else [],
        metrics=metric_records(row.means, row.doc, margin) if row else [],
    )


def _item_record(nodeid: str, result: ItemResult | None, outcome: tuple[Outcome, str],
                 margin: float) -> ItemRecord:
    """An item's record; ``result`` is None when it failed before its dialogue."""
    if result is None:
        return ItemRecord(nodeid=nodeid, document_id="", outcome=outcome[0], message=outcome[1])
    return ItemRecord(
        nodeid=nodeid, document_id=result.document, outcome=outcome[0], message=outcome[1],
        metrics=metric_records(result.scores, result.band or result.band_doc, margin),
        runs=result.dialogues, rejections=result.rejections, rejected_for=result.rejected_for,
        dialogue=result.dialogue, result=result.without_dialogue(),
    )
