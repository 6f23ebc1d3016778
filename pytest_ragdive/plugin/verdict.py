"""A variance-aware verdict: is a candidate run worse than the baseline, per metric?

Each metric gets an exact permutation test (:mod:`.permutation`): unpaired with documents
as strata, or, when the candidate ran at the baseline's seeds (a check at the default
seed), on the pairs' differences, which cancels what a seed alone decides (how hard its
facts are). Holm's step-down controls the false-alarm rate over the metrics that can reach
significance on their scores (Tarone's rule). Pure statistics: stdlib, numpy and the metric
table only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from ..engine.metrics import METRICS
from . import power
from .permutation import Scores, Seeds, paired, paired_floor, paired_p, permutation_test, strata

Verdict = Literal["worse", "not worse", "inconclusive"]


def _holm_order(p_values: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(p_values.items(), key=lambda item: (item[1], item[0]))


def holm(p_values: Mapping[str, float], alpha: float) -> set[str]:
    """The names Holm's step-down rejects at family-wise level ``alpha``."""
    m = len(p_values)
    rejected: set[str] = set()
    for rank, (name, p) in enumerate(_holm_order(p_values)):
        if p > alpha / (m - rank):
            break
        rejected.add(name)
    return rejected


def tarone(floors: Mapping[str, float], alpha: float) -> tuple[set[str], float]:
    """The metrics worth testing and the level they can reach (Tarone 1990): for the least
    K such that at most K metrics can reach p <= alpha / K on their scores (``floors``,
    the smallest p each can give), those metrics and alpha / K. A metric that cannot (every
    run scored the same) is never rejected: in Holm's family it would only make the others'
    thresholds stricter. The floors do not depend on which runs are the candidate's, so
    choosing the family by them keeps the false-alarm rate at ``alpha``."""
    for k in range(1, len(floors) + 1):
        family = {m for m, floor in floors.items() if floor <= alpha / k}
        if len(family) <= k:
            return family, alpha / k
    return set(), alpha


class _Tested(NamedTuple):
    design: str
    documents: int
    p: float
    delta: float
    floor: float  # the smallest p the design can give
    paired: bool
    spread: tuple[float, float]  # power's (run-to-run SD, variance factor per document)


@dataclass(frozen=True)
class MetricVerdict:
    """One metric's verdict. ``delta`` is candidate - baseline (mean over documents of the
    per-document means) in the metric's own direction: negative is worse when higher is
    better, positive is worse for forgetfulness."""

    metric: str
    verdict: Verdict
    p: float
    delta: float
    smallest_p: float
    reason: str
    tested: bool = True  # in Holm's family (:func:`tarone`)


def _fmt(p: float) -> str:
    return f"{p:.4f}" if p >= 0.001 else f"{p:.2g}"


def _count(values: Iterable[int], noun: str) -> str:
    ordered = sorted(values)
    lo, hi = ordered[0], ordered[-1]
    return f"{lo} {noun}" if lo == hi == 1 else f"{lo}{'' if lo == hi else f'–{hi}'} {noun}s"


def _design(runs: Sequence[int], baseline_runs: Sequence[int] | None = None) -> str:
    """Per document its candidate runs (and, unpaired, its baseline runs): e.g. "3 documents
    × 3 baseline runs × 1 candidate run", or "3 documents × 1–2 runs paired by seed"."""
    documents = _count([len(runs)], "document")
    if baseline_runs is None:
        return f"{documents} × {_count(runs, 'run')} paired by seed"
    return " × ".join([documents, _count(baseline_runs, "baseline run"),
                       _count(runs, "candidate run")])


def decide(baseline: Mapping[str, Scores], candidate: Mapping[str, Scores], *,
           alpha: float = 0.05, draws: int = 20000, seed: int = 0,
           suspects: Iterable[str] | None = None,
           baseline_seeds: Mapping[str, Seeds] | None = None,
           candidate_seeds: Mapping[str, Seeds] | None = None) -> list[MetricVerdict]:
    """A verdict per metric from metric -> document -> run scores (and, to pair runs at one
    seed, metric -> document -> run seeds; without a pair in every document, unpaired).

    "worse" when Holm's step-down at ``alpha`` over the metrics that can reach
    significance (:func:`tarone`) rejects;
    "inconclusive" when the candidate looks worse and is not rejected; "not worse"
    otherwise. A metric looks worse when its change over every run is on the worse side
    and it is among ``suspects`` (the plugin's: a first run left its band on the worse
    side), or without ``suspects`` when it is not in Holm's family or p < 0.5. A metric without a shared document gets no verdict.
    """
    suspected = set(suspects) if suspects is not None else None
    tested: dict[str, _Tested] = {}
    for metric, base in baseline.items():
        if metric not in candidate:
            continue
        runs = strata(base, candidate[metric])
        if not runs:
            continue
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
        higher = METRICS[metric]
        pairs = (paired(base, candidate[metric], baseline_seeds.get(metric, {}),
                        candidate_seeds.get(metric, {}))
                 if baseline_seeds is not None and candidate_seeds is not None else None)
        if pairs:
            p = paired_p(pairs, higher, draws=draws, seed=seed)
            delta = float(np.mean([d.mean() for d in pairs]))
            tested[metric] = _Tested(_design([d.size for d in pairs]), len(pairs), p, delta,
                                     paired_floor(pairs), True, power.paired_spread(pairs))
            continue
        p, floor = permutation_test(base, candidate[metric], higher, draws=draws, seed=seed)
        delta = float(np.mean([c.mean() - b.mean() for b, c in runs]))
        tested[metric] = _Tested(
            _design([c.size for _, c in runs], [b.size for b, _ in runs]), len(runs), p, delta,
            floor, False, power.unpaired_spread(runs))
    family, reach = tarone({metric: entry.floor for metric, entry in tested.items()}, alpha)
    p_values = {metric: entry.p for metric, entry in tested.items() if metric in family}
    rejected = holm(p_values, alpha)
    m = len(p_values)
    step = {name: alpha / (m - rank) for rank, (name, _) in enumerate(_holm_order(p_values))}
    verdicts = []
    for metric, (design, documents, p, delta, floor, is_paired, spread) in tested.items():
        leans = delta < 0 if METRICS[metric] else delta > 0
        # one document's first run below its band is not a suspicion the runs keep when
        # they lean the other way over every document (the accepted bot at seed 100)
        looks_worse = leans and (metric in suspected if suspected is not None
                                 else metric not in family or p < 0.5)
        side = "lower" if delta < 0 else "higher"
        change = f"candidate {side} by {abs(delta):.3f} over {_count([documents], 'document')}"
        verdict: Verdict
        if metric in rejected:
            verdict = "worse"
            reason = f"{change}: p = {_fmt(p)} ≤ Holm threshold {_fmt(step[metric])}"
        elif looks_worse and metric not in family:
            verdict = "inconclusive"
            reason = (f"{design} cannot reach p ≤ {_fmt(reach)} on these scores (smallest "
                      f"possible p {_fmt(floor)}): add documents or runs; "
                      + power.advice(*spread, documents, floor, delta, reach))
        elif looks_worse:
            verdict = "inconclusive"
            reason = (f"{change}, p = {_fmt(p)} > Holm threshold {_fmt(step[metric])}: "
                      "more documents or runs would decide (ragdive_confirm_runs, "
                      "baseline runs); "
                      + power.advice(*spread, documents, floor, delta, alpha / m))
        else:
            verdict = "not worse"
            reason = f"{change}, p = {_fmt(p)}"
        if is_paired and verdict != "inconclusive":
            reason += f" ({design})"
        verdicts.append(MetricVerdict(metric, verdict, p, delta, floor, reason,
                                      metric in family))
    return verdicts


def needs_confirmation(verdicts: Iterable[MetricVerdict]) -> bool:
    """True when some verdict is inconclusive: draw more candidate runs and decide again."""
    return any(v.verdict == "inconclusive" for v in verdicts)
