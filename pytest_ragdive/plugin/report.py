"""The terminal summary of a ragdive session."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .breakdown import merge, weakest
from .records import FunctionResult, ItemResult, Status

if TYPE_CHECKING:
    from .records import Limit


def write_summary(
    reporter: Any,
    *,
    aggregates: list[FunctionResult],
    results: Mapping[str, ItemResult],
    notes: set[str],
    unused: list[str],
    update: bool,
) -> None:
    """The table of test means against their aggregate bands, usage, notes."""
    reporter.write_sep("=", "ragdive summary")
    for row in aggregates:
        _write_test(reporter, row, results)
    if results:
        _write_usage(reporter, list(results.values()))
    improved = sorted(n for n, r in results.items() if r.status == Status.IMPROVED)
    if improved:
        reporter.write_line(
            f"{len(improved)} item(s) scored better than their band; if the change is "
            f"intended, accept it with --ragdive-update:"
        )
        for nodeid in improved:
            reporter.write_line(f"    {nodeid}")
    for note in sorted(notes):
        reporter.write_line(f"note: {note}")
    if unused:
        verb = "removed" if update else "unused (run --ragdive-update to remove)"
        reporter.write_line(f"{len(unused)} baseline file(s) {verb}:")
        for path in unused:
            reporter.write_line(f"    {path}")
    for row in aggregates:
        _write_outcome(reporter, row)


def _write_test(reporter: Any, row: FunctionResult, results: Mapping[str, ItemResult]) -> None:
    """A test function's means against its band (or its permutation verdict), and where
    to look."""
    n = row.documents
    missed = "".join(f", {m.metric} {m.outcome} its {m.kind}" for m in row.missed)
    reporter.write_line(f"{row.function}  ({n} document{'s' * (n != 1)}): {row.status}{missed}")
    verdicts = {v.metric: v for v in row.verdicts}
    limits = {limit.metric: limit for limit in row.limits}
    if verdicts:
        reporter.write_line(f"    permutation verdict: {row.design}")
    for metric, value in row.means.items():
        low_high = row.band.get(metric)
        band = f"[{low_high[0]:.3f}, {low_high[1]:.3f}]" if low_high else "-"
        mark = ""
        for name, worse in row.deviations:
            if name == metric:
                mark = "  << worse" if worse else "  >> better"
        verdict = verdicts.get(metric)
        if verdict:
            mark = f"   {verdict.verdict}: {verdict.reason}"
        held = _held(limits.pop(metric, None))
        reporter.write_line(f"    {metric:<18} mean {value:.3f}   band {band}{held}{mark}")
    for metric, limit in limits.items():  # held to a bound, and never scored
        reporter.write_line(f"    {metric:<18} not scored{_held(limit)}")
    if row.note:
        reporter.write_line(f"    {row.note}")
    spot = weakest(merge(r.breakdown for r in results.values() if r.function == row.function))
    if spot:
        reporter.write_line(f"    where the bot is weak: {spot}")
    for nodeid, record in sorted(results.items()):
        if record.function == row.function and record.unscored:
            reporter.write_line(f"    not scored, left out of its band or verdict: {nodeid}")
            for line in record.unscored:
                reporter.write_line(f"      {line[:300]}")
    for nodeid, problems in sorted(row.left_band.items()):
        reporter.write_line(f"    outside its band (shown, not failed): {nodeid}")
        for problem in problems:
            reporter.write_line(f"      {problem}")


def _held(limit: Limit | None) -> str:
    """A metric's floor or ceiling and whether its mean met it, for its summary line."""
    if limit is None:
        return ""
    text = f"   {limit.kind} {limit.bound:g}: {limit.outcome}"
    if limit.failed:
        return text + " (fails the test)"
    return text if limit.met else text + " (on update: the bands are recorded all the same)"


def _write_usage(reporter: Any, records: list[ItemResult]) -> None:
    """The dialogues held, the validator's rejections and the model calls they cost."""
    usage: dict[str, float] = {}
    for r in records:
        for key, value in r.usage.items():
            usage[key] = usage.get(key, 0) + value
    dialogues = sum(r.dialogues for r in records)
    turns = sum(r.turns for r in records)
    rejections = sum(r.rejections for r in records)
    generated = turns + rejections
    rate = rejections / generated if generated else 0.0
    why = sum((Counter(r.rejected_for) for r in records), Counter())
    causes = "".join(f", {c} {n}" for c, n in why.most_common())
    reporter.write_line(
        f"dialogues {dialogues}, turns {turns}, validator rejections {rejections} "
        f"({rate:.0%}{causes}), model calls {int(usage.get('calls', 0))}, "
        f"cache hits {int(usage.get('cache_hits', 0))}, tokens "
        f"{int(usage.get('prompt_tokens', 0))} in / {int(usage.get('completion_tokens', 0))} "
        f"out, cost ${usage.get('cost', 0.0):.4f}"
    )
    if usage.get("retried"):
        reporter.write_line(
            f"provider busy or failing: {int(usage['retried'])} model calls retried, "
            f"waiting {usage.get('waited_s', 0.0):.1f} s in all between attempts (summed "
            f"over calls; ini ragdive_retry_budget bounds each call's)")


def _write_outcome(reporter: Any, row: FunctionResult) -> None:
    """A failed or inconclusive test function, and why, in colour."""
    if row.missed:
        reporter.write_line(f"FAILED: {row.function}: "
                            + "; ".join(limit.describe() for limit in row.missed),
                            red=True, bold=True)
    unmet = [limit.describe() for limit in row.limits if not limit.enforced and not limit.met]
    if unmet:
        reporter.write_line(f"recorded, not failed (an update): {row.function}: "
                            f"{'; '.join(unmet)}; a check will fail", yellow=True)
    if row.status == Status.REGRESSED:
        left = any(worse for _, worse in row.deviations)
        worse = any(v.verdict == "worse" for v in row.verdicts)
        cause = ("worse than its baseline by more than run-to-run variation explains"
                 if worse
                 else "its mean over its documents left its aggregate band"
                 if left and row.rule == "band" else row.note)
        reporter.write_line(f"FAILED: {row.function}: {cause}", red=True, bold=True)
    elif row.status == Status.INCONCLUSIVE:
        reporter.write_line(f"inconclusive (not failed): {row.function}: the runs "
                            f"cannot tell a change from noise; see the reasons above",
                            yellow=True)
