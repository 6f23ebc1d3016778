"""The labelled cases of benchmarks/judges/ and the statistics the judge benchmark reports."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_ragdive.engine.models import Document, GeneratedTurn, RagAnswer, Turn

HERE = Path(__file__).parent / "judges"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def documents(*folders: Path) -> dict[str, Document]:
    return {p.stem: Document(id=p.stem, text=p.read_text())
            for folder in folders for p in sorted(folder.glob("*.md"))}


#: what a role adds to a generated turn, where a case has it (premise.jsonl, clarified.jsonl)
ROLE_FIELDS = ("evidence", "premise", "readings")


def turns_of(case: dict[str, Any]) -> tuple[Turn, list[Turn]]:
    """The judged turn and the turns before it, as a dialogue would hold them."""
    earlier = [
        Turn(index=i, generated=GeneratedTurn(rag_input=h["user"], standalone_question=h["user"],
                                              ground_truth="", question_type="follow_up"),
             answer=RagAnswer(answer=h["assistant"]))
        for i, h in enumerate(case.get("history", []), 1)
    ]
    turn = Turn(
        index=len(earlier) + 1,
        generated=GeneratedTurn(rag_input=case["rag_input"],
                                standalone_question=case["standalone_question"],
                                ground_truth=case["ground_truth"],
                                question_type="follow_up" if earlier else "initial",
                                **{k: case[k] for k in ROLE_FIELDS if k in case}),
        answer=RagAnswer(answer=case["answer"], contexts=case.get("contexts", [])),
    )
    return turn, earlier


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Probability that a random positive case scores above a random negative one."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    pairs = [(p > n) + 0.5 * (p == n) for p in pos for n in neg]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def balanced(predicted: Sequence[int], labels: Sequence[int]) -> float:
    pos = [p for p, y in zip(predicted, labels) if y]
    neg = [1 - p for p, y in zip(predicted, labels) if not y]
    return (sum(pos) / max(1, len(pos)) + sum(neg) / max(1, len(neg))) / 2


def best_threshold(scores: Sequence[float], labels: Sequence[int]) -> float:
    """The threshold on P(score 1) with the best balanced accuracy on these cases (the one
    nearest 0.5 among equals)."""
    candidates = sorted({0.5, *(round(s, 4) for s in scores)})
    return max(candidates, key=lambda t: (
        balanced([int(s >= t) for s in scores], labels), -abs(t - 0.5)))


def held_out(scores: Sequence[float], labels: Sequence[int], groups: Sequence[str]) -> list[int]:
    """Predictions with a threshold fitted on the other groups' cases only."""
    predicted = []
    for score, group in zip(scores, groups):
        rest = [(s, y) for s, y, g in zip(scores, labels, groups) if g != group]
        threshold = best_threshold([s for s, _ in rest], [y for _, y in rest])
        predicted.append(int(score >= threshold))
    return predicted


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:  # a constant series
        return float("nan")


def row(name: str, predicted: Sequence[int], labels: Sequence[int], scores: Sequence[float],
        seconds: float | None = None) -> dict[str, Any]:
    """One line of the table, printed, and its figures ("positive": a score of 1)."""
    tp = sum(bool(p and y) for p, y in zip(predicted, labels))
    tn = sum(bool(not p and not y) for p, y in zip(predicted, labels))
    fp = sum(bool(p and not y) for p, y in zip(predicted, labels))
    fn = sum(bool(not p and y) for p, y in zip(predicted, labels))
    figures = {"judgement": name, "cases": len(labels),
               "balanced_accuracy": round(balanced(predicted, labels), 3),
               "tp": tp, "fn": fn, "tn": tn, "fp": fp, "auc": round(auc(scores, labels), 3),
               "s_per_case": None if seconds is None else round(seconds / max(1, len(labels)), 2)}
    per_case = "" if seconds is None else f"{figures['s_per_case']:.2f}"
    print(f"| {name} | {len(labels)} | {figures['balanced_accuracy']:.3f} | {tp} / {fn} "
          f"| {tn} / {fp} | {figures['auc']:.3f} | {per_case} |", flush=True)
    return figures
