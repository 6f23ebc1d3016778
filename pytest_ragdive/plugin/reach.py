"""How small a p-value a test function's design can give, known before any score is seen:
which design to test (paired by seed or not), how many confirmation runs let the test reach
its threshold, and what to say where none can.

A metric's strictest threshold is alpha / M over M metrics (Holm's first step): a design
that reaches it can fail whatever the other metrics score. Unpaired, documents of R baseline
and k candidate runs give at best 1 / prod C(R + k, k) (the labelling that hands every
document's candidate its worst runs); n pairs give at best 1 / 2^n, never less than the
unpaired test of the same runs. Stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: the most candidate runs a check draws per document (its first run and the confirmation
#: runs) when ``ragdive_confirm_runs`` more cannot let the test reach its threshold: the
#: budget; not a setting (a larger ``ragdive_confirm_runs`` is drawn as asked)
MOST_RUNS = 8


def level(alpha: float, metrics: int) -> float:
    """The threshold a metric must reach when every metric can: Holm's first, alpha / M."""
    return alpha / max(metrics, 1)


def unpaired_floor(runs: Iterable[tuple[int, int]]) -> float:
    """The smallest p of the unpaired test over documents of (baseline, candidate) runs."""
    return 1 / math.prod(math.comb(r + k, k) for r, k in runs)


def paired_floor(pairs: int) -> float:
    """The smallest p of the paired test of ``pairs`` pairs."""
    return 0.5 ** pairs


def candidate_runs(documents: int, baseline_runs: int, metrics: int, alpha: float,
                   confirm_runs: int) -> int:
    """The runs per document a check holds once a first run looks worse: its first and
    ``confirm_runs`` more, or more still (up to :data:`MOST_RUNS`) when that many cannot
    reach the threshold; 1 when ``confirm_runs`` is 0 (never confirm). ``documents``: the
    test's, all of them, so that a run of some (``-k``, a CI shard) holds the runs a run of
    all would."""
    if confirm_runs == 0:
        return 1
    target = level(alpha, metrics)
    k = 1 + confirm_runs
    while k < MOST_RUNS and unpaired_floor([(baseline_runs, k)] * documents) > target:
        k += 1
    return k


def cannot_fail(documents: int, baseline_runs: int, metrics: int, alpha: float,
                confirm_runs: int) -> str | None:
    """Why no design of the test's ``documents`` × ``baseline_runs`` × the runs a check
    holds (:func:`candidate_runs`) can fail it on a p-value, or None when one can."""
    candidate = candidate_runs(documents, baseline_runs, metrics, alpha, confirm_runs)
    floor = unpaired_floor([(baseline_runs, candidate)] * documents)
    target = level(alpha, metrics)
    if floor <= target:
        return None
    plural = "s" * (documents != 1)
    return (f"this test cannot fail: add documents or runs, or choose ragdive_verdict = band "
            f"({documents} document{plural} × {baseline_runs} baseline run"
            f"{'s' * (baseline_runs != 1)} × at most {candidate} candidate run"
            f"{'s' * (candidate != 1)} reach p {floor:.3g} at best; the threshold is "
            f"{target:.3g}, alpha {alpha:g} over {metrics} metric{'s' * (metrics != 1)}, "
            f"while every metric varies); until then only a change that leaves every run of "
            f"every document outside its band fails it, as an unchanged bot does at most "
            f"{floor:.3g} of the time per metric")
