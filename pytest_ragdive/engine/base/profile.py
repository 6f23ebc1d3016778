"""What a judge model can be trusted with, measured: a profile per model.

A :class:`Profile` says, for each judgement (the binary judges, the validator's model
checks, ragas' metrics), whether the model's verdicts were informative on labelled cases,
from what P(yes) its answer reads as yes, how its verdict is read and the figures that
decided it; and whether the model's follow-up messages need rewriting
(:func:`~.follow_ups.follow_up`). The method reads it: a metric the evaluator's profile
finds uninformative is left out of the default metrics, the validator model is asked the
checks its profile finds informative, the generator's messages are rewritten only when its
profile says so. Profiles are written by ``python -m pytest_ragdive calibrate``
(:mod:`pytest_ragdive.calibration`) into a profile file (:func:`parse`, :mod:`pytest_ragdive.calibration.files`); the
embedded model's ships with the package (``profiles.json`` here). A model with none is
judged by :func:`default_profile`: every check asked, every threshold at the plain reading.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

if TYPE_CHECKING:
    from ...llm.model import Model

#: the binary judges' metrics (:mod:`.binary`), ragas' metrics, the validator's model checks
BINARY = ("correctness", "forgetfulness", "context_retention", "premise_corrected", "clarified")
RAGAS = ("faithfulness", "context_precision", "context_recall")
VALIDATOR = ("validator.standalone", "validator.same_meaning", "validator.answer_supported",
             "validator.type_fits")
JUDGEMENTS = (*BINARY, *RAGAS, *VALIDATOR)
#: the plain reading: yes from P(yes) 0.5 (for a judge read against the answer key, from
#: half the key's P(yes))
PLAIN = 0.5
#: a judgement is informative when its held-out balanced accuracy reaches this and its 95%
#: interval lies above chance (0.5)
MIN_ACCURACY = 0.70
#: the command that calibrates a model, for notes and errors
COMMAND = "python -m pytest_ragdive calibrate --model {model} --out {out}"

Reading = Literal["logprobs", "text", "score"]
Interval = tuple[float, float]


class Judgement(BaseModel):
    """One judgement as a model makes it: whether its verdicts carry information, the P(yes)
    from which its answer is yes (None for ragas' scores, which are used as they are), how
    its verdict is read (first-token probabilities, the reply's first word, ragas' score)
    and the figures on labelled cases that decided it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    informative: bool
    threshold: float | None = Field(default=PLAIN, ge=0.0, le=1.0)
    reading: Reading = "logprobs"
    balanced_accuracy: float | None = Field(default=None, ge=0.0, le=1.0)
    interval: Interval | None = None
    auc: float | None = Field(default=None, ge=0.0, le=1.0)
    auc_interval: Interval | None = None
    #: the confusion matrix of the figure: true positives, false negatives, true
    #: negatives, false positives ("positive": a score of 1)
    counts: tuple[int, int, int, int] | None = None
    cases: int = Field(default=0, ge=0)
    measured: str = ""  # what the figures are, on which cases

    def why(self) -> str:
        """The figures, as a note or an error says them."""
        if self.balanced_accuracy is None:
            return self.measured or "not measured"
        interval = (f" [{self.interval[0]:.2f}, {self.interval[1]:.2f}]"
                    if self.interval else "")
        auc = f", AUC {self.auc:.3f}" if self.auc is not None else ""
        return (f"balanced accuracy {self.balanced_accuracy:.3f}{interval}{auc} "
                f"on {self.cases} cases")


class Profile(BaseModel):
    """A judge model's profile: its judgements (one absent is judged at the plain reading),
    whether its follow-up messages need rewriting, when it was calibrated ("" for the
    default) and the digest of the judges' prompts it was calibrated with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judges: str = ""
    calibrated: str = ""
    rewrite_follow_ups: bool = True
    follow_ups: str = ""  # what decided the rewriting
    judgements: dict[str, Judgement] = Field(default_factory=dict)
    #: the names a server gives the same weights (the weights file's, lower case, without
    #: ``.gguf``): a served model so named is judged by this profile (:func:`served_name`)
    served_as: tuple[str, ...] = ()

    @field_validator("judgements")
    @classmethod
    def _known(cls, judgements: dict[str, Judgement]) -> dict[str, Judgement]:
        unknown = sorted(set(judgements) - set(JUDGEMENTS))
        if unknown:
            raise ValueError(f"unknown judgement {unknown[0]!r}; the judgements are "
                             f"{', '.join(JUDGEMENTS)}")
        return judgements

    def judgement(self, name: str) -> Judgement:
        return self.judgements.get(name) or _plain(name)

    def threshold(self, name: str) -> float:
        """The P(yes) from which the answer to ``name``'s question is yes."""
        threshold = self.judgement(name).threshold
        return PLAIN if threshold is None else threshold

    def left_out(self) -> dict[str, Judgement]:
        """The metrics at chance for this model: left out of its default metrics."""
        return {m: j for m in (*BINARY, *RAGAS)
                if not (j := self.judgement(m)).informative}

    def record(self) -> str:
        """What a band records of the profile: calibrated or not, and the digest of what
        it decides (not of its figures: a calibration that decides the same keeps bands)."""
        decides = {"judgements": {n: [(j := self.judgement(n)).informative, j.threshold]
                                  for n in JUDGEMENTS},
                   "rewrite_follow_ups": self.rewrite_follow_ups}
        digest = hashlib.sha256(json.dumps(decides, sort_keys=True).encode()).hexdigest()
        return f"{'calibrated' if self.calibrated else 'uncalibrated'} sha256 {digest[:12]}"


def _plain(name: str) -> Judgement:
    return Judgement(informative=True, threshold=None if name in RAGAS else PLAIN,
                     reading="score" if name in RAGAS else "logprobs",
                     measured="uncalibrated: the plain reading")


def default_profile() -> Profile:
    """The profile of a model nobody calibrated: every judgement asked and scored at the
    plain reading, its follow-up messages rewritten where they lean on nothing."""
    return Profile(judgements={name: _plain(name) for name in JUDGEMENTS})


class Profiles:
    """The profiles a run uses: those given (a profile file's), then the shipped ones,
    then :func:`default_profile`; ``source`` says where the given ones come from."""

    def __init__(self, given: Mapping[str, Profile] | None = None, source: str = "") -> None:
        self.given = dict(given or {})
        self.source = source

    def of(self, model: str) -> Profile:
        return self._find(model)[1] or default_profile()

    def origin(self, model: str) -> str:
        """Where ``model``'s profile comes from, for the run's notes."""
        found, _ = self._find(model)
        return found or "uncalibrated"

    def _find(self, model: str) -> tuple[str, Profile | None]:
        """``model``'s profile by its name, then by the weights it serves (given ones
        first), and where it comes from."""
        given = f"from {self.source}" if self.source else "given"
        if model in self.given:
            return given, self.given[model]
        if model in shipped():
            return "shipped with pytest-ragdive", shipped()[model]
        name = served_name(model)
        for origin, profiles in ((given, self.given), ("shipped with pytest-ragdive", shipped())):
            for weights, profile in profiles.items():
                if name and name in profile.served_as:
                    return f"{origin} for the weights of {weights}", profile
        return "", None


def served_name(model: str) -> str:
    """The name a served ``model`` gives its weights: after the provider and any folder,
    lower case, without ``.gguf`` (``openai//models/Qwen-1.5B.gguf`` -> ``qwen-1.5b``)."""
    return model.partition("/")[2].rsplit("/", 1)[-1].lower().removesuffix(".gguf")


class ProfileError(ValueError):
    """A profile file that cannot be used; the message names it and how to fix it."""


class ProfileFile(BaseModel):
    """A profile file's form (:mod:`pytest_ragdive.calibration.files`)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal[1]
    profiles: dict[str, Profile]


def parse(text: str, where: str) -> dict[str, Profile]:
    """The profiles of a file's ``text``; :class:`ProfileError` naming ``where`` and the
    field when it is not a profile file."""
    try:
        return ProfileFile.model_validate_json(text).profiles
    except ValidationError as exc:
        error = exc.errors()[0]
        place = ".".join(str(part) for part in error["loc"])
        detail = error["msg"].removeprefix("Value error, ")
        raise ProfileError(
            f"{where} is not a judge profile file: {place + ': ' if place else ''}{detail}. "
            f"Write it again with: {COMMAND.format(model='<model>', out=where)}") from None


@functools.cache
def shipped() -> dict[str, Profile]:
    """The profiles that ship with the package (``profiles.json`` beside this module)."""
    from importlib.resources import files

    text = files(__package__).joinpath("profiles.json").read_text(encoding="utf-8")
    return parse(text, "pytest_ragdive/engine/base/profiles.json")


_current: contextvars.ContextVar[Profiles | None] = contextvars.ContextVar(
    "ragdive_profiles", default=None)


@contextlib.contextmanager
def scope(profiles: Profiles) -> Iterator[Profiles]:
    """Judge every model in this context (and the tasks started from it) by ``profiles``."""
    token = _current.set(profiles)
    try:
        yield profiles
    finally:
        _current.reset(token)


def current() -> Profiles:
    """The profiles in force: those of the innermost :func:`scope`, else the shipped ones."""
    return _current.get() or Profiles()


def of(model: Model | str) -> Profile:
    """``model``'s profile among those in force."""
    return current().of(model if isinstance(model, str) else model.name)


def rewrites(model: Model | str) -> bool:
    """Whether ``model``'s follow-up messages are rewritten (:func:`.follow_ups.follow_up`)."""
    return of(model).rewrite_follow_ups
