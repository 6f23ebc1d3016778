"""The judge profiles of a session (:mod:`~pytest_ragdive.engine.base.profile`): an item's
settings judged by them, what the summary says of them, and a band scored with other
profiles, which is stale."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engine.base.profile import COMMAND

if TYPE_CHECKING:
    from ..engine.base.judges import Judges
    from ..engine.base.profile import Profiles
    from .options import ItemSettings
    from .records import ProducedBy

#: where the summary's command writes a profile
PROFILE_FILE = "ragdive-profiles.json"


def judged(chosen: ItemSettings, judges: Judges, profiles: Profiles,
           notes: set[str]) -> ItemSettings:
    """``chosen`` for these judges by their profiles; the notes say which profile judged,
    or that a model is uncalibrated and how to calibrate it, and which metrics were left
    out and why."""
    evaluator = judges.models["evaluator"].name
    labels = {role: model.label for role, model in judges.models.items()}
    settings = chosen.judged_by(labels, evaluator, profiles)
    left_out = [m for m in chosen.metrics if m not in settings.metrics]
    if left_out:
        profile = profiles.of(evaluator)
        one = len(left_out) == 1
        notes.add(f"{', '.join(left_out)} not scored: {evaluator} judged "
                  f"{'it' if one else 'each'} at or near chance on labelled cases (its judge "
                  f"profile: {'; '.join(f'{m} {profile.judgement(m).why()}' for m in left_out)}"
                  f"); name {'it' if one else 'them'} in ragdive_metrics to score anyway")
    for model in sorted({m.name for m in judges.models.values()}):
        notes.add(described(model, profiles))
    return settings


def described(model: str, profiles: Profiles) -> str:
    """What the summary says of ``model``'s judge profile."""
    origin = profiles.origin(model)
    if origin == "uncalibrated":
        return (f"judge {model} is uncalibrated: every check asked, every threshold at the "
                f"plain reading (docs/judges.md). Calibrate it with: "
                f"{COMMAND.format(model=model, out=PROFILE_FILE)}, then set "
                f"ragdive_profiles = {PROFILE_FILE} in the ini file")
    profile = profiles.of(model)
    return (f"judge {model} scored with its profile {origin} (calibrated {profile.calibrated}; "
            f"bands record it as {profile.record()})")


def stale_profiles(recorded: ProducedBy, produced: ProducedBy) -> str | None:
    """Why a band whose ``recorded`` produced_by holds other judge profiles than this run's
    cannot judge it; a band from before profiles, which records none, was scored as
    :func:`~pytest_ragdive.calibration.files.legacy` says (the shipped profile, for the
    embedded model)."""
    now = produced.profiles
    before = recorded.profiles
    if now is None or before == now:
        return None
    if before is None:
        from ..calibration.files import legacy

        before = {label: legacy(label.split(" @ ")[0]).record()
                  for label in sorted(set((recorded.judges or {}).values()))}
        if before == now:
            return None
    return f"profiles: {before!r} -> {now!r}"
