"""``--ragdive-estimate``: each conversation item counted instead of run, and what the session
would take printed.

Per test function and in total: dialogues, model calls by stage, tokens, price and a time
range.

An item's fixtures are set up as in a run (the judges fixture names the models), then its
dialogues are counted (:mod:`..engine.conversation.expected`) and the item skipped: no
dialogue is held and no model asked. The price is litellm's price table's (imported for it,
and only for a model that is neither the embedded nor a scripted one, which cost nothing);
the time range is in :mod:`.estimate_time`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict

import pytest
from pydantic import BaseModel, ConfigDict

from ..calibration.cost import price
from ..engine.base.models import Document, DocumentGroup
from ..engine.base.profile import scope
from ..engine.conversation.expected import ASSUMED, DialogueCalls, expected_calls
from ..engine.validation.validator import model_checks
from ..llm.model import Model
from . import bands
from .estimate_time import duration, free, kinds_said, seconds
from .gate import band_runs
from .marker import function_key
from .profiling import judged
from .reach import candidate_runs

if TYPE_CHECKING:
    from ..engine.base.judges import Judges
    from .options import ItemSettings, Options

#: why an item was skipped
SKIPPED = "counted by --ragdive-estimate, not run"


class ItemEstimate(BaseModel):
    """One item's dialogues (``most``: with the confirmation runs a check may add), the
    model of each judge role, and the calls of each of its dialogues."""
    model_config = ConfigDict(frozen=True)

    nodeid: str
    function: str
    dialogues: int
    most: int
    turns: int
    update: bool
    models: dict[str, str]  # role -> model name
    calls: DialogueCalls


class Figures(BaseModel):
    """What some items' dialogues take: calls by stage, tokens by model, and time."""
    dialogues: int = 0
    most: int = 0
    calls: dict[str, float] = {}
    tokens: dict[str, tuple[float, float]] = {}  # model -> (prompt, completion)
    time: tuple[float, float] = (0.0, 0.0)

    @property
    def total_calls(self) -> float:
        return sum(self.calls.values())

    def add(self, other: Figures) -> None:
        self.dialogues += other.dialogues
        self.most += other.most
        for stage, calls in other.calls.items():
            self.calls[stage] = self.calls.get(stage, 0.0) + calls
        for model, (prompt, completion) in other.tokens.items():
            before = self.tokens.get(model, (0.0, 0.0))
            self.tokens[model] = (before[0] + prompt, before[1] + completion)
        self.time = (self.time[0] + other.time[0], self.time[1] + other.time[1])


class Counted(TypedDict, total=False):
    """What an xdist worker tells the controller of its estimate (plain data)."""
    items: list[str]  # ItemEstimate as JSON
    calls_made: int


class Estimates:
    """The items a ``--ragdive-estimate`` session counted; ``notes`` gathers what the
    summary says of their judges, ``calls_made`` tells the model calls the session made
    (none, unless a fixture of the project made some through the plugin's client)."""

    def __init__(self, options: Options, notes: set[str],
                 calls_made: Callable[[], int]) -> None:
        self.options = options
        self.notes = notes
        self.calls_made = calls_made
        self.items: dict[str, ItemEstimate] = {}
        self._workers_calls = 0

    def count(self, item: pytest.Item, settings: ItemSettings, judges: Judges,
              document: Document | DocumentGroup, documents: int) -> NoReturn:
        """Count ``item``'s dialogues about ``document`` (one of its test function's
        ``documents``) with these ``judges``, then skip it."""
        profiles = self.options.profiles()
        settings = judged(settings, judges, profiles, self.notes)
        with scope(profiles):
            checks = model_checks(judges.models["validator"], settings.validator_checks)
        update = self.options.update
        runs = settings.runs if update else 1
        self.items[item.nodeid] = ItemEstimate(
            nodeid=item.nodeid, function=function_key(item), dialogues=runs,
            most=runs if update else self._most(item, settings, documents),
            turns=settings.turns, update=update,
            models={role: model.name for role, model in judges.models.items()},
            calls=expected_calls(DocumentGroup.of(document), turns=settings.turns, role=settings.role,
                                 metrics=settings.metrics, checks=checks))
        pytest.skip(SKIPPED)

    def _most(self, item: pytest.Item, settings: ItemSettings, documents: int) -> int:
        """The runs a check of ``item`` holds at most: its first and, under the permutation
        verdict, the confirmation runs it adds once a first run leaves its band, worse."""
        if self.options.get("verdict") != "permutation" or not settings.confirm_runs:
            return 1

        baseline = band_runs(bands.item_path(item)) or settings.runs
        return candidate_runs(documents, baseline, len(settings.metrics),
                              self.options.get("alpha"), settings.confirm_runs)

    def output(self) -> Counted:
        """What an xdist worker sends the controller."""
        return {"items": [estimate.model_dump_json() for estimate in self.items.values()],
                "calls_made": self.calls_made()}

    def merge(self, output: Counted) -> None:
        """A worker's :meth:`output`, on the xdist controller."""
        for text in output.get("items", []):
            estimate = ItemEstimate.model_validate_json(text)
            self.items[estimate.nodeid] = estimate
        self._workers_calls += output.get("calls_made", 0)

    def write(self, reporter: Any) -> None:
        """The estimate, per test function and in total."""
        concurrency = self.options.get("concurrency")
        reporter.write_sep("=", "ragdive estimate")
        functions: dict[str, list[ItemEstimate]] = defaultdict(list)
        for estimate in self.items.values():
            functions[estimate.function].append(estimate)
        total = Figures()
        for function, items in functions.items():
            figures = _figures(items, concurrency)
            total.add(figures)
            first = items[0]
            runs = (f"update: {first.dialogues} run{'s' * (first.dialogues != 1)} each"
                    if first.update else "check: 1 run each")
            reporter.write_line(f"{function}  ({len(items)} document{'s' * (len(items) != 1)}"
                                f" × {first.turns} turns; {runs})")
            reporter.write_line(f"    dialogues {figures.dialogues}, model calls "
                                f"{figures.total_calls:,.0f}: " + ", ".join(
                                    f"{stage} {calls:,.0f}"
                                    for stage, calls in figures.calls.items()))
            reporter.write_line(f"    {_tokens(figures)}, {_price(figures)}")
            reporter.write_line(f"    time {_time(figures, concurrency)}")
            if figures.most > figures.dialogues:
                share = figures.most / figures.dialogues
                reporter.write_line(
                    f"    once a first run leaves its band on the worse side, confirmation "
                    f"runs: up to {figures.most} dialogues, {figures.total_calls * share:,.0f} "
                    f"model calls")
        if not functions:
            reporter.write_line("no conversation item was selected: nothing to estimate")
        else:
            reporter.write_line(f"total: dialogues {total.dialogues}, model calls "
                                f"{total.total_calls:,.0f}, {_tokens(total)}, {_price(total)}, "
                                f"time {_time(total, concurrency)}")
            models = {m for e in self.items.values() for m in e.models.values()}
            reporter.write_line(f"assumed: {ASSUMED}; {kinds_said(models)}; before the cache "
                                f"(a call recorded there is replayed for nothing)")
        for note in sorted(self.notes):
            reporter.write_line(f"note: {note}")
        made = self.calls_made() + self._workers_calls
        reporter.write_line(f"no dialogue held: model calls {made}; every ragdive item was "
                            f"skipped ({SKIPPED})")


def _figures(items: list[ItemEstimate], concurrency: int) -> Figures:
    """What the dialogues of one test function's ``items`` take: they run at once."""
    figures = Figures(time=seconds([(e.models, e.calls, e.dialogues) for e in items],
                                   concurrency))
    for e in items:
        figures.add(Figures(dialogues=e.dialogues, most=e.most))
        for s in e.calls.stages:
            figures.add(Figures(calls={s.name: s.calls * e.dialogues},
                                tokens={e.models[s.role]: (s.prompt_tokens * e.dialogues,
                                                           s.completion_tokens * e.dialogues)}))
    return figures


def _tokens(figures: Figures) -> str:
    prompt = sum(p for p, _ in figures.tokens.values())
    completion = sum(c for _, c in figures.tokens.values())
    return f"tokens ~{prompt:,.0f} in / ~{completion:,.0f} out"


def _price(figures: Figures) -> str:
    """The price of the tokens by model, from litellm's price table; a model it has no
    price for is named "price unknown"."""
    known: dict[str, float] = {}
    unknown = []
    for model, (prompt, completion) in sorted(figures.tokens.items()):
        cost = 0.0 if free(model) else price(Model(model), round(prompt), round(completion))
        if cost is None:
            unknown.append(model)
        else:
            known[model] = cost
    parts = ", ".join(f"{model} free" if free(model) else f"{model} ${cost:.4f}"
                      for model, cost in known.items())
    if not unknown:
        return f"price ${sum(known.values()):.4f} ({parts})"
    rest = f"; ${sum(known.values()):.4f} for the rest ({parts})" if known else ""
    return f"price unknown for {', '.join(unknown)} (not in litellm's price table){rest}"


def _time(figures: Figures, concurrency: int) -> str:
    low, high = figures.time
    return f"{duration(low)} to {duration(high)} at concurrency {concurrency}"
