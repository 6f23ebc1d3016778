"""A variance-aware verdict: is a candidate run worse than the baseline, per metric?

The unit is one dialogue's score (the mean over its turns), never a turn. Documents are
strata: when nothing changed, the baseline's runs and the candidate's runs of one
document are exchangeable, so relabelling runs within each document gives an exact
one-sided permutation test. When the candidate ran at the baseline's seeds (a check at
the default seed), each candidate run has a baseline run with the same first question and
the same facts drawn: the test is then on the pairs' differences, flipping the sign of
each, which cancels what a seed alone decides (how hard its facts are). Holm's step-down
controls the false-alarm rate over the metrics tested. Pure statistics: stdlib, numpy and
the metric table only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, NamedTuple

import numpy as np

from ..engine.metrics import METRICS
from . import power

Scores = Mapping[str, Sequence[float]]  # document -> one score per run
Seeds = Mapping[str, Sequence[int]]  # document -> the generator's seed of each run
Verdict = Literal["worse", "not worse", "inconclusive"]

_TIE = 1e-9  # relabellings within this of the observed statistic count as ties (>=)


def _strata(baseline: Scores, candidate: Scores) -> list[tuple[np.ndarray, np.ndarray]]:
    """(baseline runs, candidate runs) of every document in both, NaNs dropped, each side
    holding at least one value; in the baseline's document order."""
    out = []
    for doc, base_runs in baseline.items():
        if doc not in candidate:
            continue
        b = np.asarray(base_runs, dtype=float)
        c = np.asarray(candidate[doc], dtype=float)
        b, c = b[~np.isnan(b)], c[~np.isnan(c)]
        if b.size and c.size:
            out.append((b, c))
    return out


@lru_cache(maxsize=256)
def _combinations(n: int, k: int) -> np.ndarray:
    """Every choice of ``k`` of ``n`` positions, one row each."""
    flat = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)),
                       dtype=np.intp)
    return flat.reshape(-1, k)


def _contribution(pooled: np.ndarray, cand_sums: np.ndarray, r: int, k: int,
                  sign: float) -> np.ndarray:
    """A document's oriented (candidate mean - baseline mean) for given candidate sums."""
    total = pooled.sum()
    return sign * (cand_sums / k - (total - cand_sums) / r)


def permutation_p(baseline: Scores, candidate: Scores, higher_is_better: bool, *,
                  draws: int = 20000, seed: int = 0) -> float:
    """One-sided p-value that the candidate is worse, stratified by document.

    Statistic: the mean over shared documents of (candidate mean - baseline mean),
    oriented so that larger is worse. Every within-document relabelling is enumerated
    when there are at most ``draws`` of them; otherwise ``draws`` seeded random ones are
    drawn and p = (1 + #>=) / (1 + draws). Ties count as >=.
    """
    if draws < 1:
        raise ValueError("draws must be at least 1")
    strata = _strata(baseline, candidate)
    if not strata:
        raise ValueError("no document has both baseline and candidate scores")
    sign = -1.0 if higher_is_better else 1.0
    sizes = [math.comb(b.size + c.size, c.size) for b, c in strata]
    exact = math.prod(sizes) <= draws
    rng = np.random.default_rng(seed)
    observed = 0.0
    totals: np.ndarray = np.zeros(1 if exact else draws)
    for (b, c), size in zip(strata, sizes):
        r, k = b.size, c.size
        pooled = np.concatenate([b, c])
        observed += float(_contribution(pooled, np.array(c.sum()), r, k, sign))
        if exact or size <= draws:
            values = _contribution(pooled, pooled[_combinations(r + k, k)].sum(axis=1), r, k,
                                   sign)
            if exact:
                totals = (totals[:, None] + values[None, :]).ravel()
            else:
                totals += values[rng.integers(0, size, size=draws)]
        else:  # too many labellings to list: random permutations of this document's runs
            chosen = np.argpartition(rng.random((draws, r + k)), k - 1, axis=1)[:, :k]
            totals += _contribution(pooled, pooled[chosen].sum(axis=1), r, k, sign)
    hits = int(np.count_nonzero(totals >= observed - _TIE * max(1.0, abs(observed))))
    return hits / totals.size if exact else (1 + hits) / (1 + draws)


def paired(baseline: Scores, candidate: Scores, baseline_seeds: Seeds,
           candidate_seeds: Seeds) -> list[np.ndarray] | None:
    """Per shared document, candidate minus baseline for every candidate run that has a
    baseline run at its seed; None unless every shared document has such a pair."""
    out = []
    for doc, base_runs in baseline.items():
        if doc not in candidate:
            continue
        b_seeds, c_seeds = baseline_seeds.get(doc), candidate_seeds.get(doc)
        if (not b_seeds or not c_seeds or len(b_seeds) != len(base_runs)
                or len(c_seeds) != len(candidate[doc])):
            return None
        by_seed = {s: v for s, v in zip(b_seeds, base_runs) if not math.isnan(v)}
        diffs = [c - by_seed[s] for s, c in zip(c_seeds, candidate[doc])
                 if s in by_seed and not math.isnan(c)]
        if not diffs:
            return None
        out.append(np.asarray(diffs, dtype=float))
    return out or None


def paired_p(differences: Sequence[np.ndarray], higher_is_better: bool, *,
             draws: int = 20000, seed: int = 0) -> float:
    """One-sided p-value that the candidate is worse, from each document's paired
    differences: the statistic is the mean over documents of their mean difference,
    oriented so that larger is worse; under no change each pair's sign is a coin. Every
    sign pattern is enumerated when there are at most ``draws``, else ``draws`` are drawn."""
    if not differences:
        raise ValueError("no document has a paired run")
    sign = -1.0 if higher_is_better else 1.0
    weights = np.concatenate([np.full(d.size, 1.0 / (len(differences) * d.size))
                              for d in differences])
    values = sign * weights * np.concatenate(differences)
    observed = float(values.sum())
    n = values.size
    exact = 2 ** n <= draws
    if exact:
        patterns = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
    else:
        patterns = np.random.default_rng(seed).choice([-1, 1], size=(draws, n))
    totals = patterns @ values
    hits = int(np.count_nonzero(totals >= observed - _TIE * max(1.0, abs(observed))))
    return hits / totals.size if exact else (1 + hits) / (1 + draws)


def smallest_p(baseline: Scores, candidate: Scores) -> float:
    """The smallest p-value the exact test can give: 1 / prod_d C(R_d + k_d, k_d)."""
    strata = _strata(baseline, candidate)
    return 1.0 / math.prod(math.comb(b.size + c.size, c.size) for b, c in strata)


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

    "worse" when Holm's step-down over the metrics tested rejects at ``alpha``;
    "inconclusive" when the candidate looks worse and is not rejected; "not worse"
    otherwise. A metric looks worse when its change over every run is on the worse side
    and it is among ``suspects`` (the plugin's: a first run left its band on the worse
    side), or without ``suspects`` when the design cannot reach the first Holm threshold
    or p < 0.5. A metric without a shared document gets no verdict.
    """
    suspected = set(suspects) if suspects is not None else None
    tested: dict[str, _Tested] = {}
    for metric, base in baseline.items():
        if metric not in candidate:
            continue
        strata = _strata(base, candidate[metric])
        if not strata:
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
            floor = 0.5 ** sum(int(np.count_nonzero(d)) for d in pairs)
            tested[metric] = _Tested(_design([d.size for d in pairs]), len(pairs), p, delta,
                                     floor, True, power.paired_spread(pairs))
            continue
        p = permutation_p(base, candidate[metric], higher, draws=draws, seed=seed)
        delta = float(np.mean([c.mean() - b.mean() for b, c in strata]))
        tested[metric] = _Tested(
            _design([c.size for _, c in strata], [b.size for b, _ in strata]), len(strata),
            p, delta, smallest_p(base, candidate[metric]), False, power.unpaired_spread(strata))
    m = len(tested)
    p_values = {metric: entry.p for metric, entry in tested.items()}
    rejected = holm(p_values, alpha)
    step = {name: alpha / (m - rank) for rank, (name, _) in enumerate(_holm_order(p_values))}
    first = alpha / m if m else alpha
    verdicts = []
    for metric, (design, documents, p, delta, floor, is_paired, spread) in tested.items():
        leans = delta < 0 if METRICS[metric] else delta > 0
        # one document's first run below its band is not a suspicion the runs keep when
        # they lean the other way over every document (the accepted bot at seed 100)
        looks_worse = leans and (metric in suspected if suspected is not None
                                 else floor > first or p < 0.5)
        side = "lower" if delta < 0 else "higher"
        change = f"candidate {side} by {abs(delta):.3f} over {_count([documents], 'document')}"
        verdict: Verdict
        if metric in rejected:
            verdict = "worse"
            reason = f"{change}: p = {_fmt(p)} ≤ Holm threshold {_fmt(step[metric])}"
        elif looks_worse and floor > first:
            verdict = "inconclusive"
            reason = (f"{design} cannot reach p ≤ {_fmt(first)} (smallest possible p "
                      f"{_fmt(floor)}): add documents or runs; "
                      + power.advice(*spread, documents, floor, delta, first))
        elif looks_worse:
            verdict = "inconclusive"
            reason = (f"{change}, p = {_fmt(p)} > Holm threshold {_fmt(step[metric])}: "
                      "more documents or runs would decide (ragdive_confirm_runs, "
                      "baseline runs); " + power.advice(*spread, documents, floor, delta, first))
        else:
            verdict = "not worse"
            reason = f"{change}, p = {_fmt(p)}"
        if is_paired and verdict != "inconclusive":
            reason += f" ({design})"
        verdicts.append(MetricVerdict(metric, verdict, p, delta, floor, reason))
    return verdicts


def needs_confirmation(verdicts: Iterable[MetricVerdict]) -> bool:
    """True when some verdict is inconclusive: draw more candidate runs and decide again."""
    return any(v.verdict == "inconclusive" for v in verdicts)
