"""Where the bot is weak: each metric's mean per turn position and per question type, over
every dialogue a test held, and the cell that stands out from the rest.

The paper looks for "whether performance deteriorates over successive turns"; teams ask
which kind of question (follow-up, clarification, correction, comparative) breaks their bot.
Cells are sums and counts, so the records of items (and of xdist workers) add up.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..engine.base.metrics import METRICS

if TYPE_CHECKING:
    from ..engine.base.models import Dialogue

#: a cell stands out when its mean is this much worse than the rest's, over this many turns
MARGIN = 0.25
MIN_TURNS = 3

Cells = dict[str, dict[str, dict[str, list[float]]]]  # axis -> metric -> cell -> [sum, n]


def cells(dialogues: Iterable[Dialogue]) -> Cells:
    """Sums and counts of each metric's turn scores by ``turn`` (1, 2, ...) and ``type`` (a
    switch or return turn of the role switching by that, ``switch`` or ``return``)."""
    out: Cells = {"turn": {}, "type": {}}
    for dialogue in dialogues:
        for turn in dialogue.turns:
            for metric, judgement in turn.judgements.items():
                if judgement.score is None:
                    continue
                for axis, cell in (("turn", str(turn.index)),
                                   ("type", turn.generated.topic_shift
                                    or turn.generated.question_type)):
                    entry = out[axis].setdefault(metric, {}).setdefault(cell, [0.0, 0])
                    entry[0] += judgement.score
                    entry[1] += 1
    return out


def merge(parts: Iterable[Cells]) -> Cells:
    """The cells of several records, added up."""
    out: Cells = {"turn": {}, "type": {}}
    for part in parts:
        for axis, by_metric in part.items():
            for metric, by_cell in by_metric.items():
                for cell, (total, n) in by_cell.items():
                    entry = out[axis].setdefault(metric, {}).setdefault(cell, [0.0, 0])
                    entry[0] += total
                    entry[1] += n
    return out


def table(merged: Cells) -> dict[str, dict[str, dict[str, tuple[float, int]]]]:
    """axis -> metric -> cell -> (mean, turns), cells in order (turns by number)."""
    def order(cell: str) -> tuple[int, str]:
        return (int(cell), "") if cell.isdigit() else (10**6, cell)

    return {axis: {metric: {cell: (total / n, int(n))
                            for cell, (total, n) in sorted(by_cell.items(),
                                                           key=lambda kv: order(kv[0]))}
                   for metric, by_cell in sorted(by_metric.items())}
            for axis, by_metric in merged.items()}


def weakest(merged: Cells) -> str | None:
    """The cell most clearly worse than the rest of its metric, said in a line; None when no
    cell of at least MIN_TURNS turns is MARGIN worse than the turns outside it."""
    best: tuple[float, str] | None = None
    for axis, by_metric in merged.items():
        for metric, by_cell in by_metric.items():
            higher = METRICS.get(metric, True)
            total = sum(s for s, _ in by_cell.values())
            count = sum(n for _, n in by_cell.values())
            for cell, (s, n) in by_cell.items():
                if n < MIN_TURNS or count - n < MIN_TURNS:
                    continue
                mean, rest = s / n, (total - s) / (count - n)
                gap = (rest - mean) if higher else (mean - rest)
                if gap >= MARGIN and (best is None or gap > best[0]):
                    where = f"turn {cell}" if axis == "turn" else f"{cell} questions"
                    best = (gap, f"{metric} is weakest at {where}: {mean:.2f} over {int(n)} "
                                 f"turns, {rest:.2f} over the other {int(count - n)}")
    return best[1] if best else None
