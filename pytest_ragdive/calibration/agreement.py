"""How a judge's scores agree with labels: balanced accuracy and AUC with 95% intervals,
and thresholds fitted on some cases and tried on others. "Positive" is label 1."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

Z = 1.96  # the normal quantile of a two-sided 95% interval


@dataclass(frozen=True)
class Counts:
    """A verdict's confusion matrix against the labels."""

    tp: int
    fn: int
    tn: int
    fp: int

    @classmethod
    def of(cls, predicted: Sequence[int], labels: Sequence[int]) -> Counts:
        pairs = list(zip(predicted, labels, strict=True))
        return cls(tp=sum(bool(p and y) for p, y in pairs),
                   fn=sum(bool(not p and y) for p, y in pairs),
                   tn=sum(bool(not p and not y) for p, y in pairs),
                   fp=sum(bool(p and not y) for p, y in pairs))

    @property
    def cases(self) -> int:
        return self.tp + self.fn + self.tn + self.fp

    @property
    def balanced_accuracy(self) -> float:
        return (self.tp / max(1, self.tp + self.fn) + self.tn / max(1, self.tn + self.fp)) / 2

    def interval(self) -> tuple[float, float]:
        """The 95% interval of the balanced accuracy: the normal approximation of the mean
        of the two rates, each with one success and one failure added (Agresti-Caffo), so
        that a rate of 0 or 1 on few cases keeps its uncertainty."""
        def variance(right: int, wrong: int) -> float:
            rate = (right + 1) / (right + wrong + 2)
            return rate * (1 - rate) / (right + wrong + 2)

        half = Z * math.sqrt(variance(self.tp, self.fn) + variance(self.tn, self.fp)) / 2
        centre = self.balanced_accuracy
        return max(0.0, centre - half), min(1.0, centre + half)


def balanced(predicted: Sequence[int], labels: Sequence[int]) -> float:
    return Counts.of(predicted, labels).balanced_accuracy


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Probability that a random positive case scores above a random negative one."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    pairs = [(p > n) + 0.5 * (p == n) for p in pos for n in neg]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def auc_interval(value: float, positives: int, negatives: int) -> tuple[float, float]:
    """The 95% interval of an AUC from its standard error (Hanley and McNeil, 1982)."""
    if not positives or not negatives or math.isnan(value):
        return 0.0, 1.0
    q1, q2 = value / (2 - value), 2 * value ** 2 / (1 + value)
    variance = (value * (1 - value) + (positives - 1) * (q1 - value ** 2)
                + (negatives - 1) * (q2 - value ** 2)) / (positives * negatives)
    half = Z * math.sqrt(max(variance, 0.0))
    return max(0.0, value - half), min(1.0, value + half)


def best_threshold(scores: Sequence[float], labels: Sequence[int]) -> float:
    """The threshold with the best balanced accuracy on these cases (a score at or above
    it is positive; the one nearest 0.5 among equals)."""
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
