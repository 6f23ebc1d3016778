"""Per test function: the mean of each metric over its documents against an aggregate
band (the paper's main use: a mean over many conversations is far steadier than one),
and baseline files no collected test owns any more."""

from __future__ import annotations

from pathlib import Path
from statistics import fmean
from typing import TYPE_CHECKING, Any

from . import baseline

if TYPE_CHECKING:
    from .session import RagdiveSession


def evaluate(session: RagdiveSession) -> list[dict[str, Any]]:
    """One row per test function that ran: its means, band and status."""
    rows = []
    for function, chosen in session.chosen.items():
        results = [session.results.get(nodeid) for nodeid in chosen]
        ran = [r for r in results if r is not None]
        if not ran:
            continue
        row: dict[str, Any] = {"function": function, "documents": len(ran), "band": {},
                               "means": _means([r["scores"] for r in ran]), "note": ""}
        rows.append(row)
        complete = sorted(chosen) == sorted(session.all_items.get(function, []))
        usable = all(r["status"] not in ("error", "missing", "stale") for r in ran)
        if not complete or len(ran) < len(chosen):
            row["status"] = "skipped"
            row["note"] = "aggregate not checked: only some documents of this test ran"
            continue
        if not usable:
            row["status"] = "skipped"
            row["note"] = "aggregate not checked: some items have no usable result"
            continue
        path = Path(ran[0]["aggregate_file"])
        if session.update:
            _record(path, ran, row)
            continue
        try:
            doc = baseline.read(path)
        except baseline.BaselineError as exc:
            row["status"], row["note"] = "regressed", str(exc)
            continue
        if doc is None:
            row["status"] = "regressed"
            row["note"] = f"no aggregate band at {path}; record it with --ragdive-update"
            continue
        row["band"] = {m: (s["min"], s["max"]) for m, s in doc["metrics"].items()}
        deviations = baseline.compare(doc, row["means"], session.margin)
        row["deviations"] = [(d.metric, d.worse) for d in deviations]
        row["status"] = ("regressed" if any(d.worse for d in deviations)
                         else "improved" if deviations else "passed")
    return rows


def _means(scores: list[dict[str, float]]) -> dict[str, float]:
    metrics = sorted({m for s in scores for m in s})
    return {m: fmean(s[m] for s in scores if m in s) for m in metrics
            if any(m in s for s in scores)}


def _record(path: Path, ran: list[dict[str, Any]], row: dict[str, Any]) -> None:
    runs = min(len(next(iter(r["runs"].values()))) for r in ran)
    metrics = sorted(ran[0]["runs"])
    values = {m: [fmean(r["runs"][m][i] for r in ran) for i in range(runs)] for m in metrics}
    doc = baseline.band(values, {**ran[0]["produced_by"], "documents": len(ran)})
    baseline.write(path, doc)
    row["band"] = {m: (s["min"], s["max"]) for m, s in doc["metrics"].items()}
    row["status"] = "recorded"


def unused_files(session: RagdiveSession) -> list[str]:
    """Band files in the baseline folders of collected modules that no test owns."""
    unused = []
    for folder, functions in session.scopes.items():
        directory = Path(folder)
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.json")):
            if str(path) in session.expected_files:
                continue
            owner = path.name.split("[", 1)[0].removesuffix(".json").removesuffix(".aggregate")
            if functions is None or owner in functions:
                unused.append(str(path))
    return unused
