"""What the plugin keeps for one pytest session: the items it collected, their dialogues,
their verdicts, and the bands an update will write at the end."""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .marker import MARKER, function_key
from .options import ItemSettings, Options

if TYPE_CHECKING:
    from ..engine.dialogue import RagAdapter
    from ..engine.judges import Judges
    from ..engine.models import Dialogue, Document
    from ..llm.client import LLMClient
    from .run_record import Outcome
    from .scheduling import Progress, Runner

STATE = pytest.StashKey["RagdiveSession"]()


class RagdiveSession:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = Options(config)
        self.update = self.options.update
        self._runner: Runner | None = None
        self._progress: Progress | None = None
        self._client: LLMClient | None = None
        self._dialogues: dict[str, tuple[ItemSettings, Judges, list[Dialogue]]] = {}
        # function key -> node ids; "all" before deselection, "chosen" after
        self.all_items: dict[str, list[str]] = {}
        self.chosen: dict[str, list[str]] = {}
        self.aggregate_files: dict[str, str] = {}
        self.expected_files: set[str] = set()
        self.scopes: dict[str, list[str] | None] = {}  # baseline dir -> functions, None = all
        self.results: dict[str, dict[str, Any]] = {}
        self.aggregates: list[dict[str, Any]] = []
        self._aggregate_bands: dict[Path, dict[str, Any]] = {}
        self._judged = False
        self.unused: list[str] = []
        self.notes: set[str] = set()
        self._items: dict[str, list[pytest.Item]] = {}
        self._scopes: dict[str, str] = {}
        self.outcomes: dict[str, tuple[Outcome, str]] = {}  # node id -> (outcome, message)
        self.started = datetime.now(timezone.utc)

    # -- settings and shared parts ----------------------------------------------------

    def settings(self, item: pytest.Item) -> ItemSettings:
        marker = item.get_closest_marker(MARKER)
        kwargs = dict(marker.kwargs) if marker else {}
        return self.options.for_item(kwargs, f"{item.nodeid}: ragdive.conversation")

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
                structured_output=self.options.get("structured_output"),
            )
        return self._client

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
        from . import bands

        self._check_cache_dir()
        partial = {arg.split("::", 1)[0] for arg in self.config.args if "::" in arg}
        for item in marked:
            self.settings(item)  # a bad marker option or ini value fails the collection
            key = function_key(item)
            self.all_items.setdefault(key, []).append(item.nodeid)
            path = bands.item_path(item)
            self.expected_files.add(str(path))
            self.aggregate_files[key] = str(bands.aggregate_path(item))
            self.expected_files.add(self.aggregate_files[key])
            is_partial = any(Path(p).resolve() == item.path.resolve() for p in partial)
            functions = self.scopes.setdefault(str(path.parent), [] if is_partial else None)
            if functions is not None:
                functions.append(path.name.split("[", 1)[0].removesuffix(".json"))

    def selected(self, items: list[pytest.Item]) -> None:
        for item in items:
            if item.get_closest_marker(MARKER) is not None:
                self.chosen.setdefault(function_key(item), []).append(item.nodeid)
                self._items.setdefault(function_key(item), []).append(item)

    def fixture_scope(self, name: str, scope: str) -> None:
        self._scopes[name] = scope

    def _concurrent(self) -> bool:
        """Whether the items of a test function may hold their dialogues at once: only
        with shared adapter and judges, and (under xdist) when one worker runs them all."""
        shared = "function" not in self._scopes.values()
        dist = getattr(self.config.option, "dist", "no")
        whole = not hasattr(self.config, "workerinput") or dist in ("loadscope", "loadfile")
        if not shared:
            self.notes.add("ragdive_adapter or ragdive_judges is function-scoped: dialogues "
                           "ran one at a time; give them session scope to run them concurrently")
        elif not whole:
            self.notes.add(f"xdist --dist {dist} spreads a test's documents over workers: each "
                           f"dialogue ran alone; --dist loadscope runs them concurrently")
        return shared and whole

    # -- running ------------------------------------------------------------------

    def judges(self, judges: Any) -> Judges:
        """The judges to use: the fixture's, or ``--ragdive-model``'s, said in the summary."""
        from ..engine.judges import Judges

        if not isinstance(judges, Judges):
            pytest.fail(f"ragdive_judges returned {judges!r}; return pytest_ragdive.Judges(...)",
                        pytrace=False)
        model = self.options.cli.get("model")
        if model and judges != Judges(model):
            self.notes.add(f"--ragdive-model {model} replaced the models of the ragdive_judges "
                           f"fixture ({', '.join(sorted({str(m) for m in judges.models.values()}))})")
            return Judges(model, generator_temperature=judges.generator_temperature)
        return judges

    def dialogue_for(
        self, item: pytest.Item, adapter: RagAdapter, judges: Judges, document: Document
    ) -> Dialogue:
        from ..engine.dialogue import arun_dialogue
        from .scheduling import Progress, Runner

        judges = self.judges(judges)
        chosen = self.settings(item)
        settings = chosen.judged_by(judges.models["evaluator"].name)
        left_out = [m for m in chosen.metrics if m not in settings.metrics]
        if left_out:
            self.notes.add(f"{', '.join(left_out)} not scored: {judges.models['evaluator'].name} "
                           f"judged it at chance on labelled cases (benchmarks/README.md); "
                           f"name it in ragdive_metrics to score it anyway")
        if self._runner is None:
            self._runner = Runner()
            self._progress = Progress(self.config, lambda: self.client().calls_made)
        runner, progress = self._runner, self._progress
        assert progress is not None
        options = {
            "judges": judges, "turns": settings.turns, "role": settings.role,
            "metrics": settings.metrics, "max_regenerations": settings.max_regenerations,
            "validation": settings.validation, "validator_checks": settings.validator_checks,
            "client": self.client(),
            "adapter_timeout": self.options.get("adapter_timeout"),
            "dialogue_timeout": self.options.get("dialogue_timeout"),
        }
        first = self.options.get("seed")
        seeds = range(first, first + (settings.runs if self.update else 1))
        confirming = not self.update and self.options.get("verdict") == "permutation"
        most = len(seeds) + (settings.confirm_runs if confirming else 0)

        def start(doc: Document, seed: int) -> Callable[[], Awaitable[Dialogue]]:
            return lambda: arun_dialogue(doc, adapter, seed=seed, **options,
                                         progress=progress.reporter(seed - first, most,
                                                                    settings.turns))

        def submit(it: pytest.Item, doc: Document) -> list[concurrent.futures.Future[Any]]:
            return [runner.submit((it.nodeid, seed), start(doc, seed)) for seed in seeds]

        own = submit(item, document)
        if self._concurrent():  # start the dialogues of the items of this test that follow
            later = self._items.get(function_key(item), [])
            for other in later[later.index(item) + 1:] if item in later else []:
                callspec = getattr(other, "callspec", None)
                doc = callspec.params.get("ragdive_document") if callspec else None
                if doc is not None and hasattr(doc, "text"):
                    submit(other, doc)
        dialogues = progress.wait(own)
        if confirming and settings.confirm_runs and self._looks_worse(item, settings, judges,
                                                                      dialogues[0]):
            more = range(first + 1, first + 1 + settings.confirm_runs)
            dialogues += progress.wait([runner.submit((item.nodeid, seed), start(document, seed))
                                        for seed in more])
        self._dialogues[item.nodeid] = (settings, judges, dialogues)
        return dialogues[0]

    def _looks_worse(self, item: pytest.Item, settings: ItemSettings, judges: Judges,
                     dialogue: Dialogue) -> bool:
        """Whether the first run left its band on the worse side: confirm it before deciding."""
        from . import bands
        from .gate import leaves_band, produced_by

        if dialogue.errors:
            return False
        names = {role: model.label for role, model in judges.models.items()}
        return leaves_band(bands.item_path(item), produced_by(settings, names), dialogue.scores,
                           self.options.get("band_margin"))

    # -- checking -----------------------------------------------------------------

    def check_dialogue(self, item: pytest.Item) -> None:
        """Before the test body: the dialogue's own errors."""
        from .gate import check_dialogue

        entry = self._dialogues.get(item.nodeid)
        if entry is not None:
            settings, judges, dialogues = entry
            check_dialogue(
                item, settings, judges, dialogues, results=self.results,
                aggregate_file=self.aggregate_files.get(function_key(item)),
                keep_dialogue=bool(self.options.get("report") or self.options.get("json")),
            )

    def check_band(self, item: pytest.Item) -> None:
        """After the test body: the band (on update, the band to write)."""
        from .gate import check_band

        entry = self._dialogues.get(item.nodeid)
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

    def worker_output(self) -> dict[str, Any]:
        return {
            "results": self.results,
            "all_items": self.all_items,
            "chosen": self.chosen,
            "aggregate_files": self.aggregate_files,
            "expected_files": sorted(self.expected_files),
            "scopes": self.scopes,
            "notes": sorted(self.notes),
        }

    def merge(self, output: dict[str, Any]) -> None:
        self.results.update(output["results"])
        self.notes.update(output["notes"])
        # every worker collects the same items; one copy of the collection is enough
        self.all_items = output["all_items"]
        self.chosen = output["chosen"]
        self.aggregate_files = output["aggregate_files"]
        self.expected_files = set(output["expected_files"])
        self.scopes = output["scopes"]

    def judge(self) -> list[pytest.TestReport]:
        """Once every item ran: each test function's verdict as a report of its own (none
        on update, which records instead)."""
        from . import aggregate, decision

        self.aggregates, self._aggregate_bands = aggregate.evaluate(
            self.chosen, self.all_items, self.results,
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
        if not self.all_items:
            return False
        from . import aggregate, bands

        if not self._judged:  # the test loop did not end normally
            self.judge()
        aggregate_bands = self._aggregate_bands
        self.unused = aggregate.unused_files(self.scopes, self.expected_files)
        if self.update:
            if interrupted:
                self.notes.add("the update was interrupted: no band was written (the response "
                               "cache keeps the calls made, so running it again is quicker)")
                self.unused = []
                return True
            docs, notes = aggregate.complete_updates(self.chosen, self.results, aggregate_bands)
            self.notes.update(notes)
            bands.write_all(docs)
            for path in self.unused:
                Path(path).unlink(missing_ok=True)
        self._write_reports()
        return False

    def _write_reports(self) -> None:
        html, json_path = self.options.get("report"), self.options.get("json")
        if not (html or json_path):
            return
        from . import outputs
        from .run_record import RunRecord

        get = self.options.get
        run = RunRecord.build(
            settings=outputs.settings(self.results, seed=get("seed"), update=self.update,
                                      record_mode=get("record_mode"), verdict=get("verdict"),
                                      alpha=get("alpha"), margin=get("band_margin")),
            started=self.started,
            duration_s=(datetime.now(timezone.utc) - self.started).total_seconds(),
            chosen=self.chosen, collected=self.all_items, results=self.results,
            outcomes=self.outcomes, aggregates=self.aggregates, margin=get("band_margin"),
        )
        for target in outputs.write(run, html, json_path):
            self.notes.add(f"ragdive report written to {target}")

    def summary(self, reporter: Any) -> None:
        if not self.results and not self.unused and not self.notes:
            return
        from .report import write_summary

        write_summary(reporter, aggregates=self.aggregates, results=self.results,
                      notes=self.notes, unused=self.unused, update=self.update)

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
