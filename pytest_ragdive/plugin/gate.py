"""The checks of one item: the dialogue's own errors (before the test body runs, so that
a body reading the scores cannot hide the cause), then, after the body, its band. Under
the band verdict a score outside its band fails the item; under the permutation verdict
it is kept as the place to look, and the test function's verdict decides (``decision``)."""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..engine.metrics import METRICS
from . import bands, breakdown
from .marker import function_key

if TYPE_CHECKING:
    from ..engine.judges import Judges
    from ..engine.models import Dialogue
    from .options import ItemSettings


def check_dialogue(
    item: pytest.Item,
    settings: ItemSettings,
    judges: Judges,
    dialogues: list[Dialogue],
    *,
    aggregate_file: str | None,
    results: dict[str, dict[str, Any]],
    keep_dialogue: bool = False,
    update: bool = False,
) -> None:
    """Put the item's result record (sent to the xdist controller) into ``results``, then
    fail the item when one of its dialogues could not be completed or evaluated.

    A metric a judge could not score in a run (ragas finding nothing to judge, a reply it
    could not read) is missing evidence, not evidence: it is left out of that metric's band
    or test and said; on update, some run must have scored it. So is a run that is one of
    several (a baseline or confirmation run) whose generator wrote no acceptable turn. A
    metric left unscored by the bot (no contexts to judge) fails the item."""
    first = dialogues[0]
    scored = [m for m in METRICS if any(m in d.scores for d in dialogues)]
    path = bands.item_path(item)
    record: dict[str, Any] = {
        "function": function_key(item),
        "location": [item.location[0], item.location[1], item.location[2].split("[", 1)[0]],
        "document": first.document_id,
        "scores": dict(first.scores),
        # every run's scores: the baseline runs on update, else the candidate's runs
        "runs": {m: [d.scores[m] for d in dialogues if m in d.scores] for m in scored},
        "seeds": {m: [d.seed for d in dialogues if m in d.scores] for m in scored},
        "turns": sum(len(d.turns) for d in dialogues),
        "dialogues": len(dialogues),
        "rejections": sum(d.rejection_count for d in dialogues),
        "rejected_for": dict(sorted(sum((Counter(d.rejected_for) for d in dialogues),
                                        Counter()).items())),
        "usage": _usage(dialogues),
        "breakdown": breakdown.cells(dialogues),
        "aggregate_file": aggregate_file,
        "file": str(path),
        "judges": {k: v.label for k, v in judges.models.items()},
        "turns_per_dialogue": settings.turns,
        "confirm_runs": settings.confirm_runs,  # what sizes a check's runs (reach)
        "role": settings.role,
        "status": "error",
    }
    if keep_dialogue:  # for the report, also from xdist workers
        record["dialogue"] = first.model_dump(mode="json")
    results[item.nodeid] = record
    for metric, value in first.scores.items():
        item.user_properties.append((f"ragdive.{metric}", round(value, bands.DIGITS)))

    for run, d in enumerate(dialogues, 1):
        errors = dict(d.errors)
        if "generation" in errors and (run > 1 or update) and scored:
            record.setdefault("unscored", []).append(
                f"run {run}: not held: {errors.pop('generation')}")
        for metric in [m for m in d.judge_gaps if m in errors and (m in scored or not update)]:
            record.setdefault("unscored", []).append(f"run {run}: {metric}: {errors.pop(metric)}")
        problems = [f"{what}: {why}" for what, why in errors.items()]
        if problems:
            pytest.fail("the conversation could not be evaluated:\n  " + "\n  ".join(problems),
                        pytrace=False)


@functools.cache
def prompts_digest(role: str, metrics: tuple[str, ...], group: bool = False) -> str:
    """The method's prompts and judge questions and thresholds, as a digest: a band scored
    by other ones measured something else. A role's own prompt and metric (the roles
    ``mistaken`` and ``vague``, ``premise_corrected`` and ``clarified``; the role
    ``switching``, which has no metric of its own) and the prompts of a group of documents
    (``prompts/group/``) count only for the items that use them, so that adding them left
    every other band as it was."""
    from importlib.resources import files

    from ..engine.evaluator import JUDGES
    from ..engine.metrics import ROLE_METRICS
    from ..engine.switching import ROLE as SWITCHING

    unused = {f"{m}.j2" for m in ROLE_METRICS if m not in metrics}
    unused |= {f"{r}.j2" for r in (*ROLE_METRICS.values(), SWITCHING) if r != role}
    folder = files("pytest_ragdive.prompts")
    entries = [*folder.iterdir(), *folder.joinpath("roles").iterdir()]
    texts = sorted(f"{entry.name}\n{entry.read_text(encoding='utf-8')}"
                   for entry in entries if entry.name.endswith(".j2") and entry.name not in unused)
    if group:
        texts += sorted(f"group/{entry.name}\n{entry.read_text(encoding='utf-8')}"
                        for entry in folder.joinpath("group").iterdir()
                        if entry.name.endswith(".j2"))
    judges = sorted((m, j) for m, j in JUDGES.items() if f"{m}.j2" not in unused)
    digest = hashlib.sha256("\n".join([*texts, repr(judges)]).encode())
    return f"sha256 {digest.hexdigest()[:12]}"


def produced_by(settings: ItemSettings, judges: dict[str, str],
                group: bool = False) -> dict[str, Any]:
    """What a band must have been recorded with to judge an item of these settings (``group``:
    about a group of documents): the settings, the judges and their profiles, the package's
    prompts (by digest) and the openers, where there are any, by their number and digest."""
    produced: dict[str, Any] = {"turns": settings.turns, "role": settings.role,
                                "metrics": list(settings.metrics), "judges": judges,
                                "prompts": prompts_digest(settings.role,
                                                          settings.metrics, group)}
    if settings.profiles:
        produced["profiles"] = dict(settings.profiles)
    if settings.openers:
        digest = hashlib.sha256("\n".join(
            f"{o.document or ''}\t{o.message}" for o in settings.openers).encode()).hexdigest()
        produced["openers"] = f"{len(settings.openers)} messages, sha256 {digest[:12]}"
    return produced


def is_group(item: pytest.Item) -> bool:
    """Whether ``item`` is a conversation about a group of documents."""
    from ..engine.models import DocumentGroup

    callspec = getattr(item, "callspec", None)
    document = callspec.params.get("ragdive_document") if callspec else None
    return isinstance(document, DocumentGroup) and len(document.documents) > 1


def leaves_band(path: Path, produced: dict[str, Any], scores: dict[str, float],
                margin: float) -> bool:
    """Whether ``scores`` leave a usable band at ``path`` on the worse side: what draws
    confirmation runs. A missing, stale or broken band draws none (the item fails on it)."""
    try:
        doc = bands.read(path)
    except bands.BaselineError:
        return False
    if doc is None or stale_reason(doc, produced):
        return False
    return any(d.worse for d in bands.compare(doc, scores, margin))


def stale_reason(doc: dict[str, Any], produced: dict[str, Any]) -> str | None:
    """Why a band recorded for other settings, or scored with other judge profiles, cannot
    judge this run, if it can't."""
    from .profiling import stale_profiles

    return bands.stale_reason(doc, produced) or stale_profiles(doc["produced_by"], produced)


def band_runs(path: Path) -> int | None:
    """The fewest baseline runs a metric of the band at ``path`` holds; None when there is
    no readable band (the item fails on it)."""
    try:
        doc = bands.read(path)
    except bands.BaselineError:
        return None
    return min((len(s["runs"]) for s in doc["metrics"].values()), default=None) if doc else None


def check_band(
    item: pytest.Item,
    settings: ItemSettings,
    dialogues: list[Dialogue],
    record: dict[str, Any],
    *,
    update: bool,
    verdict: str,
    margin: float,
    fail_on_improvement: bool,
) -> None:
    """Fail the item when its band is missing, stale or broken, or (band verdict) when its
    scores left it; on update, put the band to write at the end of the session into its
    ``record``."""
    first = dialogues[0]
    path = Path(record["file"])
    produced = produced_by(settings, record["judges"], is_group(item))
    if update:
        from .. import __version__

        record.update(produced_by=produced, status="recorded",
                      band=bands.band(record["runs"], {**produced, "plugin": __version__},
                                     record["seeds"]))
        return
    command = f"pytest '{function_key(item)}' --ragdive-update"
    try:
        doc = bands.read(path)
        stale = stale_reason(doc, produced) if doc is not None else None
        deviations = bands.compare(doc, first.scores, margin) if doc and not stale else []
    except bands.BaselineError as exc:
        problem = str(exc)
    else:
        problem = ""
    if problem:
        pytest.fail(problem, pytrace=False)
    record["band_doc"] = doc
    if doc is None:
        record["status"] = "missing"
        pytest.fail(f"no baseline band at {_rel(path)}; record one with:\n  {command}",
                    pytrace=False)
    if stale:
        record["status"] = "stale"
        pytest.fail(f"the baseline {_rel(path)} was recorded for other settings ({stale}); "
                    f"it is stale. Record it again with:\n  {command}", pytrace=False)
    worse = [d for d in deviations if d.worse]
    better = [d for d in deviations if not d.worse]
    record["left_band"] = [f"{d.describe()}\n      {_culprit(first, d.metric)}" for d in worse]
    record["left_band_metrics"] = sorted({d.metric for d in worse})
    failing = bool(worse) and verdict == "band"
    record["status"] = "regressed" if failing else "improved" if better and not worse else "passed"
    if failing:
        pytest.fail("scores left their baseline band:\n  " + "\n  ".join(record["left_band"]),
                    pytrace=False)
    if better and fail_on_improvement:
        pytest.fail("scores rose above their baseline band (ragdive_fail_on_improvement): "
                    + "; ".join(d.describe() for d in better)
                    + f"\n  accept them with:\n  {command}", pytrace=False)


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _usage(dialogues: list[Dialogue]) -> dict[str, float]:
    from ..llm.usage import Usage

    return Usage.total(d.usage for d in dialogues).model_dump()


def _culprit(dialogue: Dialogue, metric: str) -> str:
    """The turn whose judgement pulled ``metric`` the wrong way, with the judge's reason."""
    judged = [(t.index, t.judgements[metric]) for t in dialogue.turns
              if metric in t.judgements and t.judgements[metric].score is not None]
    if not judged:
        return "no turn was scored"
    worst = min if METRICS[metric] else max
    index, judgement = worst(judged, key=lambda pair: pair[1].score or 0.0)
    question = dialogue.turns[index - 1].generated.rag_input
    return f"turn {index} ({question!r}): {judgement.reason or 'no reason given'}"
