"""How the judge benchmark reads a judge: its answers on labelled cases, at the measured
model's thresholds (its judge profile), into table rows (``judge_cases.row``)."""

from __future__ import annotations

import time
from typing import Any

from judge_cases import held_out, pearson, row

from pytest_ragdive.calibration import measure as calibration
from pytest_ragdive.calibration.cases import Case
from pytest_ragdive.engine.base.profile import Profiles
from pytest_ragdive.engine.evaluation.binary import BINARY_JUDGES, combine
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.model import Model

EMBEDDED = "embedded/qwen2.5-coder-1.5b"
#: the model measured (``--model``), whose judge profile gives "the package's" thresholds
MODEL = Model(EMBEDDED)


def threshold(judgement: str) -> float:
    return Profiles().of(MODEL.name).threshold(judgement)


async def answers(client: LLMClient, cases: list[Case], told: bool = True
                  ) -> tuple[list[list[float]], float]:
    """P(yes) of each of the judge's questions per case, and the seconds they took; ``told``:
    the judge is told what the case's document is about (its heading), as the package
    tells it."""
    start, out = time.perf_counter(), []
    for case in cases:
        asked = case if told else case.model_copy(update={"subject": None})
        out.append(await calibration.answers(client, MODEL, asked))
    return out, time.perf_counter() - start


def score_one(metric: str, p_yes: float) -> float:
    """P(score 1) from the judge's P(yes)."""
    return p_yes if BINARY_JUDGES[metric].yes_scores_one else 1 - p_yes


def verdicts(metric: str, probabilities: list[float]) -> list[int]:
    cut = threshold(metric)
    return [int((p >= cut) == BINARY_JUDGES[metric].yes_scores_one) for p in probabilities]


def labels(cases: list[Case]) -> list[int]:
    return [int(c.label) for c in cases]


def report_judge(metric: str, dev: list[Case], dev_answers: list[list[float]],
                 seconds: float, heldout: list[Case] | None = None,
                 heldout_answers: list[list[float]] | None = None,
                 group: str = "document") -> list[dict[str, Any]]:
    p_yes = [combine(metric, a) for a in dev_answers]
    scores = [score_one(metric, p) for p in p_yes]
    groups = [c.group for c in dev]
    rows = [row(f"{metric}, threshold {threshold(metric)} (the package's)",
                verdicts(metric, p_yes), labels(dev), scores, seconds),
            row(f"{metric}, threshold fitted per held-out {group}",
                held_out(scores, labels(dev), groups), labels(dev), scores)]
    if BINARY_JUDGES[metric].per_part:  # what the calls about the key's parts buy
        whole = [score_one(metric, a[0]) for a in dev_answers]
        rows.append(row(f"{metric}, the whole key alone (no parts), fitted per held-out {group}",
                        held_out(whole, labels(dev), groups), labels(dev), whole))
    elif len(dev_answers[0]) == 2:  # what the second call (negation or answer key) buys
        second = "answer key" if BINARY_JUDGES[metric].against_key else "negation"
        asked = [score_one(metric, a[0]) for a in dev_answers]
        rows.append(row(f"{metric}, the question alone (no {second}), fitted per held-out {group}",
                        held_out(asked, labels(dev), groups), labels(dev), asked))
    if heldout is not None and heldout_answers is not None:
        p_held = [combine(metric, a) for a in heldout_answers]
        rows.append(row(f"{metric}, threshold {threshold(metric)}, **held-out set**",
                        verdicts(metric, p_held), labels(heldout),
                        [score_one(metric, p) for p in p_held]))
    return rows


def agreement(name: str, cases: dict[str, list[Case]],
              by_metric: dict[str, list[list[float]]]) -> dict[str, Any]:
    """How often the two multi-turn verdicts disagree ("kept the thread" against
    "consistent"), against how often the labels do, and the correlation of the scores."""
    def p_yes(metric: str) -> list[float]:
        return [combine(metric, a) for a in by_metric[metric]]

    kept = [1 - v for v in verdicts("forgetfulness", p_yes("forgetfulness"))]
    consistent = verdicts("context_retention", p_yes("context_retention"))
    labelled = [(1 - int(f.label), int(r.label))
                for f, r in zip(cases["forgetfulness"], cases["context_retention"], strict=True)]
    f_scores = [1 - score_one("forgetfulness", p) for p in p_yes("forgetfulness")]
    r_scores = [score_one("context_retention", p) for p in p_yes("context_retention")]
    figures = {
        "set": name, "cases": len(labelled),
        "verdicts_disagree": sum(k != c for k, c in zip(kept, consistent)),
        "labels_disagree": sum(k != c for k, c in labelled),
        "both_right_where_labels_disagree": sum(
            (k, c) == lab for k, c, lab in zip(kept, consistent, labelled) if lab[0] != lab[1]),
        "verdict_correlation": round(pearson(kept, consistent), 3),
        "score_correlation": round(pearson(f_scores, r_scores), 3),
    }
    print(f"| {name} | {len(labelled)} | {figures['verdicts_disagree']} "
          f"| {figures['labels_disagree']} "
          f"| {figures['both_right_where_labels_disagree']} | {figures['verdict_correlation']:.3f} "
          f"| {figures['score_correlation']:.3f} |", flush=True)
    return figures


def split(cases: list[Case], held: bool) -> list[Case]:
    return [c for c in cases if (c.split == "held-out") == held]
