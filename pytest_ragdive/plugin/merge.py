"""The records of CI shards (``--ragdive-json`` of each) decided as one session would be.

Each shard runs some documents of a test; the test's verdict needs all of them. ``merge``
puts the shards' item results together and decides with the session's own code
(``aggregate.evaluate``, hence the same permutation test or band rule), prints the same
summary, writes the same reports, and, when the shards were an update, the aggregate bands
that no shard could write alone.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from . import aggregate, bands
from .outputs import write
from .records import ItemResult, Rule
from .report import write_summary
from .run_record import Outcome, RunRecord


class MergeError(ValueError):
    """Records that cannot be one session; the message says why."""


class _Terminal:
    """What ``report.write_summary`` writes to, on standard output."""

    def write_sep(self, sep: str, title: str) -> None:
        print(f" {title} ".center(79, sep))

    def write_line(self, line: str, **markup: bool) -> None:
        print(line)


def combine(records: Sequence[RunRecord]) -> RunRecord:
    """One record from the shards': the verdicts decided over all their items."""
    if not records:
        raise MergeError("no record to merge")
    settings = _settings(records)
    chosen: dict[str, list[str]] = {}
    collected: dict[str, list[str]] = {}
    results: dict[str, ItemResult] = {}
    outcomes: dict[str, tuple[Outcome, str]] = {}
    for run in records:
        for test in run.tests:
            known = collected.setdefault(test.key, test.collected)
            if known != test.collected:
                raise MergeError(f"{test.key}: the shards collected different items; merge "
                                 f"the shards of one checkout only")
            for item in test.items:
                if item.nodeid in results:
                    raise MergeError(f"{item.nodeid} is in two records: each item belongs to "
                                     f"one shard")
                chosen.setdefault(test.key, []).append(item.nodeid)
                if item.result is not None:  # an item that failed before its dialogue has none
                    results[item.nodeid] = item.result
                outcomes[item.nodeid] = (item.outcome, item.message)
    _check_baselines(chosen, results)
    update = "(update)" in settings.get("seeds", "")
    margin = float(settings.get("band margin", 0.0))
    rows, to_write = aggregate.evaluate(chosen, collected, results, margin=margin, update=update,
                                        verdict=cast(Rule, settings.get("verdict", "band")),
                                        alpha=float(settings.get("alpha", 0.05)))
    if update:
        bands.write_all(to_write)
    write_summary(_Terminal(), aggregates=rows, results=results, notes=set(), unused=[],
                  update=update)
    started = min((r.started for r in records if r.started), default=datetime.now(UTC))
    return RunRecord.build(settings=settings, started=started,
                           duration_s=max(r.duration_s for r in records), chosen=chosen,
                           collected=collected, results=results, outcomes=outcomes,
                           aggregates=rows)


def _settings(records: Sequence[RunRecord]) -> dict[str, str]:
    """The shards' settings, which must agree (a shard whose items all failed before a
    dialogue knows fewer)."""
    settings: dict[str, str] = {}
    for run in records:
        for key, value in run.settings.items():
            if settings.setdefault(key, value) != value:
                raise MergeError(f"the records were made with different settings ({key}: "
                                 f"{settings[key]!r} and {value!r}); merge the shards of one "
                                 f"run only")
    return settings


def _check_baselines(chosen: dict[str, list[str]], results: dict[str, ItemResult]) -> None:
    """Refuse shards of one test checked against bands recorded with other settings."""
    for key, nodeids in chosen.items():
        baselines = {repr(doc.produced_by) for n in nodeids
                     if n in results and (doc := results[n].band_doc)}
        if len(baselines) > 1:
            raise MergeError(f"{key}: the shards were checked against bands recorded with "
                             f"different settings; merge the shards of one checkout only")


def main(paths: Sequence[str], html: str = "", json_path: str = "", markdown: str = "") -> int:
    """Merge the records at ``paths``: 0 when every test passed, 1 when one failed, 2 when
    the records cannot be merged."""
    try:
        records = []
        for path in paths:
            try:
                records.append(RunRecord.model_validate_json(Path(path).read_text("utf-8")))
            except (OSError, ValueError) as exc:
                raise MergeError(f"{path} is not a ragdive record ({str(exc)[:200]}); give "
                                 f"the files that --ragdive-json wrote") from None
        merged = combine(records)
    except MergeError as exc:
        print(f"ragdive merge: {exc}", file=sys.stderr)
        return 2
    for target in write(merged, html, json_path, markdown):
        print(f"ragdive report written to {target}")
    return 1 if any(t.failed for t in merged.tests) else 0
