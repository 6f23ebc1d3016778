"""Running each item's dialogues on the plugin's event loop: with the judges the session
chose, one per seed (every run on update), confirmation runs when the first leaves its band
on the worse side (that document's, or with ``confirm_scope`` test any document's of the
test function), and the dialogues of the test's later items started alongside."""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from .marker import function_key
from .options import ItemSettings, Options

if TYPE_CHECKING:
    from ..engine.asking import RagAdapter
    from ..engine.judges import Judges
    from ..engine.models import Dialogue, Document, DocumentGroup
    from ..llm.client import LLMClient
    from .scheduling import Progress, Runner


Future = concurrent.futures.Future[Any]

#: how many times an item holds its conversation again when the generator wrote no turn the
#: validator accepts in one of its runs (the failed runs are listed, "not held")
HELD_AGAIN = 2


class Runs:
    """The dialogues of the session's items; ``notes`` gathers what the summary says."""

    def __init__(self, config: pytest.Config, options: Options,
                 client: Callable[[], LLMClient], notes: set[str]) -> None:
        self.config = config
        self.options = options
        self.update = options.update
        self.client = client
        self.notes = notes
        self._runner: Runner | None = None
        self._progress: Progress | None = None
        self._scopes: dict[str, str] = {}  # fixture name -> scope
        #: node id -> the item's settings, judges and dialogues (the first run's first)
        self.dialogues: dict[str, tuple[ItemSettings, Judges, list[Dialogue]]] = {}
        #: test function -> whether one of its documents' first runs left its band, worse
        self._test_confirms: dict[str, bool] = {}
        #: test function (test-wide) or node id -> the confirmation runs it draws
        self._added: dict[str, int] = {}

    def fixture_scope(self, name: str, scope: str) -> None:
        self._scopes[name] = scope

    def _concurrent(self, test_wide: bool) -> bool:
        """Whether the items of a test function may hold their dialogues at once: only
        with shared adapter and judges, and (under xdist) when one worker runs them all.
        ``test_wide``: whether their confirmation was to be decided together."""
        shared = "function" not in self._scopes.values()
        # a worker sees "no" where -n alone made the controller's "load"
        dist = getattr(self.config.option, "dist", "no")
        dist = "load" if dist == "no" and hasattr(self.config, "workerinput") else dist
        whole = not hasattr(self.config, "workerinput") or dist in ("loadscope", "loadfile")
        alone = " and each document confirmed on its own" if test_wide else ""
        if not shared:
            self.notes.add(f"ragdive_adapter or ragdive_judges is function-scoped: dialogues "
                           f"ran one at a time{alone}; give them session scope to run them "
                           f"concurrently")
        elif not whole:
            self.notes.add(f"xdist --dist {dist} spreads a test's documents over workers: each "
                           f"dialogue ran alone{alone}; --dist loadscope runs them concurrently")
        return shared and whole

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

    def run(self, item: pytest.Item, adapter: RagAdapter, judges: Judges,
            document: Document | DocumentGroup, chosen: ItemSettings,
            later: Sequence[pytest.Item], documents: int) -> Dialogue:
        """The first dialogue of ``item`` (settings ``chosen``), once all its runs ended;
        ``later``: the items of the same test that run after it, of ``documents`` collected."""
        from ..engine.dialogue import arun_dialogue
        from ..engine.models import Document, DocumentGroup
        from .profiling import judged
        from .scheduling import Progress, Runner

        judges = self.judges(judges)
        settings = judged(chosen, judges, self.options.profiles(), self.notes)
        if self._runner is None:
            self._runner = Runner()
            self._progress = Progress(self.config, lambda: self.client().calls_made)
        runner, progress = self._runner, self._progress
        assert progress is not None
        options = {
            "judges": judges, "turns": settings.turns, "role": settings.role,
            "metrics": settings.metrics, "max_regenerations": settings.max_regenerations,
            "validation": settings.validation, "validator_checks": settings.validator_checks,
            "openers": settings.openers, "client": self.client(),
            "profiles": self.options.profiles(),
            "adapter_timeout": self.options.get("adapter_timeout"),
            "dialogue_timeout": self.options.get("dialogue_timeout"),
        }
        first = self.options.get("seed")
        seeds = range(first, first + (settings.runs if self.update else 1))
        confirming = not self.update and self.options.get("verdict") == "permutation"
        confirms = confirming and settings.confirm_runs > 0
        test_wide = confirms and settings.confirm_scope == "test"
        added = self._confirmations(item, settings, documents, test_wide) if confirms else 0
        most = len(seeds) + added

        def start(doc: Document | DocumentGroup, seed: int) -> Callable[[], Awaitable[Dialogue]]:
            return lambda: arun_dialogue(doc, adapter, seed=seed, **options,
                                         progress=progress.reporter(
                                             seed - first, most, settings.turns,
                                             certain=not confirming))

        def submit(it: pytest.Item, doc: Document | DocumentGroup) -> list[Future]:
            return [runner.submit((it.nodeid, seed), start(doc, seed)) for seed in seeds]

        own = submit(item, document)
        #: the later items of this test: their documents and first runs
        started: dict[pytest.Item, tuple[Document | DocumentGroup, list[Future]]] = {}
        if self._concurrent(test_wide):  # start the dialogues of this test's later items
            for other in later:
                callspec = getattr(other, "callspec", None)
                doc = callspec.params.get("ragdive_document") if callspec else None
                if isinstance(doc, (Document, DocumentGroup)):
                    started[other] = (doc, submit(other, doc))
        else:
            test_wide = False
        dialogues = progress.wait(own)
        last = seeds[-1]
        # a run the generator, not the bot, failed is held again with the next seed, so that
        # a check has its run and an update's band the runs asked for: while failed runs
        # outnumber the runs held again
        while (sum("generation" in d.errors for d in dialogues) > last - seeds[-1]
               and last < seeds[-1] + HELD_AGAIN):
            last += 1
            dialogues += progress.wait([runner.submit((item.nodeid, last), start(document, last))])
        # the held runs first, by seed: a check's first run is the one it judges
        dialogues.sort(key=lambda d: ("generation" in d.errors, d.seed))
        worse = confirms and self._looks_worse(item, settings, judges, dialogues[0])
        if test_wide:
            test = function_key(item)
            if test not in self._test_confirms:  # the test's first item decides for all
                self._test_confirms[test] = worse or any(
                    self._looks_worse(other, settings, judges, first)
                    for other, first in _firsts(started, progress))
            worse = worse or self._test_confirms[test]
            if worse:  # the other documents' confirmation runs start alongside this one's
                for other, (doc, _) in started.items():
                    for seed in range(seeds[-1] + 1, seeds[-1] + 1 + added):
                        runner.submit((other.nodeid, seed), start(doc, seed))
        if worse:
            more = range(last + 1, last + 1 + added)
            dialogues += progress.wait([runner.submit((item.nodeid, seed), start(document, seed))
                                        for seed in more])
        self.dialogues[item.nodeid] = (settings, judges, dialogues)
        return dialogues[0]

    def _confirmations(self, item: pytest.Item, settings: ItemSettings, documents: int,
                       test_wide: bool) -> int:
        """The confirmation runs a first run that looks worse draws per document:
        ``confirm_runs``, or more where that many cannot let the test reach its threshold
        (:func:`.reach.candidate_runs`, from the item's band's runs); test-wide, the first
        item's number for all."""
        from . import bands
        from .gate import band_runs
        from .reach import candidate_runs

        key = function_key(item) if test_wide else item.nodeid
        if key not in self._added:
            runs = band_runs(bands.item_path(item)) or settings.runs
            self._added[key] = candidate_runs(documents, runs, len(settings.metrics),
                                              self.options.get("alpha"),
                                              settings.confirm_runs) - 1
        return self._added[key]

    def _looks_worse(self, item: pytest.Item, settings: ItemSettings, judges: Judges,
                     dialogue: Dialogue) -> bool:
        """Whether the first run left its band on the worse side: confirm it before deciding."""
        from . import bands
        from .gate import is_group, leaves_band, produced_by

        if set(dialogue.errors) - set(dialogue.judge_gaps):
            return False  # it failed; a metric the judge could not score is only missing
        names = {role: model.label for role, model in judges.models.items()}
        return leaves_band(bands.item_path(item), produced_by(settings, names, is_group(item)),
                           dialogue.scores, self.options.get("band_margin"))

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()


def _firsts(started: Mapping[pytest.Item, tuple[object, Sequence[Future]]], progress: Progress
            ) -> Iterator[tuple[pytest.Item, Dialogue]]:
    """Each started item's first run, once it ended; none where it raised or the generator
    failed it (that item meets the error, or holds its run again, and judges it itself)."""
    futures = {other: runs[0] for other, (_, runs) in started.items() if runs}
    with contextlib.suppress(Exception):  # waited for here; raised in the item it belongs to
        progress.wait(list(futures.values()))
    for other, future in futures.items():
        if future.exception() is None and "generation" not in future.result().errors:
            yield other, future.result()
