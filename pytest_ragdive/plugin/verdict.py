"""A variance-aware verdict: is a candidate run worse than the baseline, per metric?

Each metric gets an exact permutation test (:mod:`.permutation`): unpaired with documents
as strata, or, when the candidate ran at the baseline's seeds (a check at the default
seed) in numbers that can reach alpha over the metrics (:mod:`.reach`), on the pairs'
differences, which cancels what a seed alone decides (how hard its facts are). Holm's
step-down controls the false-alarm rate over the metrics that can reach significance on
their scores (Tarone's rule); a design too small to reach its threshold still fails a
metric whose every run of every document left its band on the worse side. Pure
statistics: stdlib, numpy and the metric table only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from ..engine.base.metrics import METRICS
from . import power, reach
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
    #: when every candidate run of every document is worse than all its baseline runs (each
    #: left its band), the chance of that with nothing changed: at most the unpaired floor
    outside: float | None


def _outside(runs: Sequence[tuple[np.ndarray, np.ndarray]], higher: bool, margin: float
             ) -> float | None:
    """See ``_Tested.outside``; the band is widened by ``margin`` as the item's is."""
    if all(c.max() < b.min() - margin if higher else c.min() > b.max() + margin
           for b, c in runs):
        return reach.unpaired_floor((b.size, c.size) for b, c in runs)
    return None


def _test(base: Scores, cand: Scores, higher: bool, pairs: list[np.ndarray] | None,
          level: float, margin: float, draws: int, seed: int) -> _Tested:
    """One metric's test: on the pairs when their number can reach ``level`` (chosen by
    counts alone, before the scores are read), else unpaired over the same documents."""
    runs = strata(base, cand)
    outside = _outside(runs, higher, margin)
    if pairs and reach.paired_floor(sum(d.size for d in pairs)) <= level:
        p = paired_p(pairs, higher, draws=draws, seed=seed)
        return _Tested(_design([d.size for d in pairs]), len(pairs), p,
                       float(np.mean([d.mean() for d in pairs])), paired_floor(pairs), True,
                       power.paired_spread(pairs), outside)
    p, floor = permutation_test(base, cand, higher, draws=draws, seed=seed)
    return _Tested(_design([c.size for _, c in runs], [b.size for b, _ in runs]), len(runs), p,
                   float(np.mean([c.mean() - b.mean() for b, c in runs])), floor, False,
                   power.unpaired_spread(runs), outside)


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
           suspects: Iterable[str] | None = None, margin: float = 0.0,
           seeds: tuple[Mapping[str, Seeds], Mapping[str, Seeds]] | None = None,
           ) -> list[MetricVerdict]:
    """A verdict per metric from metric -> document -> run scores (and, to pair runs at one
    seed, the baseline's and the candidate's metric -> document -> run ``seeds``; without a
    pair in every document, or with too few pairs to reach alpha over the metrics,
    unpaired).

    "worse" when Holm's step-down at ``alpha`` over the metrics that can reach
    significance (:func:`tarone`) rejects, or when every candidate run of every document is
    worse than all its baseline runs, by more than ``margin`` (which an unchanged bot does
    with a chance of at most the unpaired design's smallest p: the rule that lets a design
    too small to reach its threshold fail); "inconclusive" when the candidate looks worse and is not rejected;
    "not worse" otherwise. A metric looks worse when its change over every run is on the
    worse side and it is among ``suspects`` (the plugin's: a first run left its band on the
    worse side), or without ``suspects`` when it is not in Holm's family or p < 0.5. A
    metric without a shared document gets no verdict.
    """
    shared = [m for m in baseline if m in candidate and strata(baseline[m], candidate[m])]
    for metric in shared:
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    level = reach.level(alpha, len(shared))
    tested = {}
    for metric in shared:
        pairs = (paired(baseline[metric], candidate[metric], seeds[0].get(metric, {}),
                        seeds[1].get(metric, {}))
                 if seeds is not None else None)
        tested[metric] = _test(baseline[metric], candidate[metric], METRICS[metric], pairs,
                               level, margin, draws, seed)
    family, reachable = tarone({metric: entry.floor for metric, entry in tested.items()},
                               alpha)
    p_values = {metric: entry.p for metric, entry in tested.items() if metric in family}
    rejected = holm(p_values, alpha)
    m = len(p_values)
    step = {name: alpha / (m - rank) for rank, (name, _) in enumerate(_holm_order(p_values))}
    suspected = set(suspects) if suspects is not None else None
    verdicts = []
    for metric, entry in tested.items():
        leans = entry.delta < 0 if METRICS[metric] else entry.delta > 0
        # one document's first run below its band is not a suspicion the runs keep when
        # they lean the other way over every document (the accepted bot at seed 100)
        looks_worse = leans and (metric in suspected if suspected is not None
                                 else metric not in family or entry.p < 0.5)
        verdict, reason = _reason(entry, metric in rejected, looks_worse, metric in family,
                                  step.get(metric, reachable), reachable, alpha / max(m, 1))
        verdicts.append(MetricVerdict(metric, verdict, entry.p, entry.delta, entry.floor,
                                      reason, metric in family))
    return verdicts


def _reason(entry: _Tested, rejected: bool, looks_worse: bool, in_family: bool,
            threshold: float, reachable: float, first: float) -> tuple[Verdict, str]:
    """A metric's verdict and why, from its test; ``threshold``: its Holm threshold,
    ``reachable``: the family's level, ``first``: Holm's first threshold."""
    design, documents, p, delta, floor, is_paired, spread, outside = entry
    side = "lower" if delta < 0 else "higher"
    change = f"candidate {side} by {abs(delta):.3f} over {_count([documents], 'document')}"
    verdict: Verdict
    if rejected:
        verdict = "worse"
        reason = f"{change}: p = {_fmt(p)} ≤ Holm threshold {_fmt(threshold)}"
    elif outside is not None:
        verdict = "worse"
        reason = (f"{change}: every run of every document is outside its band, on the worse "
                  f"side (p = {_fmt(p)}; by chance at most {_fmt(outside)} of the time)")
    elif looks_worse and not in_family:
        verdict = "inconclusive"
        reason = (f"{design} cannot reach p ≤ {_fmt(reachable)} on these scores (smallest "
                  f"possible p {_fmt(floor)}): add documents or runs; "
                  + power.advice(*spread, documents, floor, delta, reachable))
    elif looks_worse:
        verdict = "inconclusive"
        reason = (f"{change}, p = {_fmt(p)} > Holm threshold {_fmt(threshold)}: "
                  "more documents or runs would decide (ragdive_confirm_runs, "
                  "baseline runs); " + power.advice(*spread, documents, floor, delta, first))
    else:
        verdict = "not worse"
        reason = f"{change}, p = {_fmt(p)}"
    if is_paired and verdict != "inconclusive":
        reason += f" ({design})"
    return verdict, reason
