"""Baseline bands: one reviewable JSON file per test item, and the comparison with them.

A band holds, per metric, the values of every baseline run and their min, max and
mean, plus what produced it (turns, role, metrics, judge models, plugin version). The
files live in ``__ragdive__/<test module>/`` beside the test module, named like
syrupy's single-file snapshots (a syrupy extension places them), and are written
atomically so that xdist workers never clash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension
from syrupy.location import PyTestLocation

from .files import atomic_write_text
from .metrics import METRICS

DIRNAME = "__ragdive__"
DIGITS = 4


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


def band(values_by_metric: dict[str, list[float]], produced_by: dict[str, Any]) -> dict[str, Any]:
    """A band document from each metric's values over the baseline runs."""
    metrics = {}
    for metric, values in sorted(values_by_metric.items()):
        metrics[metric] = {
            "min": round(min(values), DIGITS),
            "max": round(max(values), DIGITS),
            "mean": round(fmean(values), DIGITS),
            "runs": [round(v, DIGITS) for v in values],
        }
    return {"metrics": metrics, "produced_by": produced_by}


def read(path: Path) -> dict[str, Any] | None:
    """The band stored at ``path``, None when there is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        doc = json.loads(text)
        if not isinstance(doc.get("metrics"), dict) or "produced_by" not in doc:
            raise ValueError("no 'metrics' or 'produced_by'")
        for stats in doc["metrics"].values():
            float(stats["min"]), float(stats["max"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise BaselineError(
            f"the baseline {path} is not a valid band file ({exc}). Restore it from version "
            f"control, or record it again with --ragdive-update"
        ) from None
    return doc


def write(path: Path, doc: dict[str, Any]) -> None:
    """Write a band file atomically, in a form that reads well in a diff."""
    atomic_write_text(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")


def stale_reason(doc: dict[str, Any], produced_by: dict[str, Any]) -> str | None:
    """Why a band recorded for other settings cannot judge this run, if it can't."""
    old = doc["produced_by"]
    changed = [
        f"{key}: {old.get(key)!r} -> {produced_by[key]!r}"
        for key in ("turns", "role", "metrics", "judges")
        if old.get(key) != produced_by[key]
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


def compare(doc: dict[str, Any], scores: dict[str, float], margin: float) -> list[Deviation]:
    """Every metric of ``scores`` outside its band widened by ``margin``."""
    out = []
    for metric, value in scores.items():
        stats = doc["metrics"].get(metric)
        if stats is None:
            continue
        low, high = float(stats["min"]) - margin, float(stats["max"]) + margin
        # the file holds rounded bands: a value is compared at the precision it was stored
        if low - 1e-9 <= round(value, DIGITS) <= high + 1e-9:
            continue
        below = value < low
        higher_is_better = METRICS[metric]
        out.append(Deviation(metric, value, float(stats["min"]), float(stats["max"]),
                             worse=below == higher_is_better))
    return out
