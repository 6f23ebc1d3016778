"""The ini options and command-line flags, made from the settings table, and their
resolution: command line > marker > ini > default.

Every ini value and flag is parsed and checked once, at start-up, so a bad value stops
the run with one line naming it instead of erroring every item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from ..engine.base.settings import (
    CLI,
    INI,
    MARKER,
    SETTINGS,
    SettingError,
    check,
    default,
    parse,
    scored_metrics,
)

if TYPE_CHECKING:
    from ..engine.base.profile import Profiles
    from ..engine.documents.openers import Opener


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragdive", "RAG-DIVE conversation tests")
    group.addoption("--ragdive-update", action="store_true", default=False,
                    help="record the baseline bands of the selected ragdive tests")
    # beside --ragdive-report and --ragdive-json; a session-wide output, not a setting of
    # the engine's table (nothing but the plugin reads it)
    group.addoption("--ragdive-markdown", dest="ragdive_markdown", default="", metavar="PATH",
                    help="write the verdicts, their metrics and the places to look as "
                         "Markdown here: GitHub's job summary ($GITHUB_STEP_SUMMARY) or a "
                         "pull-request comment")
    for setting in SETTINGS.values():
        if CLI in setting.where:
            kwargs: dict[str, Any] = {"metavar": setting.metavar or setting.name.upper()}
            if setting.choices:
                kwargs = {"choices": setting.choices}
            if setting.kind is bool:  # a switch: given, it is true
                kwargs = {"action": "store_true"}
            group.addoption(setting.flag, dest=f"ragdive_{setting.name}", default=None,
                            help=setting.help, **kwargs)
        if INI in setting.where:
            # read as text and parsed here, so that every value gets the same checks
            parser.addini(setting.ini, help=setting.help, type="string", default="")


@dataclass(frozen=True)
class ItemSettings:
    """What one conversation test item runs with."""
    turns: int
    role: str
    metrics: tuple[str, ...]
    max_regenerations: int
    validation: str
    validator_checks: str
    runs: int
    confirm_runs: int
    confirm_scope: str
    metrics_chosen: bool  # by the marker or the ini file; else the judge may leave some out
    openers: tuple[Opener, ...] = ()
    #: the judge models' profiles (:meth:`.Profile.record`), by model label: what a band
    #: records of them
    profiles: tuple[tuple[str, str], ...] = ()
    #: (metric, bound): the least mean (floors) or the greatest (ceilings) of its test function
    floors: tuple[tuple[str, float], ...] = ()
    ceilings: tuple[tuple[str, float], ...] = ()
    #: fitted to its runs (:mod:`.applicable`): the context metrics left out because the bot
    #: returned no contexts, and the fewest turns a run held where its document ran out of facts
    no_contexts: tuple[str, ...] = ()
    turns_held: int | None = None

    def judged_by(self, judges: dict[str, str], evaluator: str,
                  profiles: Profiles) -> ItemSettings:
        """These settings for ``judges`` (role -> model label) by ``profiles``: unchosen
        metrics lose those the ``evaluator`` model's profile measured at chance."""
        metrics = self.metrics if self.metrics_chosen else scored_metrics(
            None, self.turns, "ragdive", evaluator, self.role, profiles)
        records = {label: profiles.of(label.split(" @ ")[0]).record()
                   for label in sorted(set(judges.values()))}
        return replace(self, metrics=metrics, profiles=tuple(records.items()))


class Options:
    """The session's settings from the command line and the ini file, checked."""

    def __init__(self, config: pytest.Config) -> None:
        self.update: bool = config.getoption("ragdive_update")
        self.markdown: str = config.getoption("ragdive_markdown") or ""
        self.rootdir = config.rootpath
        self._profiles: Profiles | None = None
        self.cli: dict[str, Any] = {}
        self.ini: dict[str, Any] = {}
        try:
            for name, setting in SETTINGS.items():
                if CLI in setting.where:
                    raw = config.getoption(f"ragdive_{name}")
                    if raw is not None:
                        self.cli[name] = parse(name, str(raw), setting.flag)
                if INI in setting.where:
                    raw = config.getini(setting.ini)
                    if isinstance(raw, list):  # an ini file may spread a value over lines
                        raw = " ".join(raw)
                    if raw.strip():
                        self.ini[name] = parse(name, raw, f"ini {setting.ini}")
        except SettingError as exc:
            raise pytest.UsageError(str(exc)) from None

    def profiles(self) -> Profiles:
        """The judge profiles of the session: the ini file's ``ragdive_profiles`` (relative
        to the rootdir) over the shipped ones, read once; a missing, malformed or stale file
        is a usage error."""
        if self._profiles is None:
            from ..calibration.files import ProfileError, load
            from ..engine.base.profile import Profiles

            path = self.get("profiles")
            try:
                self._profiles = load(self.rootdir / path, path) if path else Profiles()
            except ProfileError as exc:
                raise pytest.UsageError(f"ini ragdive_profiles: {exc}") from None
        return self._profiles

    def get(self, name: str) -> Any:
        """A session-wide setting: command line > ini > default."""
        if name in self.cli:
            return self.cli[name]
        return self.ini.get(name, default(name))

    def for_item(self, marker_kwargs: Mapping[str, object], where: str, *,
                 module_dir: Path = Path(), rootdir: Path = Path()) -> ItemSettings:
        """An item's settings: command line > marker > ini > default. Paths in the marker
        are relative to the test module's folder, in the ini file to the rootdir."""
        def pick(name: str) -> Any:
            if name in self.cli:
                return self.cli[name]
            if MARKER in SETTINGS[name].where and marker_kwargs.get(name) is not None:
                return check(name, marker_kwargs[name], where)
            return self.ini.get(name, default(name))


        turns = pick("turns")
        # the marker's options were checked at collection (marker.check_options)
        chosen = cast("Sequence[str] | None",
                      marker_kwargs.get("metrics") or self.ini.get("metrics"))
        try:
            role = pick("role")
            metrics = scored_metrics(tuple(chosen) if chosen else None, turns, where, role=role)
            return ItemSettings(turns=turns, role=role, metrics=metrics,
                                max_regenerations=pick("max_regenerations"),
                                validation=pick("validation"),
                                validator_checks=pick("validator_checks"), runs=pick("runs"),
                                confirm_runs=pick("confirm_runs"),
                                confirm_scope=pick("confirm_scope"), metrics_chosen=bool(chosen),
                                openers=self._openers(marker_kwargs, where, module_dir, rootdir),
                                floors=self._limits("floors", marker_kwargs, metrics, where),
                                ceilings=self._limits("ceilings", marker_kwargs, metrics, where))
        except SettingError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _limits(self, name: str, marker_kwargs: Mapping[str, object], metrics: tuple[str, ...],
                where: str) -> tuple[tuple[str, float], ...]:
        """A test's floors or ceilings: the ini file's, for the metrics the test scores, with
        the marker's over them; the marker's for a metric it does not score is an error."""
        given = marker_kwargs.get(name)
        own: dict[str, float] = check(name, given, where) if given is not None else {}
        unscored = [m for m in own if m not in metrics]
        if unscored:
            one = len(unscored) == 1
            raise SettingError(
                f"{where}: {name}: {', '.join(unscored)} {'is' if one else 'are'} not scored "
                f"by this test (it scores {', '.join(metrics)}); add {'it' if one else 'them'} "
                f"to metrics=, or remove {'its' if one else 'their'} {name.removesuffix('s')}")
        merged = {**self.ini.get(name, {}), **own}
        return tuple((m, merged[m]) for m in metrics if m in merged)

    def _openers(self, marker_kwargs: Mapping[str, object], where: str, module_dir: Path,
                 rootdir: Path) -> tuple[Opener, ...]:
        source, root, origin = marker_kwargs.get("openers"), module_dir, where
        if source is None:
            source, root, origin = self.ini.get("openers"), rootdir, "ini ragdive_openers"
        if not source:
            return ()
        from ..engine.documents.openers import load_openers

        try:
            return load_openers(cast("str | Path", source), root=root)
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"{origin}: {exc}") from None


_PREAMBLE = """\
# Configuration reference

Every setting of pytest-ragdive, generated from the one table in
`pytest_ragdive/engine/base/settings.py` (`tests/test_settings.py` fails when this page and the code
disagree; regenerate it with `python -m pytest_ragdive.plugin.options > docs/configuration.md`).

Where a setting can be given in several places, the **command line** wins over the **marker**
(`@ragdive.conversation(...)`), the marker over the **ini file** (`pytest.ini`, `tox.ini`,
`setup.cfg` or `[tool.pytest.ini_options]`), and the ini file over the **default**. Every value is
checked when pytest starts or collects, so a bad value stops the run with one line naming it.
`arun_dialogue` / `run_dialogue` take the settings marked for them as keyword arguments, with the
same defaults and checks. `--ragdive-update` records the bands of the selected tests;
`--ragdive-markdown PATH` writes the verdicts, their metrics and the places to look as Markdown
(GitHub's job summary, a pull-request comment) beside `--ragdive-report` and `--ragdive-json`.

"""


def reference() -> str:
    """The configuration reference in Markdown: ``docs/configuration.md``."""
    where = {CLI: "command line", MARKER: "marker", INI: "ini", "arun_dialogue": "arun_dialogue"}
    lines = [
        "| setting | ini | command line | marker / `arun_dialogue` | accepts | default |",
        "|---|---|---|---|---|---|",
    ]
    for s in SETTINGS.values():
        other = [where[w] for w in s.where if w in (MARKER, "arun_dialogue")]
        default_text = (" ".join(s.default) if isinstance(s.default, tuple)
                        else str(s.default).lower() if isinstance(s.default, bool)
                        else s.default if s.default not in ("", {}) else "(none)")
        lines.append(
            f"| `{s.name}` | {f'`{s.ini}`' if INI in s.where else ''} | "
            f"{f'`{s.flag}`' if CLI in s.where else ''} | {', '.join(other)} | "
            f"{s.accepts} | `{default_text}` |"
        )
    lines += ["", *(f"* `{s.name}`: {s.help}." for s in SETTINGS.values())]
    return _PREAMBLE + "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference(), end="")

