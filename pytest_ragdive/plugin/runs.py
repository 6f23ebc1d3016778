"""Running each item's dialogues on the plugin's event loop: with the judges the session
chose, one per seed (every run on update), confirmation runs when the first leaves its band
on the worse side (that document's, or with ``confirm_scope`` test any document's of the
test function), and the dialogues of the test's later items started alongside. An item
none of whose runs was held because its document ran out of facts holds them again, each
scored on the turns it held; every item's settings are fitted to what its runs could score
(:mod:`.applicable`)."""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pytest

from .applicable import fitted, ran_out, strip
from .marker import function_key
from .options import ItemSettings, Options

if TYPE_CHECKING:
    from ..engine.base.judges import Judges
    from ..engine.base.models import Dialogue, Document, DocumentGroup
    from ..engine.conversation.asking import RagAdapter
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
        #: the ids of the documents talked about that are not in English
        self.not_english: set[str] = set()

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
        from ..engine.base.judges import Judges

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
        from ..engine.base.models import DocumentGroup
        from ..engine.text.english import is_english
        from .profiling import judged

        judges = self.judges(judges)
        settings = judged(chosen, judges, self.options.profiles(), self.notes)
        self.not_english.update(d.id for d in DocumentGroup.of(document).documents
                                if not is_english(d.text))
        first = self.options.get("seed")
        seeds = range(first, first + (settings.runs if self.update else 1))
        confirming = not self.update and self.options.get("verdict") == "permutation"
        confirms = confirming and settings.confirm_runs > 0
        test_wide = confirms and settings.confirm_scope == "test"
        added = self._confirmations(item, settings, documents, test_wide) if confirms else 0
        starts = self._starts(adapter, judges, settings, first, len(seeds) + added, confirming)
        own = starts.submit(item.nodeid, document, seeds)
        #: the later items of this test: their documents and first runs
        started: dict[pytest.Item, tuple[Document | DocumentGroup, list[Future]]] = {}
        if self._concurrent(test_wide):  # start the dialogues of this test's later items
            started = {other: (doc, starts.submit(other.nodeid, doc, seeds))
                       for other, doc in _documents(later)}
        else:
            test_wide = False
        dialogues, last = self._held(item.nodeid, document, starts, own, seeds)
        mine = starts
        if ran_out(dialogues[0]):  # no run held: each holds what its document can
            mine = replace(starts, hold_short=True)
            dialogues, last = self._held(item.nodeid, document, mine,
                                         mine.submit(item.nodeid, document, seeds), seeds)
        fit = self._fitted(item, settings, dialogues)
        worse = confirms and self._looks_worse(item, fit, judges, dialogues[0])
        if test_wide:
            worse = self._confirm_test(item, settings, judges, worse, started, starts,
                                       range(seeds[-1] + 1, seeds[-1] + 1 + added))
        if worse:
            dialogues += mine.progress.wait(
                mine.submit(item.nodeid, document, range(last + 1, last + 1 + added)))
            strip(dialogues, fit)
        self.dialogues[item.nodeid] = (fit, judges, dialogues)
        return dialogues[0]

    def _fitted(self, item: pytest.Item, settings: ItemSettings,
                dialogues: list[Dialogue]) -> ItemSettings:
        """``settings`` fitted to what the item's ``dialogues`` could score (:mod:`.applicable`);
        the metrics left out are left out of those dialogues too."""
        from . import bands

        fit = fitted(settings, dialogues, bands.item_path(item), self.update)
        strip(dialogues, fit)
        return fit

    def _starts(self, adapter: RagAdapter, judges: Judges, settings: ItemSettings, first: int,
                most: int, confirming: bool) -> _Starts:
        """How an item's runs start, on the session's runner (made by its first item)."""
        from .scheduling import Progress, Runner

        if self._runner is None:
            self._runner = Runner()
            self._progress = Progress(self.config, lambda: self.client().calls_made)
        assert self._progress is not None
        options = {
            "judges": judges, "turns": settings.turns, "role": settings.role,
            "metrics": settings.metrics, "max_regenerations": settings.max_regenerations,
            "validation": settings.validation, "validator_checks": settings.validator_checks,
            "openers": settings.openers, "client": self.client(),
            "profiles": self.options.profiles(),
            "adapter_timeout": self.options.get("adapter_timeout"),
            "dialogue_timeout": self.options.get("dialogue_timeout"),
        }
        return _Starts(self._runner, self._progress, adapter, options, first, most,
                       settings.turns, certain=not confirming)

    def _held(self, nodeid: str, document: Document | DocumentGroup, starts: _Starts,
              own: list[Future], seeds: range) -> tuple[list[Dialogue], int]:
        """The item's runs (``own``) once they ended, the held runs first, by seed (a check's
        first run is the one it judges); and the last seed used. A run the generator, not
        the bot, failed is held again with the next seed, so that a check has its run and
        an update's band the runs asked for: while failed runs outnumber the runs held
        again, up to ``HELD_AGAIN`` times."""
        dialogues = starts.progress.wait(own)
        last = seeds[-1]
        while (sum("generation" in d.errors for d in dialogues) > last - seeds[-1]
               and last < seeds[-1] + HELD_AGAIN):
            last += 1
            dialogues += starts.progress.wait(starts.submit(nodeid, document, [last]))
        dialogues.sort(key=lambda d: ("generation" in d.errors, d.seed))
        return dialogues, last

    def _confirm_test(self, item: pytest.Item, settings: ItemSettings, judges: Judges,
                      worse: bool, started: Mapping[pytest.Item, tuple[Any, list[Future]]],
                      starts: _Starts, more: range) -> bool:
        """Test-wide confirmation: whether the test's first runs look worse (the test's first
        item decides for all, from its own and the ``started`` items' first runs, each read
        with ``settings`` fitted to it); if so, the other documents' confirmation runs (seeds
        ``more``) start alongside this one's."""
        test = function_key(item)
        if test not in self._test_confirms:
            copies = [(other, first.model_copy(deep=True))  # their items strip their own
                      for other, first in _firsts(started, starts.progress)]
            self._test_confirms[test] = worse or any(
                self._looks_worse(other, self._fitted(other, settings, [first]), judges, first)
                for other, first in copies)
        worse = worse or self._test_confirms[test]
        if worse:
            for other, (doc, _) in started.items():
                starts.submit(other.nodeid, doc, more)
        return worse

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


def _documents(items: Sequence[pytest.Item]
               ) -> Iterator[tuple[pytest.Item, Document | DocumentGroup]]:
    """The items whose document is a parameter, with it."""
    from ..engine.base.models import Document, DocumentGroup

    for other in items:
        callspec = getattr(other, "callspec", None)
        doc = callspec.params.get("ragdive_document") if callspec else None
        if isinstance(doc, (Document, DocumentGroup)):
            yield other, doc


@dataclass(frozen=True)
class _Starts:
    """How the runs of an item start on the ``runner``: a dialogue at a seed, its progress
    shown as one of the ``most`` runs an item may hold (``certain``: no confirmation run
    may follow)."""

    runner: Runner
    progress: Progress
    adapter: RagAdapter
    options: dict[str, Any]
    first: int  # the first seed
    most: int
    turns: int
    certain: bool
    #: each run holds what its document can (``arun_dialogue``'s ``hold_short``)
    hold_short: bool = False

    def submit(self, nodeid: str, doc: Document | DocumentGroup,
               seeds: Iterable[int]) -> list[Future]:
        short = ("short",) if self.hold_short else ()
        return [self.runner.submit((nodeid, seed, *short), self._start(doc, seed))
                for seed in seeds]

    def _start(self, doc: Document | DocumentGroup,
               seed: int) -> Callable[[], Awaitable[Dialogue]]:
        from ..engine.conversation.dialogue import arun_dialogue

        return lambda: arun_dialogue(doc, self.adapter, seed=seed, **self.options,
                                     hold_short=self.hold_short,
                                     progress=self.progress.reporter(
                                         seed - self.first, self.most, self.turns,
                                         certain=self.certain))
