"""Per test function: the mean of each metric over its documents against an aggregate
band (the paper's main use: a mean over many conversations is far steadier than one),
the permutation verdict over its documents' runs, and baseline files no collected test
owns any more."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from statistics import fmean
from typing import Literal

from ..engine.base.metrics import METRICS
from . import bands
from .reach import cannot_fail
from .records import UNUSABLE, BandDoc, FunctionResult, ItemResult, Limit, ProducedBy, Rule, Status


def evaluate(
    chosen: Mapping[str, list[str]],
    all_items: Mapping[str, list[str]],
    results: Mapping[str, ItemResult],
    *,
    margin: float,
    update: bool,
    verdict: Rule = "band",
    alpha: float = 0.05,
) -> tuple[list[FunctionResult], dict[Path, BandDoc]]:
    """One row per test function that ran (its means, band, verdict, status, and floors and
    ceilings held), and on update the aggregate bands to write."""
    rows: list[FunctionResult] = []
    to_write: dict[Path, BandDoc] = {}
    for function, nodeids in chosen.items():
        ran = [results[n] for n in nodeids if n in results]
        if not ran:
            continue
        row = FunctionResult(function=function, documents=len(ran),
                             means=_means([r.scores for r in ran]), rule=verdict,
                             location=ran[0].location)
        rows.append(row)
        # beside the baseline's verdict, on the same means: failing in a check only
        row.limits = held(row.means, ran[0], enforced=not update)
        path = Path(ran[0].aggregate_file or "")
        recorded = _aggregate(row, ran, path, margin, update,
                              complete=sorted(nodeids) == sorted(all_items.get(function, []))
                              and len(ran) == len(nodeids))
        if recorded is not None:
            to_write[path] = recorded
        documents = len(all_items.get(function, nodeids))
        if update:
            if verdict == "permutation":
                row.note = "; ".join(filter(None, [row.note, _unreachable(ran, documents,
                                                                          alpha)]))
            continue
        if verdict == "permutation":
            from .decision import permutation

            permutation(row, {n: results[n] for n in nodeids if n in results
                              and results[n].status not in UNUSABLE}, documents, alpha, margin)
        damage = _damage(path)
        if damage:  # whatever the rule and the documents that ran: a damaged file is refused
            row.status, row.note = Status.REGRESSED, damage
    return rows, to_write


def held(means: Mapping[str, float], result: ItemResult, *, enforced: bool) -> list[Limit]:
    """The floors and ceilings of ``result``'s test function with the ``means`` held to them
    (``enforced``: in a check, where one not met fails the test's verdict)."""
    kinds: list[tuple[Literal["floor", "ceiling"], dict[str, float]]] = [
        ("floor", result.floors), ("ceiling", result.ceilings)]
    return [Limit(metric=metric, kind=kind, bound=bound, mean=means.get(metric),
                  enforced=enforced)
            for kind, bounds in kinds for metric, bound in bounds.items()]


def _aggregate(row: FunctionResult, ran: list[ItemResult], path: Path, margin: float,
               update: bool, complete: bool) -> BandDoc | None:
    """The test's aggregate band into ``row``: checked, or on update recorded (returned, to
    write); skipped when only some documents ran or some have no usable result."""
    if not complete:
        row.status = Status.SKIPPED
        row.note = "aggregate band not checked: only some documents of this test ran"
    elif any(r.status in UNUSABLE for r in ran):
        row.status = Status.SKIPPED
        row.note = "aggregate band not checked: some items have no usable result"
    elif update:
        recorded = _band(ran)
        row.band = {m: (s.min, s.max) for m, s in recorded.metrics.items()}
        row.status, row.doc = Status.RECORDED, recorded
        return recorded
    else:
        _check(row, path, margin)
    return None


def _damage(path: Path) -> str | None:
    """Why the aggregate band at ``path`` cannot be read, if it is there and cannot."""
    try:
        bands.read(path)
    except bands.BaselineError as exc:
        return str(exc)
    return None


def _unreachable(ran: list[ItemResult], documents: int, alpha: float) -> str:
    """On update, what every check will say when the test of ``documents`` cannot fail on a
    p-value (:func:`.reach.cannot_fail`), or ""."""
    runs = [len(values) for r in ran for values in r.runs.values()]
    if not runs:  # nothing was recorded: the update says why
        return ""
    return cannot_fail(documents, min(runs), max(len(r.runs) for r in ran), alpha,
                       min(r.confirm_runs for r in ran)) or ""


def _check(row: FunctionResult, path: Path, margin: float) -> None:
    try:
        doc = bands.read(path)
        if doc is None:
            row.status = Status.REGRESSED
            row.note = f"no aggregate band at {path}; record it with --ragdive-update"
            return
        recorded = doc.produced_by.documents
        if recorded is not None and recorded != row.documents:  # a mean over other documents
            row.status = Status.REGRESSED
            row.note = (f"the aggregate band {path} was recorded over {recorded} documents, "
                        f"this run has {row.documents}; record it again with "
                        f"--ragdive-update")
            return
        row.band = {m: (s.min, s.max) for m, s in doc.metrics.items()}
        row.doc = doc
        deviations = bands.compare(doc, row.means, margin)
    except bands.BaselineError as exc:
        row.status, row.note = Status.REGRESSED, str(exc)
        return
    row.deviations = [(d.metric, d.worse) for d in deviations]
    row.status = (Status.REGRESSED if any(d.worse for d in deviations)
                  else Status.IMPROVED if deviations else Status.PASSED)


def _means(scores: list[dict[str, float]]) -> dict[str, float]:
    metrics = sorted({m for s in scores for m in s})
    return {m: fmean(s[m] for s in scores if m in s) for m in metrics}


def _band(ran: list[ItemResult]) -> BandDoc:
    """The band of the mean over documents of one run each: as many runs as every document
    has for the metric (a run a judge could not score is left out of its document's); a
    metric that some documents' runs could not score at all (:mod:`.applicable`), over the
    others, as a check's mean is."""
    metrics = sorted({m for r in ran for m in r.runs})
    having = {m: [r for r in ran if m in r.runs] for m in metrics}
    values = {m: [fmean(r.runs[m][i] for r in having[m])
                  for i in range(min(len(r.runs[m]) for r in having[m]))] for m in metrics}
    produced = ran[0].produced_by
    assert produced is not None  # every item of an update was recorded
    given = produced.model_dump(exclude={"turns_held"}) | {"documents": len(ran)}
    if set(produced.metrics) != set(metrics):
        given["metrics"] = [m for m in METRICS if m in values]
    return bands.band(values, ProducedBy.model_validate(given))


def complete_updates(
    chosen: Mapping[str, list[str]],
    results: Mapping[str, ItemResult],
    aggregate_bands: dict[Path, BandDoc],
) -> tuple[dict[Path, BandDoc], list[str]]:
    """The bands an update writes: all of a test function's, or none when one of its chosen
    items could not be recorded (a half-updated test would be judged against a mix); and a
    note for each test left as it was."""
    out = dict(aggregate_bands)  # only made when every item of the test was recorded
    notes = []
    for function, nodeids in chosen.items():
        records = [results.get(n) for n in nodeids]
        failed = [n for n, r in zip(nodeids, records) if not r or r.status != Status.RECORDED]
        if failed:
            notes.append(f"{function}: no band written, because {', '.join(failed)} could "
                         f"not be recorded; fix it and run --ragdive-update again")
            continue
        out.update({Path(r.file): r.band for r in records if r and r.band})
    return out, notes


def unused_files(scopes: Mapping[str, list[str] | None], expected: set[str]) -> list[str]:
    """Band files in the baseline folders of collected modules that no test owns.
    ``scopes`` maps a folder to the test functions collected from it (None: all)."""
    unused = []
    for folder, functions in scopes.items():
        directory = Path(folder)
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.json")):
            if str(path) in expected:
                continue
            owner = path.name.split("[", 1)[0].removesuffix(".json").removesuffix(".aggregate")
            if functions is None or owner in functions:
                unused.append(str(path))
    return unused
