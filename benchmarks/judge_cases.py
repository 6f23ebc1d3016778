"""The labelled cases the judge benchmark reads (shipped in the package, ``pytest_ragdive/
judge_cases``: ``pytest_ragdive.calibration.cases``), the statistics it reports (the package's,
``pytest_ragdive.calibration.agreement``), and its table rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_ragdive.calibration.agreement import (  # noqa: F401  (the benchmarks' names)
    Counts,
    auc,
    balanced,
    best_threshold,
    held_out,
    pearson,
)
from pytest_ragdive.calibration.cases import HERE as CASES
from pytest_ragdive.engine.base.models import Document

HERE = Path(str(CASES))


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def documents(*folders: Path) -> dict[str, Document]:
    return {p.stem: Document(id=p.stem, text=p.read_text())
            for folder in folders for p in sorted(folder.glob("*.md"))}


def row(name: str, predicted: Sequence[int], labels: Sequence[int], scores: Sequence[float],
        seconds: float | None = None) -> dict[str, Any]:
    """One line of the table, printed, and its figures ("positive": a score of 1)."""
    counts = Counts.of(predicted, labels)
    figures = {"judgement": name, "cases": len(labels),
               "balanced_accuracy": round(counts.balanced_accuracy, 3),
               "tp": counts.tp, "fn": counts.fn, "tn": counts.tn, "fp": counts.fp,
               "auc": round(auc(scores, labels), 3),
               "s_per_case": None if seconds is None else round(seconds / max(1, len(labels)), 2)}
    per_case = "" if seconds is None else f"{figures['s_per_case']:.2f}"
    print(f"| {name} | {len(labels)} | {figures['balanced_accuracy']:.3f} | {counts.tp} / "
          f"{counts.fn} | {counts.tn} / {counts.fp} | {figures['auc']:.3f} | {per_case} |",
          flush=True)
    return figures
