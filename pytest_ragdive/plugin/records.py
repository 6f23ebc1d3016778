"""The plugin's records: what a check kept of an item (``ItemResult``, sent from an xdist
worker to the controller as JSON), a test function's verdict (``FunctionResult``) and its
floors and ceilings held (``Limit``), their ``Status``, and a band file's content
(``BandDoc``, with what produced it, ``ProducedBy``).

The pydantic records dump only the fields they were given or read (``_Given``), so that a
band file, the run record and a merge of shard records keep the form they had as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from ..engine.base.models import Dialogue

if TYPE_CHECKING:
    from .verdict import MetricVerdict

__all__ = ["DIGITS", "UNUSABLE", "BandDoc", "FunctionResult", "ItemResult", "Limit",
           "MetricBand", "ProducedBy", "Rule", "Status"]

#: Band files store values rounded to this many digits; values are compared at that precision.
DIGITS = 4

#: what decides a test function: its aggregate band, or the permutation test of its runs
Rule = Literal["band", "permutation"]


class Status(StrEnum):
    """What an item's check, or a test function's verdict, came to."""

    RECORDED = "recorded"  # on update: a band to write
    PASSED = "passed"
    IMPROVED = "improved"  # better than its band
    REGRESSED = "regressed"
    INCONCLUSIVE = "inconclusive"  # a test's runs cannot tell a change from noise
    SKIPPED = "skipped"  # a test with nothing decided
    MISSING = "missing"  # an item without a band file
    STALE = "stale"  # an item whose band was recorded for other settings
    ERROR = "error"  # an item whose dialogue failed (or its band, before it is checked)


#: an item of one of these has no result a test's verdict can use
UNUSABLE = frozenset({Status.ERROR, Status.MISSING, Status.STALE})


class _Given(BaseModel):
    """A record that dumps only the fields it was given or read, and keeps keys it does
    not know (a band file of another version, edited by hand)."""

    model_config = ConfigDict(extra="allow")

    @model_serializer(mode="wrap")
    def _given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        given = self.model_fields_set | set(self.__pydantic_extra__ or {})
        return {key: value for key, value in handler(self).items() if key in given}


class ProducedBy(_Given):
    """What a band was recorded with: a band of other settings is stale (``documents``: an
    aggregate band's, over how many; ``plugin``: an item band's version; ``turns_held``: the
    fewest turns an item's run held where its document ran out of facts)."""

    turns: int | None = None
    turns_held: int | None = None
    role: str | None = None
    metrics: list[str] = []
    judges: dict[str, str] | None = None
    prompts: str | None = None
    profiles: dict[str, str] | None = None
    openers: str | None = None
    plugin: str | None = None
    documents: int | None = None


class MetricBand(_Given):
    """One metric's band: its baseline runs (with the generator's seed of each, where
    known) and their min, max and mean."""

    min: float
    max: float
    mean: float | None = None
    runs: list[float] = []
    seeds: list[int] | None = None


class BandDoc(_Given):
    """A band file's content."""

    metrics: dict[str, MetricBand]
    produced_by: ProducedBy


class ItemResult(_Given):
    """What the checks of one item kept: its runs' scores and seeds, what they cost, its
    band file and the band's verdict; on update the band to write."""

    model_config = ConfigDict(extra="forbid")

    function: str = ""
    location: tuple[str, int | None, str] | None = None
    document: str = ""
    scores: dict[str, float] = {}
    #: every run's scores (the baseline runs on update, else the candidate's runs), by metric
    runs: dict[str, list[float]] = {}
    seeds: dict[str, list[int | None]] = {}
    turns: int = 0
    dialogues: int = 1
    rejections: int = 0
    rejected_for: dict[str, int] = {}
    usage: dict[str, int | float] = {}
    breakdown: dict[str, dict[str, dict[str, list[float | int]]]] = {}  # Cells: sums, counts
    aggregate_file: str | None = None
    file: str = ""
    judges: dict[str, str] = {}
    turns_per_dialogue: int = 0
    confirm_runs: int = 0  # what sizes a check's runs (reach)
    role: str = ""
    #: the test function's floors and ceilings (metric -> bound), where it has any
    floors: dict[str, float] = {}
    ceilings: dict[str, float] = {}
    #: where its runs could not score some metrics (:mod:`.applicable`): the context metrics
    #: left out for a bot that returned no contexts, the fewest turns a run held
    no_contexts: list[str] = []
    turns_held: int | None = None
    status: Status = Status.ERROR
    dialogue: Dialogue | None = None  # the first run's, for the reports
    #: runs or metrics left out of its band or verdict, and why
    unscored: list[str] = []
    produced_by: ProducedBy | None = None  # on update
    band: BandDoc | None = None  # on update: the band to write
    band_doc: BandDoc | None = None  # the band it was checked against
    left_band: list[str] = []  # the first run's metrics outside their band, worse, and why
    left_band_metrics: list[str] = []

    def without_dialogue(self) -> ItemResult:
        """This result without its dialogue (which the run record keeps apart)."""
        return ItemResult.model_validate(self.model_dump(exclude={"dialogue"}))


class Limit(BaseModel):
    """One metric's floor (the least mean) or ceiling (the greatest), and the mean held to
    it: the same mean the summary prints, over the documents that ran."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str
    kind: Literal["floor", "ceiling"]
    bound: float
    mean: float | None = None  # None: no document scored the metric
    enforced: bool = True  # False on update: reported, and the bands written all the same

    @property
    def met(self) -> bool:
        if self.mean is None:
            return False
        mean = round(self.mean, DIGITS)  # compared as band files hold values
        return mean >= self.bound if self.kind == "floor" else mean <= self.bound

    @property
    def failed(self) -> bool:
        """Whether it fails the test's verdict: a check, and the bound not met."""
        return self.enforced and not self.met

    @property
    def outcome(self) -> str:
        """``met``, ``below``, ``above`` or ``not scored``."""
        if self.mean is None:
            return "not scored"
        return "met" if self.met else "below" if self.kind == "floor" else "above"

    def describe(self) -> str:
        """E.g. "correctness mean 0.72 below its floor 0.8"."""
        bound = f"its {self.kind} {_num(self.bound)}"
        if self.mean is None:
            return (f"{self.metric} has a {self.kind} of {_num(self.bound)} but no document "
                    f"scored it (see the notes); score it, naming it in metrics, or remove "
                    f"its {self.kind}")
        relation = "meets" if self.met else self.outcome
        return f"{self.metric} mean {_num(self.mean)} {relation} {bound}"


def _num(value: float) -> str:
    """``value`` to at most 4 places, as band files hold it: 0.72, 0.7996, 1."""
    return f"{value:.4f}".rstrip("0").rstrip(".")


@dataclass
class FunctionResult:
    """A test function's verdict over its items: the means of its metrics against its
    aggregate band (``rule`` band), or the permutation verdict of its documents' runs."""

    function: str
    documents: int
    means: dict[str, float]
    rule: Rule
    location: tuple[str, int | None, str] | None = None
    status: Status = Status.SKIPPED
    note: str = ""
    band: dict[str, tuple[float, float]] = field(default_factory=dict)  # aggregate: min, max
    doc: BandDoc | None = None  # the aggregate band
    deviations: list[tuple[str, bool]] = field(default_factory=list)  # metric, worse
    verdicts: list[MetricVerdict] = field(default_factory=list)
    left_band: dict[str, list[str]] = field(default_factory=dict)  # node id -> problems
    design: str = ""  # what the permutation verdict stood on
    limits: list[Limit] = field(default_factory=list)  # its floors and ceilings, held

    @property
    def missed(self) -> list[Limit]:
        """The floors and ceilings that fail its verdict (none on update)."""
        return [limit for limit in self.limits if limit.failed]
