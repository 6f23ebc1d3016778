"""What would decide an inconclusive verdict: the change a design detects 80% of the time,
and how many documents would detect the change observed.

A normal approximation of the verdict's statistic (the mean over documents of each
document's change), from the runs' own spread: the exact test decides, this only sizes the
next design ("about"). Sizing by power, not by the smallest reachable p, is Miller's
"Adding Error Bars to Evals" (2024), section 5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

POWER = 0.8
MOST_DOCUMENTS = 1000  # beyond this, "more than": no one runs such a suite


def pooled_sd(groups: Sequence[np.ndarray]) -> float:
    """The within-group standard deviation pooled over groups of two or more values."""
    squares = sum(float(((g - g.mean()) ** 2).sum()) for g in groups if g.size > 1)
    freedom = sum(g.size - 1 for g in groups if g.size > 1)
    return math.sqrt(squares / freedom) if freedom else 0.0


def unpaired_spread(strata: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """(run-to-run SD, variance factor per document) of the stratified difference in means.

    The SD is the baseline runs' within-document spread; where they never vary (a band
    [0, 0]) every run's, baseline and candidate together, so that a first noisy run still
    gets a size."""
    sd = pooled_sd([b for b, _ in strata]) or pooled_sd([np.concatenate(s) for s in strata])
    return sd, float(np.mean([1 / b.size + 1 / c.size for b, c in strata]))


def paired_spread(differences: Sequence[np.ndarray]) -> tuple[float, float]:
    """(SD of one pair's difference, variance factor per document) of the mean difference."""
    values = np.concatenate(differences)
    sd = float(np.sqrt(np.mean(values ** 2)))  # under no change the mean difference is 0
    return sd, float(np.mean([1 / d.size for d in differences]))


def _z(level: float) -> float:
    normal = NormalDist()
    return normal.inv_cdf(1 - level) + normal.inv_cdf(POWER)


def detectable(sd: float, factor: float, documents: int, level: float) -> float:
    """The change a one-sided test at ``level`` detects with 80% power."""
    return _z(level) * sd * math.sqrt(factor / documents)


def documents_for(change: float, sd: float, factor: float, level: float,
                  labellings: float = math.inf) -> int | None:
    """Documents (at the same runs each) that detect ``change`` with 80% power; None past
    ``MOST_DOCUMENTS``. With ``labellings`` per document (C(R + k, k) unpaired, 2^n for n
    pairs) at least as many as let the exact test reach ``level`` at all."""
    if change <= 0:
        return None
    needed = math.ceil(factor * (_z(level) * sd / change) ** 2)
    if labellings < math.inf:
        needed = max(needed, math.ceil(math.log(1 / level) / math.log(labellings) - 1e-9))
    return needed if needed <= MOST_DOCUMENTS else None


def advice(sd: float, factor: float, documents: int, floor: float, change: float,
           level: float) -> str:
    """E.g. "at the runs' spread (SD 0.21) this design detects a change of 0.35 80% of the
    time; about 20 documents would detect 0.150", for a design of ``documents`` whose
    smallest p is ``floor``."""
    if sd <= 0:
        return "the runs do not vary: add runs to size the design"
    text = (f"at the runs' spread (SD {sd:.2f}) this design detects a change of "
            f"{detectable(sd, factor, documents, level):.2f} {POWER:.0%} of the time")
    labellings = floor ** (-1 / documents) if floor < 1 else math.inf
    needed = documents_for(abs(change), sd, factor, level, labellings)
    if needed is not None and needed > documents:
        text += f"; about {needed} documents would detect {abs(change):.3f}"
    elif needed is None and change:
        text += f"; {abs(change):.3f} needs more than {MOST_DOCUMENTS} documents"
    return text
