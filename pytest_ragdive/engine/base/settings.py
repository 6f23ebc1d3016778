"""Every setting of pytest-ragdive, in one table.

The marker's options, the ini options, the command line, :func:`arun_dialogue`'s keyword
arguments and the configuration reference in the docs all come from ``SETTINGS``; this is
the only place a default is written and ``check`` the only place a value is validated.
Where a setting may be given in several places, the command line wins over the marker,
the marker over the ini file, and the ini file over the default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...llm.structured import STRUCTURED_OUTPUTS
from .errors import SettingError
from .forms import EXAMPLE, GROUP_FORM, check_group, check_limits, parse_limits
from .metrics import METRICS, MULTI_TURN_METRICS, ROLE_METRICS

if TYPE_CHECKING:
    from .profile import Profiles

#: The metrics scored by default in every role.
EVERY_ROLE = tuple(m for m in METRICS if m not in ROLE_METRICS)

#: Where a setting may be given.
CLI, MARKER, INI, DIALOGUE = "command line", "marker", "ini", "arun_dialogue"


@dataclass(frozen=True)
class Setting:
    name: str
    kind: type  # int, float, str, bool, tuple (a list of names) or dict (metric -> bound)
    default: Any
    help: str
    where: tuple[str, ...]
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    #: the ini option's name when it differs from ``ragdive_<name>``
    ini_name: str = ""
    metavar: str = ""
    #: what a valid value looks like, where the kind does not say it
    form: str = ""

    @property
    def ini(self) -> str:
        return self.ini_name or f"ragdive_{self.name}"

    @property
    def flag(self) -> str:
        return f"--ragdive-{self.name.replace('_', '-')}"

    @property
    def accepts(self) -> str:
        """What a valid value looks like, for messages and docs."""
        if self.form:
            return self.form
        if self.choices:
            kinds = " or ".join(repr(c) for c in self.choices)
            return f"a list of {', '.join(self.choices)}" if self.kind is tuple else kinds
        if self.kind is bool:
            return "true or false"
        if self.kind in (int, float):
            noun = "an integer" if self.kind is int else "a number"
            return noun if self.minimum is None else f"{noun} >= {self.minimum:g}"
        return "text"


_ALL = (CLI, MARKER, INI, DIALOGUE)
#: what a floors or ceilings value looks like
_LIMITS = "{}-is-better metrics, each with a value in [0, 1]: {} (in the marker, a dict)"
#: a timeout: 0 would end every call at once
_SECONDS: dict[str, Any] = {"minimum": 0.001, "form": "a number of seconds above 0"}

SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("turns", int, 5, "turns per conversation", _ALL, minimum=1, metavar="N"),
    Setting("role", str, "precise", "the simulated user's role: precise, context-aware, "
            "forgetful, skeptic, mistaken (from turn 2 on, each message states a fact of the "
            "document with one figure changed, then asks), vague (from turn 2 on, asks what "
            "several facts of the document answer with different figures, without saying "
            "which one it means), switching (about a group of documents, group=2: from turn 2 "
            "on, asks about another document, then goes back to turn 1's without naming it, "
            "and again), or a sentence describing a persona",
            _ALL, metavar="ROLE", form="a built-in role or a sentence"),
    Setting("metrics", tuple, EVERY_ROLE, "metrics to score (default: the six of RAG-DIVE, "
            "and premise_corrected in role mistaken and clarified in role vague, the only ones "
            "they may be chosen in; with one "
            "turn, the multi-turn ones are left out, and so are those the evaluator's judge "
            "profile measured at chance (docs/judges.md): faithfulness, context_precision, "
            "context_recall and context_retention on the embedded model)",
            (MARKER, INI, DIALOGUE), choices=tuple(METRICS)),
    Setting("max_regenerations", int, 3, "validator rejections allowed per turn",
            (MARKER, INI, DIALOGUE), minimum=0),
    Setting("validation", str, "until_valid", "until_valid: the validator checks every "
            "attempt; once: it checks one per turn, as in the RAG-DIVE paper",
            (MARKER, INI, DIALOGUE), choices=("until_valid", "once")),
    Setting("validator_checks", str, "auto", "the validator model's yes/no checks: auto asks "
            "those its judge profile measured informative (docs/judges.md): none on the "
            "embedded model, whose answers measured at chance, so there the exact checks alone "
            "validate, and every one on a model with no profile; all or exact (none) whatever "
            "the model", (MARKER, INI, DIALOGUE),
            choices=("auto", "all", "exact")),
    Setting("runs", int, 3, "baseline runs per item on --ragdive-update", (CLI, MARKER, INI),
            minimum=1, ini_name="ragdive_baseline_runs", metavar="N"),
    Setting("seed", int, 0, "first generator seed: a check uses it (and N+1, ... for "
            "confirmation runs), an update N, N+1, ...; a seed the bands were not recorded "
            "with holds a new conversation", (CLI, DIALOGUE),
            minimum=0, metavar="N"),
    Setting("documents", str, "", "the source documents: a file, folder or glob (relative to "
            "the rootdir in the ini file, to the test module in the marker)", (MARKER, INI),
            form="a path or glob (the marker also takes a list of Documents)"),
    Setting("group", str, "", "documents per conversation, for the documents of the marker or "
            "the ini file (document_fixture takes its own group=): N puts each document with the "
            "N - 1 that share the most distinctive words with it; a path names a file of "
            "groups, one a line (relative to the rootdir in the ini file, "
            "to the test module in the marker); left out, one document per conversation",
            (MARKER, INI), ini_name="ragdive_document_group", form=GROUP_FORM),
    Setting("openers", str, "", "a JSONL file of real users' first messages, one "
            '{"message": ..., "document": <id>} per line (the document optional): each dialogue '
            "starts from one of its document's, drawn by seed, else from one naming no document "
            "(relative to the rootdir in the ini file, to the test module in the marker)",
            (MARKER, INI), form="a path to a .jsonl file"),
    Setting("verdict", str, "permutation", "what fails the session: permutation (per test "
            "function and metric, a stratified permutation test of the candidate's runs "
            "against the baseline's, Holm over the metrics that can reach "
            "significance at ragdive_alpha; a band left by one "
            "item is shown, not failed) or band (the paper's rule: any score outside its "
            "min-max band fails its item)", (CLI, INI), choices=("permutation", "band")),
    Setting("alpha", float, 0.05, "the permutation verdict's false-alarm rate per test "
            "function, over all its metrics", (INI,), minimum=0.0001, form="a number in "
            "(0, 0.5]"),
    Setting("confirm_runs", int, 2, "permutation verdict: candidate runs added per document, "
            "with the seeds after the first, when its first run leaves its band on the worse "
            "side; 0 never adds any", (CLI, MARKER, INI), minimum=0, metavar="N"),
    Setting("confirm_scope", str, "test", "which documents draw confirmation runs: "
            "test (every document of the test function once one's first run left its band on "
            "the worse side: more power) or document (only those whose first run did: fewer "
            "runs)",
            (CLI, MARKER, INI), choices=("document", "test")),
    Setting("floors", dict, {}, "per metric, the least mean over a test function's documents, "
            "an absolute threshold as in DeepEval or promptfoo: a check whose mean is below it "
            "fails the test's verdict, whatever the baseline's; an update says so and records "
            "the bands all the same. The ini file's hold for every test that scores the metric, "
            "the marker's over them (a floor of 0 lifts one); the marker's for a metric the "
            "test does not score is an error", (MARKER, INI), form=_LIMITS.format(
                "higher", EXAMPLE["floors"])),
    Setting("ceilings", dict, {}, "the same for a lower-is-better metric (forgetfulness): the "
            "greatest mean (a ceiling of 1 lifts one)", (MARKER, INI),
            form=_LIMITS.format("lower", EXAMPLE["ceilings"])),
    Setting("band_margin", float, 0.0, "tolerance added to both sides of every band", (INI,),
            minimum=0),
    Setting("fail_on_improvement", bool, False, "fail items that score above their band, "
            "under either verdict", (INI,)),
    Setting("model", str, "", "litellm model for all three judge roles (overrides the "
            "ragdive_judges fixture and the ini models)", (CLI,), metavar="MODEL"),
    Setting("generator_model", str, "", "litellm model of the conversation generator", (INI,)),
    Setting("validator_model", str, "", "litellm model of the validator (default: the "
            "generator's)", (INI,)),
    Setting("evaluator_model", str, "", "litellm model of the evaluator (default: the "
            "generator's)", (INI,)),
    Setting("profiles", str, "", "the judge profile file (written by python -m "
            "pytest_ragdive calibrate, relative to the rootdir): its models' profiles replace "
            "the shipped ones; a model with none is uncalibrated, judged at the plain reading "
            "with every check asked (docs/judges.md)", (INI,), form="a path to a .json file"),
    Setting("record_mode", str, "new", "response cache: none replays only, new records "
            "misses, all records every call again", (CLI, INI, DIALOGUE),
            choices=("none", "new", "all")),
    Setting("cache_dir", str, ".ragdive/cache", "response cache folder (relative to the "
            "rootdir)", (CLI, INI, DIALOGUE), metavar="DIR"),
    Setting("concurrency", int, 8, "model calls in flight per process", (CLI, INI),
            minimum=1, metavar="N"),
    Setting("report", str, "", "write the HTML report of the session here: every dialogue "
            "turn by turn, every band as a chart", (CLI,), metavar="PATH"),
    Setting("json", str, "", "write the same content as JSON here", (CLI,), metavar="PATH"),
    Setting("estimate", bool, False, "run no item: print what the selected ones would take, "
            "per test function and in total (dialogues, model calls by stage, tokens, price, "
            "a time range at ragdive_concurrency; docs/cost.md), without a model call",
            (CLI,), form="a switch (no value)"),
    Setting("structured_output", str, "auto", "how models are asked for JSON: auto finds what "
            "each model's server takes (json_schema, json_object, tools, then text) once per "
            "run; or one of "
            "json_schema, json_object, tools, text for a server that misreports", (INI,),
            choices=STRUCTURED_OUTPUTS),
    Setting("retries", int, 4, "attempts after the first for a call that failed for a "
            "reason that may pass (connection, timeout, other 5xx); a provider that says it is "
            "busy (429, 503, 529) is retried within ragdive_retry_budget instead", (INI,),
            minimum=0),
    Setting("retry_wait", float, 30.0, "the longest wait between two attempts, in seconds "
            "(a provider that asks for longer with Retry-After fails the call, saying so)", (INI,), minimum=0),
    Setting("retry_budget", float, 300.0, "the seconds one call may wait between its "
            "attempts in all (jittered backoff, or the provider's Retry-After); a call whose "
            "next wait would pass it fails, naming this setting. Meanwhile the calls in flight "
            "to a busy provider are halved, and grow back as it answers", (INI,), minimum=0),
    Setting("call_timeout", float, 120.0, "seconds per model call", (INI,), **_SECONDS),
    Setting("adapter_timeout", float, 120.0, "seconds per answer of the RAG adapter",
            (INI, DIALOGUE), **_SECONDS),
    Setting("dialogue_timeout", float, 1800.0, "seconds per dialogue, all turns and scoring",
            (INI, DIALOGUE), **_SECONDS),
)}

#: The marker's options, in table order.
MARKER_OPTIONS = tuple(name for name, s in SETTINGS.items() if MARKER in s.where)


def default(name: str) -> Any:
    return SETTINGS[name].default


def parse(name: str, text: str, where: str) -> Any:
    """A setting's value from the text of an ini line or a command-line argument."""
    setting = SETTINGS[name]
    if setting.kind is dict:  # metric:value pairs, whose own messages say what is wrong
        return check(name, parse_limits(name, text, where), where)
    try:
        if setting.kind is tuple:
            value: Any = tuple(text.replace(",", " ").split())
        elif setting.kind is bool:
            if text.strip().lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError
            value = text.strip().lower() in ("true", "1", "yes")
        else:
            value = setting.kind(text.strip())
    except ValueError:
        raise SettingError(
            f"{where}: {name} = {text!r} is not {setting.accepts}"
        ) from None
    return check(name, value, where)


def check(name: str, value: Any, where: str) -> Any:
    """``value`` if setting ``name`` may take it, else :class:`SettingError`."""
    setting = SETTINGS.get(name)
    if setting is None:
        raise SettingError(f"{where}: unknown setting {name!r}")
    bad = SettingError(f"{where}: {name}={value!r} is not {setting.accepts}")
    if setting.kind is dict:
        return check_limits(name, value, where)
    if setting.kind is tuple:
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
            raise bad
        # a role's own metric added by the pytest_ragdive_roles hook joins METRICS
        choices = tuple(METRICS) if name == "metrics" else setting.choices
        unknown = [v for v in value if v not in choices]
        if choices and unknown:
            raise SettingError(f"{where}: unknown {name} {', '.join(map(repr, unknown))}; "
                               f"choose from {', '.join(choices)}")
        return tuple(value)
    if name == "group":
        return check_group(value, where)
    if setting.kind is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if setting.kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        if setting.kind is int and not isinstance(value, int):
            raise bad
        if math.isnan(value) or (setting.minimum is not None and value < setting.minimum):
            raise bad
        if name == "alpha" and value > 0.5:
            raise bad
        return setting.kind(value)
    if not isinstance(value, str):
        raise bad
    if setting.choices and value not in setting.choices:
        raise bad
    if name == "role":
        from ..roles.registry import check_role

        check_role(value, where)
    return value


def check_all(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Every value checked; unknown names are an error listing the valid ones."""
    return {name: check(name, value, where) for name, value in values.items()}


def scored_metrics(
    metrics: tuple[str, ...] | None, turns: int, where: str, judge: str | None = None,
    role: str = "precise", profiles: Profiles | None = None,
) -> tuple[str, ...]:
    """The metrics a dialogue of ``turns`` turns in ``role`` scores, in the canonical order.

    Left unchosen, they are those of every role and the role's own (``ROLE_METRICS``),
    less the multi-turn ones in a one-turn dialogue and those that the ``judge`` model's
    profile (among ``profiles``, else the shipped ones) measured at chance; chosen
    explicitly, a multi-turn one is an error in one turn, and a role's own metric in
    another role.
    """
    own = tuple(m for m, r in ROLE_METRICS.items() if r == role)
    if metrics is None:
        at_chance: dict[str, Any] = {}
        if judge:
            from .profile import Profiles

            at_chance = (profiles or Profiles()).of(judge).left_out()
        chosen = tuple(m for m in (*default("metrics"), *own) if m not in at_chance)
    else:
        chosen = check("metrics", metrics, where)
        foreign = sorted(m for m in chosen if m in ROLE_METRICS and m not in own)
        if foreign:
            raise SettingError(
                f"{where}: {', '.join(foreign)} scores only dialogues in role "
                f"{ROLE_METRICS[foreign[0]]!r}; choose that role or leave it out of metrics")
    follow_up_only = (*MULTI_TURN_METRICS, *ROLE_METRICS)
    if turns == 1:
        asked = sorted(set(chosen) & set(follow_up_only))
        if metrics is not None and asked:
            raise SettingError(
                f"{where}: {', '.join(asked)} need at least 2 turns; raise turns or leave "
                f"them out of metrics"
            )
        chosen = tuple(m for m in chosen if m not in follow_up_only)
    return tuple(m for m in METRICS if m in chosen)
