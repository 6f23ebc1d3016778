"""What the plugin keeps for one pytest session: the items it collected (``collection``),
their dialogues (``runs``), their verdicts, and the bands an update will write at the end."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..engine.base.settings import SettingError
from . import applicable
from .collection import Collected, Collection, remove
from .marker import MARKER, function_key
from .options import ItemSettings, Options
from .runs import Runs

if TYPE_CHECKING:
    from ..engine.base.judges import Judges
    from ..engine.base.models import Dialogue, Document, DocumentGroup
    from ..engine.conversation.asking import RagAdapter
    from ..llm.client import LLMClient
    from .estimate import Counted, Estimates
    from .records import BandDoc, FunctionResult, ItemResult
    from .run_record import Outcome

STATE = pytest.StashKey["RagdiveSession"]()


class WorkerOutput(Collected):
    """What an xdist worker sends the controller (``workeroutput``, plain data)."""
    notes: list[str]
    not_english: list[str]
    results: dict[str, dict[str, Any]]  # node id -> ItemResult as JSON
    estimates: Counted  # --ragdive-estimate: what the worker counted


class RagdiveSession:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = Options(config)
        self.update = self.options.update
        self._client: LLMClient | None = None
        self.collection = Collection()
        self.results: dict[str, ItemResult] = {}
        self.aggregates: list[FunctionResult] = []
        self._aggregate_bands: dict[Path, BandDoc] = {}
        self._judged = False
        self.unused: list[str] = []
        self.notes: set[str] = set()
        self.runs = Runs(config, self.options, self.client, self.notes)
        self.outcomes: dict[str, tuple[Outcome, str]] = {}  # node id -> (outcome, message)
        self.started = datetime.now(UTC)
        self.estimates: Estimates | None = None  # --ragdive-estimate: items counted, not run
        if self.options.get("estimate"):
            from .estimate import Estimates

            self.estimates = Estimates(self.options, self.notes, self.calls_made)

    # -- settings and shared parts ----------------------------------------------------

    def settings(self, item: pytest.Item) -> ItemSettings:
        marker = item.get_closest_marker(MARKER)
        kwargs = dict(marker.kwargs) if marker else {}
        return self.options.for_item(kwargs, f"{item.nodeid}: ragdive.conversation",
                                     module_dir=item.path.parent, rootdir=self.config.rootpath)

    def client(self) -> LLMClient:
        if self._client is None:
            from ..llm.cache import ResponseCache
            from ..llm.client import LLMClient

            self._client = LLMClient(
                ResponseCache(self.cache_dir(), self.options.get("record_mode")),
                concurrency=self.options.get("concurrency"),
                timeout=self.options.get("call_timeout"),
                retries=self.options.get("retries"),
                retry_wait=self.options.get("retry_wait"),
                retry_budget=self.options.get("retry_budget"),
                structured_output=self.options.get("structured_output"),
            )
        return self._client

    def calls_made(self) -> int:
        return self._client.calls_made if self._client else 0

    def cache_dir(self) -> Path:
        directory = Path(self.options.get("cache_dir"))
        return directory if directory.is_absolute() else self.config.rootpath / directory

    def _check_cache_dir(self) -> None:
        """Recording needs a writable cache folder: say so once, before any item runs."""
        if self.options.get("record_mode") == "none":
            return
        folder = self.cache_dir()
        existing = next(p for p in (folder, *folder.parents) if p.exists())
        if not (existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)):
            raise pytest.UsageError(
                f"the ragdive response cache {folder} cannot be written ({existing} is not a "
                f"writable folder), and record mode {self.options.get('record_mode')!r} records "
                f"there. Make it writable, choose another folder with --ragdive-cache-dir, or "
                f"replay only with --ragdive-record-mode=none.")

    # -- collection ---------------------------------------------------------------

    def collected(self, items: list[pytest.Item]) -> None:
        marked = [item for item in items if item.get_closest_marker(MARKER) is not None]
        if not marked:
            return
        self._check_cache_dir()
        partial = {arg.split("::", 1)[0] for arg in self.config.args if "::" in arg}
        documents: dict[str, tuple[ItemSettings, list[Any]]] = {}
        for item in marked:
            settings = self.settings(item)  # a bad option or ini value fails the collection
            self.collection.add(item, partial)
            params = getattr(item, "callspec", None)
            document = params.params.get("ragdive_document") if params else None
            documents.setdefault(function_key(item), (settings, []))[1].append(document)
            if document is not None:
                _check_role(item, settings, document)
        for function, (settings, docs) in documents.items():
            if settings.openers and all(d is not None for d in docs):
                from ..engine.base.models import DocumentGroup
                from ..engine.documents.openers import check_documents

                known = [m for d in docs for m in DocumentGroup.of(d).documents]
                try:
                    check_documents(settings.openers, known, function)
                except ValueError as exc:
                    raise pytest.UsageError(str(exc)) from None

    def selected(self, items: list[pytest.Item]) -> None:
        marked = [item for item in items if item.get_closest_marker(MARKER) is not None]
        if marked:  # a bad judge profile file stops the run before any item
            self.options.profiles()
        for item in marked:
            self.collection.choose(item)

    # -- running ------------------------------------------------------------------

    def dialogue_for(
        self, item: pytest.Item, adapter: RagAdapter, judges: Judges,
        document: Document | DocumentGroup,
    ) -> Dialogue:
        documents = len(self.collection.all_items.get(function_key(item), [item]))
        if self.estimates is not None:  # counted, then skipped: no dialogue, no model call
            self.estimates.count(item, self.settings(item), self.runs.judges(judges), document,
                                 documents)
        return self.runs.run(item, adapter, judges, document, self.settings(item),
                             self.collection.later(item), documents)

    # -- checking -----------------------------------------------------------------

    def check_dialogue(self, item: pytest.Item) -> None:
        """Before the test body: the dialogue's own errors."""
        from .gate import check_dialogue

        entry = self.runs.dialogues.get(item.nodeid)
        if entry is not None:
            settings, judges, dialogues = entry
            check_dialogue(
                item, settings, judges, dialogues, results=self.results,
                aggregate_file=self.collection.aggregate_files.get(function_key(item)),
                keep_dialogue=bool(self.options.get("report") or self.options.get("json")),
                update=self.update,
            )

    def check_band(self, item: pytest.Item) -> None:
        """After the test body: the band (on update, the band to write)."""
        from .gate import check_band

        entry = self.runs.dialogues.get(item.nodeid)
        if entry is not None:
            settings, _, dialogues = entry
            check_band(item, settings, dialogues, self.results[item.nodeid], update=self.update,
                       verdict=self.options.get("verdict"), margin=self.options.get("band_margin"),
                       fail_on_improvement=self.options.get("fail_on_improvement"))

    def outcome(self, report: pytest.TestReport) -> None:
        """What pytest reported for an item (on the xdist controller too), for the report."""
        if report.when != "call" and report.passed:
            return
        kind: Outcome = report.outcome if report.when == "call" or report.skipped else "error"
        if report.failed:
            text = report.longreprtext
        elif report.skipped and isinstance(report.longrepr, tuple):
            text = str(report.longrepr[2])  # the skip reason
        else:
            text = ""
        self.outcomes[report.nodeid] = (kind, text[-4000:])

    # -- end of session -----------------------------------------------------------

    def worker_output(self) -> WorkerOutput:
        """What a worker sends the xdist controller, as plain data: its items' results as
        JSON (read back by :meth:`merge`), its collection and its notes."""
        return {**self.collection.output(), "notes": sorted(self.notes),
                "not_english": sorted(self.runs.not_english),
                "estimates": self.estimates.output() if self.estimates else {},
                "results": {n: r.model_dump(mode="json") for n, r in self.results.items()}}

    def merge(self, output: WorkerOutput) -> None:
        """A worker's :meth:`worker_output`, on the xdist controller."""
        from .records import ItemResult

        self.results.update({n: ItemResult.model_validate(r)
                             for n, r in output["results"].items()})
        self.notes.update(output["notes"])
        self.runs.not_english.update(output["not_english"])
        self.collection.merge(output)
        if self.estimates is not None:
            self.estimates.merge(output["estimates"])

    def judge(self) -> list[pytest.TestReport]:
        """Once every item ran: each test function's verdict as a report of its own (none
        on update, which records instead)."""
        from . import aggregate, decision

        self.aggregates, self._aggregate_bands = aggregate.evaluate(
            self.collection.chosen, self.collection.all_items, self.results,
            margin=self.options.get("band_margin"), update=self.update,
            verdict=self.options.get("verdict"), alpha=self.options.get("alpha"),
        )
        self._judged = True
        if self.update:
            return []
        return [rep for row in self.aggregates if (rep := decision.report(row)) is not None]

    def finish(self, interrupted: bool) -> bool:
        """On update write every band at once (none when the run was interrupted) and
        remove unused ones; write the reports. True when the session must fail."""
        if not self.collection.all_items or self.estimates is not None:
            return False  # an estimate writes no band and no report, and removes none
        from . import aggregate, bands

        if not self._judged:  # the test loop did not end normally
            self.judge()
        aggregate_bands = self._aggregate_bands
        collection = self.collection
        self.unused = sorted({*aggregate.unused_files(collection.scopes,
                                                      collection.expected_files),
                              *collection.orphaned()})
        if self.update:
            if interrupted:
                self.notes.add("the update was interrupted: no band was written (the response "
                               "cache keeps the calls made, so running it again is quicker)")
                self.unused = []
                return True
            docs, notes = aggregate.complete_updates(collection.chosen, self.results,
                                                     aggregate_bands)
            self.notes.update(notes)
            bands.write_all(docs)
            remove(self.unused)
        self._write_reports()
        return False

    def _write_reports(self) -> None:
        html, json_path = self.options.get("report"), self.options.get("json")
        markdown = self.options.markdown
        if not (html or json_path or markdown):
            return
        from . import outputs
        from .run_record import RunRecord

        get = self.options.get
        run = RunRecord.build(
            settings=outputs.settings(self.results, seed=get("seed"), update=self.update,
                                      record_mode=get("record_mode"), verdict=get("verdict"),
                                      alpha=get("alpha"), margin=get("band_margin")),
            started=self.started,
            duration_s=(datetime.now(UTC) - self.started).total_seconds(),
            chosen=self.collection.chosen, collected=self.collection.all_items,
            results=self.results, outcomes=self.outcomes, aggregates=self.aggregates,
        )
        for target in outputs.write(run, html, json_path, markdown, self.unused):
            self.notes.add(f"ragdive report written to {target}")

    def summary(self, reporter: Any) -> None:
        if self.estimates is not None:
            self.estimates.write(reporter)
            return

        self.notes.update(applicable.notes(self.results))
        if self.runs.not_english:
            from ..engine.validation.validator import ENGLISH_ONLY

            names = ", ".join(sorted(self.runs.not_english))
            self.notes.add(f"{len(self.runs.not_english)} document(s) not in English: {names}; "
                           f"the exact checks that read English ({', '.join(sorted(ENGLISH_ONLY))}) "
                           f"were not applied to them, and their follow-ups were not rewritten")
        if not self.results and not self.unused and not self.notes:
            return
        from .report import write_summary

        write_summary(reporter, aggregates=self.aggregates, results=self.results,
                      notes=self.notes, unused=self.unused, update=self.update)

    def close(self) -> None:
        self.runs.close()


def _check_role(item: pytest.Item, settings: ItemSettings,
                document: Document | DocumentGroup) -> None:
    """A role that needs a group of documents (``switching``) on an item of one fails the
    collection, naming the fix."""
    from ..engine.base.models import DocumentGroup
    from ..engine.roles.registry import role

    try:
        role(settings.role).check_group(
            DocumentGroup.of(document), item.nodeid,
            "make each item a group of documents: ragdive.document_fixture('kb/*.md', "
            "group=2), group=2 in the marker, or ragdive_document_group = 2 in the ini file")
    except SettingError as exc:
        raise pytest.UsageError(str(exc)) from None
