"""The plugin's records: what a check kept of an item (``ItemResult``, sent from an xdist
worker to the controller as JSON), a test function's verdict (``FunctionResult``), their
``Status``, and a band file's content (``BandDoc``, with what produced it, ``ProducedBy``).

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

__all__ = ["UNUSABLE", "BandDoc", "FunctionResult", "ItemResult", "MetricBand", "ProducedBy",
           "Rule", "Status"]

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
    aggregate band's, over how many; ``plugin``: an item band's version)."""

    turns: int | None = None
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
