"""A run's HTML report: one self-contained file (inline CSS and SVG, no script, nothing fetched).

Everything that came from a model, a document or the bot under test goes through jinja2's
autoescaping, and the page's Content-Security-Policy forbids scripts and every fetch, so a
hostile answer can neither run code nor call home when the report is opened.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import jinja2

from .. import __version__
from ..engine.base.metrics import METRICS
from .records import ItemResult
from .run_record import ItemRecord, MetricRecord, RunRecord, TestRecord

__all__ = ["Chart", "chart", "render"]

TEMPLATE = "report.html.j2"

#: Verdicts in the order a reader wants them: what needs attention first.
_VERDICT_RANK = {"worse": 0, "not scored": 1, "better": 2, "no band": 3, "in band": 4}
_OUTCOME_RANK = {"error": 0, "failed": 0, "skipped": 1, "passed": 2}

# Chart geometry, in SVG user units: the [0, 1] axis spans X0..X1.
_X0, _X1 = 5.0, 155.0


def render(record: RunRecord) -> str:
    """The report of ``record`` as one HTML document."""
    tests = sorted(record.tests, key=lambda t: not t.failed)
    items = [i for t in tests for i in t.items]
    return _template().render(
        run=record,
        tests=tests,
        counts=_counts(items),
        worse=sum(m.verdict == "worse" for t in tests for m in [*t.metrics, *_item_metrics(t)]),
        usage=_usage(items),
        generated=_generated(),
    )


@functools.cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(chart=chart, metrics_in_order=_metrics_in_order, columns=_columns,
                       items_in_order=_items_in_order, judgement_is_poor=_judgement_is_poor)
    env.filters.update(num=_num, seconds=_seconds, suffix=_suffix)
    source = files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    return env.from_string(source)


def _columns(by_metric: dict[str, dict[str, tuple[float, int]]]) -> list[str]:
    """Every cell of a breakdown, turns by number."""
    cells = {cell for by_cell in by_metric.values() for cell in by_cell}
    return sorted(cells, key=lambda c: (int(c), "") if c.isdigit() else (10**6, c))


def _metrics_in_order(metrics: list[MetricRecord]) -> list[MetricRecord]:
    """Worse than the band first, then unscored, better, unbanded, in band (stable)."""
    return sorted(metrics, key=lambda m: _VERDICT_RANK[m.verdict])


def _items_in_order(test: TestRecord) -> list[ItemRecord]:
    """Failed and errored items first, then skipped, then passed (stable)."""
    return sorted(test.items, key=lambda i: _OUTCOME_RANK[i.outcome])


def _judgement_is_poor(metric: str, score: float) -> bool:
    """Whether a turn's score leans to the bad side of its metric, for a visual hint."""
    return score > 0.5 if not METRICS.get(metric, True) else score < 0.5


@dataclass(frozen=True)
class Chart:
    """Where a metric's marks go on a [0, 1] axis (x and widths in SVG units)."""
    margin: tuple[float, float] | None  # x, width of the band widened by its margin
    band: tuple[float, float] | None  # x, width of [min, max]
    runs: list[float]  # x of each baseline run
    today: float | None  # x of today's value


def chart(metric: MetricRecord) -> Chart:
    band = metric.band

    def span(low: float, high: float, least: float) -> tuple[float, float]:
        left, right = _x(low), _x(high)
        width = max(right - left, least)
        return min(left, _X1 - width), width

    return Chart(
        margin=span(band.min - band.margin, band.max + band.margin, 0.0)
        if band is not None and band.margin > 0 else None,
        band=span(band.min, band.max, 2.0) if band is not None else None,
        runs=[_x(v) for v in band.runs] if band is not None else [],
        today=_x(metric.value) if metric.value is not None else None,
    )


def _x(value: float) -> float:
    return _X0 + min(max(value, 0.0), 1.0) * (_X1 - _X0)


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    if value < 60:
        return f"{value:.1f} s"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min {seconds} s"


def _suffix(nodeid: str, key: str) -> str:
    """What tells an item apart within its test: ``[document]`` after the test's key."""
    return nodeid[len(key):] if nodeid.startswith(key) and nodeid != key else nodeid


def _item_metrics(test: TestRecord) -> list[MetricRecord]:
    return [m for i in test.items for m in i.metrics]


def _counts(items: list[ItemRecord]) -> dict[str, int]:
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for item in items:
        counts[item.outcome] += 1
    return counts


def _usage(items: list[ItemRecord]) -> dict[str, Any]:
    totals: dict[str, Any] = {"dialogues": 0, "turns": 0, "rejections": 0, "calls": 0,
                              "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0,
                              "cost": 0.0, "retried": 0, "waited_s": 0.0}
    for item in items:
        d = item.dialogue
        if d is None:
            continue
        # every run's, confirmation runs included (the dialogue is the first)
        kept = item.result or ItemResult()
        given = kept.model_fields_set
        totals["dialogues"] += kept.dialogues
        totals["turns"] += kept.turns if "turns" in given else len(d.turns)
        totals["rejections"] += kept.rejections if "rejections" in given else d.rejection_count
        for key, value in (kept.usage or d.usage.model_dump()).items():
            totals[key] += value
    return totals


def _generated() -> str:
    return f"pytest-ragdive {__version__}"
