"""A test function's verdict, reported to pytest as an outcome of its own.

Its node id is the function's (``path::test_name``), so the terminal, ``-n`` runs, JUnit
XML and the reports show it like a test, and a failing verdict fails the session the way
a failing test does. Under the permutation verdict it comes from ``verdict.decide`` over
the documents' runs; under the band verdict from the aggregate band.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pytest

from . import reach
from .records import FunctionResult, ItemResult, Status
from .run_record import DIGITS
from .verdict import MetricVerdict, decide

#: metric -> document -> one value per run
_ByDocument = dict[str, dict[str, list[float]]]


def permutation(row: FunctionResult, usable: Mapping[str, ItemResult], collected: int,
                alpha: float, margin: float) -> None:
    """Put the permutation verdict of a test function's usable items into its ``row``, and
    say when the test cannot fail on a p-value (:func:`.reach.cannot_fail`)."""
    baseline, candidate, base_seeds, cand_seeds = _runs(usable.values())
    row.left_band = {n: r.left_band for n, r in usable.items() if r.left_band}
    suspects = {m for r in usable.values() for m in r.left_band_metrics}
    # band files hold runs to DIGITS places: a run within half a unit of its band is in it
    verdicts = decide(baseline, candidate, alpha=alpha, suspects=suspects,
                      margin=margin + 0.5 * 10 ** -DIGITS,
                      seeds=(base_seeds, cand_seeds)) if baseline else []
    row.verdicts = verdicts
    if not verdicts:
        row.status = Status.SKIPPED
        row.note = ("no verdict: no item of this test has a usable band with its runs; "
                    "record the bands again with --ragdive-update")
        return
    found = {v.verdict for v in verdicts}
    row.status = (Status.REGRESSED if "worse" in found
                  else Status.INCONCLUSIVE if "inconclusive" in found else Status.PASSED)
    unreachable = reach.cannot_fail(
        collected, min(len(runs) for by_doc in baseline.values() for runs in by_doc.values()),
        len(verdicts), alpha, min(r.confirm_runs for r in usable.values()))
    if unreachable:
        row.note = "; ".join(filter(None, [row.note, unreachable]))
    documents = len({d for by_doc in candidate.values() for d in by_doc})
    runs = sorted({len(r.runs[m]) for r in usable.values() for m in r.runs})
    row.design = _design(documents, collected, runs, verdicts, alpha)


def _runs(usable: Iterable[ItemResult]
          ) -> tuple[_ByDocument, _ByDocument, dict[str, dict[str, list[int]]],
                     dict[str, dict[str, list[int | None]]]]:
    """The baseline's and the candidate's runs (and their seeds, where both have them) of
    each metric an item's band holds runs of, by document."""
    baseline: _ByDocument = {}
    candidate: _ByDocument = {}
    base_seeds: dict[str, dict[str, list[int]]] = {}
    cand_seeds: dict[str, dict[str, list[int | None]]] = {}
    for record in usable:
        metrics = record.band_doc.metrics if record.band_doc else {}
        for metric, stats in metrics.items():
            if metric in record.runs and stats.runs:
                doc = record.document
                baseline.setdefault(metric, {})[doc] = stats.runs
                candidate.setdefault(metric, {})[doc] = record.runs[metric]
                if stats.seeds and metric in record.seeds:
                    base_seeds.setdefault(metric, {})[doc] = stats.seeds
                    cand_seeds.setdefault(metric, {})[doc] = record.seeds[metric]
    return baseline, candidate, base_seeds, cand_seeds


def _design(documents: int, collected: int, runs: list[int], verdicts: list[MetricVerdict],
            alpha: float) -> str:
    """What the permutation verdict stood on: documents, runs and Holm's family."""
    tested = sum(v.tested for v in verdicts)
    untested = [v.metric for v in verdicts if not v.tested]
    return (f"{documents} of {collected} document{'s' * (collected != 1)}, "
            f"{runs[0]}{f'-{runs[-1]}' if len(runs) > 1 else ''} candidate run"
            f"{'s' * (runs[-1] != 1)} each; "
            + (f"Holm over {tested} metric{'s' * (tested != 1)} at alpha {alpha:g}"
               if tested else f"no metric can reach alpha {alpha:g}")
            + (f" ({', '.join(untested)}: cannot reach it on these scores)"
               if untested and tested else ""))


def describe(row: FunctionResult) -> str:
    """The verdict as text: the floors and ceilings missed first (the first line is what a
    failure is summed up by), then the baseline's verdict, then those met."""
    missed = [limit.describe() for limit in row.missed]
    met = [f"  {limit.describe()}" for limit in row.limits if not limit.failed]
    return "\n".join([*missed, _against_baseline(row), *met])


def _against_baseline(row: FunctionResult) -> str:
    """The baseline's verdict as text: a line per metric, then where to look."""
    if row.rule == "band":
        worse = [m for m, w in row.deviations if w]
        lines = [f"aggregate band (the mean over {row.documents} documents): {row.status}"]
        for metric in worse:
            low, high = row.band[metric]
            lines.append(f"  {metric} mean {row.means[metric]:.3f}, band [{low:.3f}, "
                         f"{high:.3f}] (worse)")
        if row.note:
            lines.append(f"  {row.note}")
        return "\n".join(lines)
    worse = [v.metric for v in row.verdicts if v.verdict == "worse"]
    headline = (f"worse than the baseline: {', '.join(worse)}" if worse
                else f"permutation verdict: {row.status}")
    lines = [headline, f"  over {row.design}"]
    for v in row.verdicts:
        lines.append(f"  {v.metric:<18} {v.verdict:<12} {v.reason}")
    if row.note:
        lines.append(f"  {row.note}")
    if row.left_band:
        lines.append("  where to look (first runs outside their item band):")
        for nodeid, problems in sorted(row.left_band.items()):
            lines += [f"    {nodeid}"] + [f"      {p}" for p in problems]
    return "\n".join(lines)


def report(row: FunctionResult) -> pytest.TestReport | None:
    """The test function's report, or None when nothing was decided (only some of its
    documents ran under the band verdict, or none had a usable band) and no floor or
    ceiling failed. It fails when the baseline's verdict or a floor or ceiling does."""
    if row.status in (Status.SKIPPED, Status.RECORDED) and not row.missed:
        return None
    function = row.function
    path, line, name = row.location or (function.split("::", 1)[0], None,
                                        function.rsplit("::", 1)[-1])
    failed = row.status == Status.REGRESSED or bool(row.missed)
    text = describe(row)
    properties = [(f"ragdive.verdict.{v.metric}", v.verdict) for v in row.verdicts]
    properties += [(f"ragdive.{limit.kind}.{limit.metric}", limit.describe())
                   for limit in row.limits]
    return pytest.TestReport(
        nodeid=function, location=(path, line, name), keywords={name: 1},
        outcome="failed" if failed else "passed", longrepr=text if failed else None,
        when="call", sections=[] if failed else [("ragdive verdict", text)],
        user_properties=[("ragdive.verdict", row.status.value), *properties],
    )


def _phase(call: pytest.TestReport, when: str) -> pytest.TestReport:
    """The passing setup or teardown around a verdict (JUnit XML reads properties from
    the teardown)."""
    return pytest.TestReport(nodeid=call.nodeid, location=call.location, keywords=call.keywords,
                             outcome="passed", longrepr=None, when=when,  # type: ignore[arg-type]
                             user_properties=call.user_properties if when == "teardown" else [])


def log(session: pytest.Session, reports: list[pytest.TestReport]) -> None:
    """Hand the reports to pytest as a runner would (terminal, JUnit XML, counts); counted
    as collected, so that the progress shown still ends at 100%."""
    session.testscollected += len(reports)
    hook = session.config.hook
    for rep in reports:
        hook.pytest_runtest_logstart(nodeid=rep.nodeid, location=rep.location)
        for phase in (_phase(rep, "setup"), rep, _phase(rep, "teardown")):
            hook.pytest_runtest_logreport(report=phase)
        hook.pytest_runtest_logfinish(nodeid=rep.nodeid, location=rep.location)
