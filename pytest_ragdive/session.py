"""What the plugin keeps for one pytest session: settings, dialogues, results, baselines."""

from __future__ import annotations

import concurrent.futures
import queue
import types
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .markers import MARKER
from .metrics import METRICS, MULTI_TURN_METRICS

if TYPE_CHECKING:
    from .dialogue import RagAdapter
    from .llm import Judges, LLMClient
    from .models import Dialogue, Document
    from .runner import Runner

DEFAULT_METRICS = tuple(METRICS)


@dataclass(frozen=True)
class Settings:
    turns: int
    role: str
    metrics: tuple[str, ...]
    max_regenerations: int
    validation: str
    runs: int


def function_key(item: pytest.Item) -> str:
    return item.nodeid.split("[", 1)[0]


def _int(config: pytest.Config, ini: str) -> int:
    return int(_number(config, ini, int))


def _float(config: pytest.Config, ini: str) -> float:
    return _number(config, ini, float)


def _number(config: pytest.Config, ini: str, kind: type[int | float]) -> float:
    value = config.getini(ini)
    try:
        return kind(value)
    except ValueError:
        raise pytest.UsageError(f"ini {ini} = {value!r} is not a {kind.__name__}") from None


def _structured_output(config: pytest.Config) -> str:
    from .structured import check_mode

    try:
        return check_mode(config.getini("ragdive_structured_output"), "ini")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


class RagdiveSession:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.update: bool = config.getoption("ragdive_update")
        self.margin = _float(config, "ragdive_band_margin")
        self.structured_output = _structured_output(config)
        self._runner: Runner | None = None
        self._client: LLMClient | None = None
        self._dialogues: dict[str, tuple[Settings, Judges, list[Dialogue]]] = {}
        self._progress: queue.SimpleQueue[tuple[str, int, str]] = queue.SimpleQueue()
        # function key -> node ids; "all" before deselection, "chosen" after
        self.all_items: dict[str, list[str]] = {}
        self.chosen: dict[str, list[str]] = {}
        self.aggregate_files: dict[str, str] = {}
        self.expected_files: set[str] = set()
        self.scopes: dict[str, list[str] | None] = {}  # baseline dir -> functions, None = all
        self.results: dict[str, dict[str, Any]] = {}
        self.aggregates: list[dict[str, Any]] = []
        self.unused: list[str] = []
        self.notes: set[str] = set()
        self._items: dict[str, list[pytest.Item]] = {}
        self._scopes: dict[str, str] = {}

    # -- settings -----------------------------------------------------------------

    def settings(self, item: pytest.Item) -> Settings:
        """Every setting: command line > marker > ini > default."""
        marker = item.get_closest_marker(MARKER)
        kwargs = dict(marker.kwargs) if marker else {}
        option = self.config.getoption
        ini_metrics = tuple(self.config.getini("ragdive_metrics"))
        chosen = kwargs.get("metrics") or ini_metrics
        turns = option("ragdive_turns") or kwargs.get("turns") or _int(self.config, "ragdive_turns")
        metrics = tuple(chosen or DEFAULT_METRICS)
        if turns == 1:
            # multi-turn metrics need a second turn: leave them out unless asked for
            asked = set(metrics) & set(MULTI_TURN_METRICS)
            if chosen and asked:
                raise pytest.UsageError(
                    f"{item.nodeid}: {', '.join(sorted(asked))} need at least 2 turns; "
                    f"raise turns or leave them out of metrics")
            metrics = tuple(m for m in metrics if m not in MULTI_TURN_METRICS)
        settings = Settings(
            turns=turns,
            role=option("ragdive_role") or kwargs.get("role") or self.config.getini("ragdive_role"),
            metrics=tuple(m for m in DEFAULT_METRICS if m in metrics),
            max_regenerations=kwargs.get("max_regenerations",
                                         _int(self.config, "ragdive_max_regenerations")),
            validation=kwargs.get("validation") or self.config.getini("ragdive_validation"),
            runs=option("ragdive_runs") or kwargs.get("runs")
            or _int(self.config, "ragdive_baseline_runs"),
        )
        from .markers import check_options

        try:
            check_options({"turns": settings.turns, "runs": settings.runs,
                           "max_regenerations": settings.max_regenerations,
                           "validation": settings.validation,
                           "metrics": list(metrics)}, "pytest-ragdive settings")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        return settings

    def runner(self) -> Runner:
        if self._runner is None:
            from .runner import Runner

            self._runner = Runner()
        return self._runner

    def client(self) -> LLMClient:
        if self._client is None:
            from .cache import ResponseCache
            from .llm import LLMClient

            option = self.config.getoption
            directory = Path(option("ragdive_cache_dir") or self.config.getini("ragdive_cache_dir"))
            if not directory.is_absolute():
                directory = self.config.rootpath / directory
            mode = option("ragdive_record_mode") or self.config.getini("ragdive_record_mode")
            try:
                cache = ResponseCache(directory, mode)
            except ValueError as exc:
                raise pytest.UsageError(f"ragdive_record_mode: {exc}") from None
            self._client = LLMClient(
                cache,
                concurrency=option("ragdive_concurrency") or _int(self.config, "ragdive_concurrency"),
                timeout=_float(self.config, "ragdive_call_timeout"),
                structured_output=self.structured_output,
            )
        return self._client

    # -- documents ----------------------------------------------------------------

    def register_ini_documents(self) -> None:
        """Make ini ``ragdive_documents`` the default ``ragdive_document`` fixture."""
        source = self.config.getini("ragdive_documents")
        if not source:
            return
        from .markers import document_fixture

        try:
            docs = _load(source, self.config.rootpath)
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"ini ragdive_documents: {exc}") from None
        module = types.ModuleType("pytest_ragdive_ini_documents")
        module.ragdive_document = document_fixture(docs)  # type: ignore[attr-defined]
        self.config.pluginmanager.register(module, "ragdive-ini-documents")

    def marker_documents(self, source: Any, test_path: Path) -> list[Document]:
        try:
            if isinstance(source, (str, Path)):
                return _load(source, test_path.parent)
            from .documents import check_unique

            return check_unique(source)
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"ragdive.conversation(documents=...): {exc}") from None

    # -- collection ---------------------------------------------------------------

    def collected(self, items: list[pytest.Item]) -> None:
        marked = [item for item in items if item.get_closest_marker(MARKER) is not None]
        if not marked:
            return
        from . import baseline

        partial = {arg.split("::", 1)[0] for arg in self.config.args if "::" in arg}
        for item in marked:
            key = function_key(item)
            self.all_items.setdefault(key, []).append(item.nodeid)
            path = baseline.item_path(item)
            self.expected_files.add(str(path))
            self.aggregate_files[key] = str(baseline.aggregate_path(item))
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
        if name in ("ragdive_adapter", "ragdive_judges"):
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

    def dialogue_for(
        self, item: pytest.Item, adapter: RagAdapter, judges: Judges, document: Document
    ) -> Dialogue:
        from .dialogue import arun_dialogue
        from .llm import Judges as JudgesType

        settings = self.settings(item)
        cli_model = self.config.getoption("ragdive_model")
        if cli_model:
            judges = JudgesType(cli_model)
        if not isinstance(judges, JudgesType):
            pytest.fail(f"ragdive_judges returned {judges!r}; return pytest_ragdive.Judges(...)",
                        pytrace=False)
        client = self.client()
        options = {
            "judges": judges, "turns": settings.turns, "role": settings.role,
            "metrics": settings.metrics, "max_regenerations": settings.max_regenerations,
            "validation": settings.validation, "client": client,
            "adapter_timeout": _float(self.config, "ragdive_adapter_timeout"),
            "dialogue_timeout": _float(self.config, "ragdive_dialogue_timeout"),
        }
        first = self.config.getoption("ragdive_seed")
        seeds = range(first, first + (settings.runs if self.update else 1))

        def submit(it: pytest.Item, doc: Document) -> list[concurrent.futures.Future[Any]]:
            return [
                self.runner().submit(
                    (it.nodeid, seed),
                    lambda seed=seed: arun_dialogue(
                        doc, adapter, seed=seed,
                        progress=self._reporter(seed - first, len(seeds)),
                        **options,
                    ),
                )
                for seed in seeds
            ]

        own = submit(item, document)
        if self._concurrent():  # start the dialogues of the items of this test that follow
            later = self._items.get(function_key(item), [])
            for other in later[later.index(item) + 1:] if item in later else []:
                callspec = getattr(other, "callspec", None)
                doc = callspec.params.get("ragdive_document") if callspec else None
                if doc is not None and hasattr(doc, "text"):
                    submit(other, doc)
        dialogues = self._wait(own)
        self._dialogues[item.nodeid] = (settings, judges, dialogues)
        return dialogues[0]

    def _reporter(self, seed: int, runs: int) -> Any:
        run = f" (run {seed + 1}/{runs})" if runs > 1 else ""
        return lambda document, turn, stage: self._progress.put((document + run, turn, stage))

    def _wait(self, futures: list[concurrent.futures.Future[Any]]) -> list[Any]:
        """Wait for ``futures``, showing progress with ``-v``."""
        verbose = self.config.get_verbosity() > 0
        pending = set(futures)
        while pending:
            _, pending = concurrent.futures.wait(pending, timeout=0.5)
            events = []
            while not self._progress.empty():
                events.append(self._progress.get())
            if verbose and events:
                self._show(events)
        return [f.result() for f in futures]

    def _show(self, events: list[tuple[str, int, str]]) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or capture is None:
            return
        with capture.global_and_fixture_disabled():
            for document, turn, stage in events:
                reporter.write_line(f"  ragdive {document}: turn {turn} {stage}")

    # -- checking -----------------------------------------------------------------

    def check(self, item: pytest.Item) -> None:
        from . import baseline

        entry = self._dialogues.get(item.nodeid)
        if entry is None:
            return
        settings, judges, dialogues = entry
        first = dialogues[0]
        record: dict[str, Any] = {
            "function": function_key(item),
            "document": first.document_id,
            "scores": dict(first.scores),
            "turns": sum(len(d.turns) for d in dialogues),
            "dialogues": len(dialogues),
            "rejections": sum(d.rejection_count for d in dialogues),
            "usage": _usage(dialogues),
            "aggregate_file": self.aggregate_files.get(function_key(item)),
            "status": "error",
        }
        self.results[item.nodeid] = record
        for metric, value in first.scores.items():
            item.user_properties.append((f"ragdive.{metric}", round(value, baseline.DIGITS)))

        for d in dialogues:
            problems = [f"{what}: {why}" for what, why in d.errors.items()]
            if problems:
                pytest.fail("the conversation could not be evaluated:\n  " + "\n  ".join(problems),
                            pytrace=False)
        produced_by = {
            "turns": settings.turns,
            "role": settings.role,
            "metrics": list(settings.metrics),
            "judges": {k: v.name for k, v in judges.models.items()},
        }
        path = baseline.item_path(item)
        if self.update:
            from . import __version__

            values = {m: [d.scores[m] for d in dialogues] for m in settings.metrics}
            record["runs"] = values
            record["produced_by"] = produced_by
            baseline.write(path, baseline.band(values, {**produced_by, "plugin": __version__}))
            record["status"] = "recorded"
            return
        command = f"pytest '{function_key(item)}' --ragdive-update"
        try:
            doc = baseline.read(path)
        except baseline.BaselineError as exc:
            pytest.fail(str(exc), pytrace=False)
        if doc is None:
            record["status"] = "missing"
            pytest.fail(f"no baseline band at {_rel(path)}; record one with:\n  {command}",
                        pytrace=False)
        stale = baseline.stale_reason(doc, produced_by)
        if stale:
            record["status"] = "stale"
            pytest.fail(f"the baseline {_rel(path)} was recorded for other settings ({stale}); "
                        f"it is stale. Record it again with:\n  {command}", pytrace=False)
        deviations = baseline.compare(doc, first.scores, self.margin)
        worse = [d for d in deviations if d.worse]
        better = [d for d in deviations if not d.worse]
        record["status"] = "regressed" if worse else "improved" if better else "passed"
        if worse:
            lines = [f"{d.describe()}\n      {_culprit(first, d.metric)}" for d in worse]
            pytest.fail("scores left their baseline band:\n  " + "\n  ".join(lines),
                        pytrace=False)
        if better and self.config.getini("ragdive_fail_on_improvement"):
            pytest.fail("scores rose above their baseline band (ragdive_fail_on_improvement): "
                        + "; ".join(d.describe() for d in better)
                        + f"\n  accept them with:\n  {command}", pytrace=False)

    # -- end of session -----------------------------------------------------------

    def worker_output(self) -> dict[str, Any]:
        return {
            "results": self.results,
            "all_items": self.all_items,
            "chosen": self.chosen,
            "aggregate_files": self.aggregate_files,
            "expected_files": sorted(self.expected_files),
            "scopes": self.scopes,
        }

    def merge(self, output: dict[str, Any]) -> None:
        self.results.update(output["results"])
        # every worker collects the same items; one copy of the collection is enough
        self.all_items = output["all_items"]
        self.chosen = output["chosen"]
        self.aggregate_files = output["aggregate_files"]
        self.expected_files = set(output["expected_files"])
        self.scopes = output["scopes"]

    def finish(self) -> bool:
        """Check or record aggregate bands and find unused baselines.
        True when the session must fail."""
        if not self.all_items:
            return False
        from . import aggregate

        self.aggregates = aggregate.evaluate(self)
        self.unused = aggregate.unused_files(self)
        if self.update:
            for path in self.unused:
                Path(path).unlink(missing_ok=True)
        return any(a["status"] == "regressed" for a in self.aggregates)

    def summary(self, reporter: Any) -> None:
        if not self.results and not self.unused:
            return
        from .report import write_summary

        write_summary(self, reporter)

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()


def _load(source: str | Path, root: Path) -> list[Document]:
    from .documents import load_documents

    return load_documents(source, root=root)


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _usage(dialogues: list[Dialogue]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for d in dialogues:
        for key, value in d.usage.model_dump().items():
            totals[key] = totals.get(key, 0) + value
    return totals


def _culprit(dialogue: Dialogue, metric: str) -> str:
    """The turn whose judgement pulled ``metric`` the wrong way, with the judge's reason."""
    judged = [(t.index, t.judgements[metric]) for t in dialogue.turns
              if metric in t.judgements and t.judgements[metric].score is not None]
    if not judged:
        return "no turn was scored"
    worst = min if METRICS[metric] else max
    index, judgement = worst(judged, key=lambda pair: pair[1].score)
    question = dialogue.turns[index - 1].generated.rag_input
    return f"turn {index} ({question!r}): {judgement.reason or 'no reason given'}"
