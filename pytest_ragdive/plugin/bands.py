"""Baseline bands: one reviewable JSON file per test item, and the comparison with them.

A band holds, per metric, the values of every baseline run and their min, max and
mean, plus what produced it (turns, role, metrics, judge models, plugin version). The
files live in ``__ragdive__/<test module>/`` beside the test module, named like
syrupy's single-file snapshots.

Why syrupy places the files but does not compare or write them: its ``matches()`` is an
equality of two serialized snapshots, written per assertion by the process that ran the
test, while a band is a range with a direction, and an update must be all or nothing for
a test function (its item bands and the aggregate band over them, which only the xdist
controller can compute). So the session queues every band of an update and ``write_all``
replaces the files together at the end; an interrupted update writes none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension
from syrupy.location import PyTestLocation

from ..engine.base.metrics import METRICS
from ..files import atomic_write_many
from .records import BandDoc, MetricBand, ProducedBy
from .run_record import DIGITS, Band

DIRNAME = "__ragdive__"


class BaselineExtension(SingleFileSnapshotExtension):
    """Places band files in ``__ragdive__/<module>/<test name>.json``, away from
    ``__snapshots__`` so that syrupy's own update never touches them."""

    file_extension = "json"

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(Path(test_location.filepath).parent / DIRNAME / test_location.basename)


def item_path(item: pytest.Item) -> Path:
    location = PyTestLocation(item)
    return Path(BaselineExtension().get_location(test_location=location, index=0))


def aggregate_path(item: pytest.Item) -> Path:
    """The band of a test function's mean over all its documents."""
    path = item_path(item)
    return path.with_name(path.name.split("[", 1)[0].removesuffix(".json") + ".aggregate.json")


class BaselineError(Exception):
    """A baseline file that cannot be used; the message says how to fix it."""


def band(values_by_metric: dict[str, list[float]], produced_by: ProducedBy,
         seeds: dict[str, list[int | None]] | None = None) -> BandDoc:
    """A band document from each metric's values over the baseline runs, with each run's
    generator seed where known (a check at the same seed is then paired with that run)."""
    metrics: dict[str, MetricBand] = {}
    for metric, values in sorted(values_by_metric.items()):
        stats: dict[str, Any] = {
            "min": round(min(values), DIGITS),
            "max": round(max(values), DIGITS),
            "mean": round(fmean(values), DIGITS),
            "runs": [round(v, DIGITS) for v in values],
        }
        known = (seeds or {}).get(metric)
        if known and len(known) == len(values) and None not in known:
            stats["seeds"] = list(known)
        metrics[metric] = MetricBand(**stats)
    return BandDoc(metrics=metrics, produced_by=produced_by)


def read(path: Path) -> BandDoc | None:
    """The band stored at ``path``, None when there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(text)
        _check(doc)
        return BandDoc.model_validate(doc)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise BaselineError(
            f"the baseline {path} is not a valid band file ({exc}). Restore it from version "
            f"control, or record it again with --ragdive-update"
        ) from None


def _check(doc: Any) -> None:
    if not isinstance(doc, dict) or not isinstance(doc.get("metrics"), dict):
        raise ValueError("no 'metrics'")
    produced = doc.get("produced_by")
    if not isinstance(produced, dict) or not isinstance(produced.get("metrics"), list):
        raise ValueError("no 'produced_by' with its 'metrics'")
    missing = sorted(set(produced["metrics"]) - set(doc["metrics"]))
    if missing:
        raise ValueError(f"no band for {', '.join(missing)}")
    for metric, stats in doc["metrics"].items():
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}")
        low, high = float(stats["min"]), float(stats["max"])
        if not (0.0 <= low <= high <= 1.0):  # NaN fails every comparison
            raise ValueError(f"{metric}: min {low} and max {high} are not 0 <= min <= max <= 1")
        runs = stats.get("runs")
        # the verdict reads the runs themselves: without them a metric would go unjudged
        if not isinstance(runs, list) or not runs or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0
                for v in runs):
            raise ValueError(f"{metric}: 'runs' is not a list of the baseline's scores in [0, 1]")
        if max(abs(min(runs) - low), abs(max(runs) - high)) > 10 ** -DIGITS:
            raise ValueError(f"{metric}: min {low} and max {high} are not those of its runs")
        seeds = stats.get("seeds")
        if seeds is not None and (
                not isinstance(seeds, list) or len(seeds) != len(runs)
                or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)):
            raise ValueError(f"{metric}: 'seeds' is not one whole number per run")


def write_all(docs: Mapping[Path, BandDoc]) -> None:
    """Write band files together, in a form that reads well in a diff: every file is
    written aside first, then all are moved into place (see ``atomic_write_many``)."""
    atomic_write_many({path: json.dumps(doc.model_dump(mode="json"), indent=2,
                                        sort_keys=True) + "\n"
                       for path, doc in docs.items()})


def stale_reason(doc: BandDoc, produced_by: ProducedBy) -> str | None:
    """Why a band recorded for other settings cannot judge this run, if it can't."""
    old = doc.produced_by
    changed = [
        f"{key}: {getattr(old, key)!r} -> {getattr(produced_by, key)!r}"
        for key in ("turns", "role", "metrics", "judges", "prompts", "openers")
        if getattr(old, key) != getattr(produced_by, key)
    ]
    return "; ".join(changed) or None


@dataclass(frozen=True)
class Deviation:
    metric: str
    value: float
    low: float
    high: float
    worse: bool

    def describe(self) -> str:
        direction = "worse" if self.worse else "better"
        return (f"{self.metric} = {self.value:.3f}, band [{self.low:.3f}, {self.high:.3f}] "
                f"({direction})")


def compare(doc: BandDoc, scores: Mapping[str, float], margin: float) -> list[Deviation]:
    """Every metric of ``scores`` outside its band widened by ``margin``."""
    out = []
    for metric, value in scores.items():
        stats = doc.metrics.get(metric)
        if stats is None:  # read() checked the file against its own metrics; see stale_reason
            raise BaselineError(f"the baseline has no band for {metric}")
        verdict = Band.from_stats(stats, margin).verdict(value, METRICS[metric])
        if verdict != "in band":
            out.append(Deviation(metric, value, stats.min, stats.max, worse=verdict == "worse"))
    return out
