"""Exact permutation tests of "the candidate is worse than the baseline", one metric.

The unit is one dialogue's score (the mean over its turns). Unpaired: documents are
strata, and within a document the baseline's and the candidate's runs are exchangeable
when nothing changed, so relabelling runs gives an exact one-sided test. Paired by seed:
the sign of each pair's difference is a coin. Stdlib and numpy only.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

Scores = Mapping[str, Sequence[float]]  # document -> one score per run
Seeds = Mapping[str, Sequence[int | None]]  # document -> the generator's seed of each run

_TIE = 1e-9  # relabellings within this of the observed statistic count as ties (>=)


def strata(baseline: Scores, candidate: Scores) -> list[tuple[np.ndarray, np.ndarray]]:
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


def _null(layers: list[tuple[np.ndarray, np.ndarray]], sign: float, draws: int, seed: int
          ) -> tuple[np.ndarray, bool]:
    """The statistic over every within-document relabelling (exact) or ``draws`` seeded
    random ones, and whether it is exact."""
    sizes = [math.comb(b.size + c.size, c.size) for b, c in layers]
    exact = math.prod(sizes) <= draws
    rng = np.random.default_rng(seed)
    totals: np.ndarray = np.zeros(1 if exact else draws)
    for (b, c), size in zip(layers, sizes):
        r, k = b.size, c.size
        pooled = np.concatenate([b, c])
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
    return totals, exact


def _p(totals: np.ndarray, exact: bool, observed: float) -> float:
    hits = int(np.count_nonzero(totals >= observed - _TIE * max(1.0, abs(observed))))
    return hits / totals.size if exact else (1 + hits) / (1 + totals.size)


def permutation_test(baseline: Scores, candidate: Scores, higher_is_better: bool, *,
                     draws: int = 20000, seed: int = 0) -> tuple[float, float]:
    """One-sided p-value that the candidate is worse, stratified by document, and the
    smallest p-value these scores can give whichever runs are the candidate's.

    Statistic: the mean over shared documents of (candidate mean - baseline mean),
    oriented so that larger is worse. Every within-document relabelling is enumerated
    when there are at most ``draws`` of them; otherwise ``draws`` seeded random ones are
    drawn and p = (1 + #>=) / (1 + draws). Ties count as >=. The smallest p is that of the
    labelling that gives each document's candidate its worst runs: ties raise it, and
    where every run scored the same it is 1.
    """
    if draws < 1:
        raise ValueError("draws must be at least 1")
    layers = strata(baseline, candidate)
    if not layers:
        raise ValueError("no document has both baseline and candidate scores")
    sign = -1.0 if higher_is_better else 1.0
    totals, exact = _null(layers, sign, draws, seed)
    observed = extreme = 0.0
    for b, c in layers:
        pooled = np.concatenate([b, c])
        worst = np.sort(sign * pooled)[-c.size:].sum() * sign  # the candidate's worst runs
        observed += float(_contribution(pooled, np.array(c.sum()), b.size, c.size, sign))
        extreme += float(_contribution(pooled, np.array(worst), b.size, c.size, sign))
    return _p(totals, exact, observed), _p(totals, exact, extreme)


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


def paired_floor(differences: Sequence[np.ndarray]) -> float:
    """The smallest p-value :func:`paired_p` can give: every nonzero difference on the
    worse side (a zero difference is the same under either sign)."""
    return 0.5 ** sum(int(np.count_nonzero(d)) for d in differences)


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
