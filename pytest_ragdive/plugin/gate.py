"""The checks of one item: the dialogue's own errors (before the test body runs, so that
a body reading the scores cannot hide the cause), then, after the body, its band. Under
the band verdict a score outside its band fails the item; under the permutation verdict
it is kept as the place to look, and the test function's verdict decides (``decision``)."""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..engine.base.metrics import METRICS
from ..engine.base.models import DocumentGroup
from ..engine.evaluation.binary import BINARY_JUDGES, judge_of
from ..engine.roles.registry import roles
from ..llm.usage import Usage
from . import bands, breakdown
from .marker import function_key
from .profiling import stale_profiles
from .records import ItemResult, ProducedBy, Status

if TYPE_CHECKING:
    from ..engine.base.judges import Judges
    from ..engine.base.models import Dialogue
    from .options import ItemSettings
    from .records import BandDoc


def check_dialogue(
    item: pytest.Item,
    settings: ItemSettings,
    judges: Judges,
    dialogues: list[Dialogue],
    *,
    aggregate_file: str | None,
    results: dict[str, ItemResult],
    keep_dialogue: bool = False,
    update: bool = False,
) -> None:
    """Put the item's result (sent to the xdist controller) into ``results``, then fail the
    item when one of its dialogues could not be completed or evaluated.

    A metric a judge could not score in a run (ragas finding nothing to judge, a reply it
    could not read) is missing evidence, not evidence: it is left out of that metric's band
    or test and said; on update, some run must have scored it. So is a run that is one of
    several (a baseline or confirmation run) whose generator wrote no acceptable turn. A
    metric left unscored by the bot (no contexts to judge) fails the item, unless no turn had
    contexts and the settings left it out (:mod:`.applicable`)."""
    first = dialogues[0]
    record = _result(item, settings, judges, dialogues, aggregate_file)
    if keep_dialogue:  # for the report, also from xdist workers
        record.dialogue = first.model_copy(deep=True)
    results[item.nodeid] = record
    for metric, value in first.scores.items():
        item.user_properties.append((f"ragdive.{metric}", round(value, bands.DIGITS)))

    for run, d in enumerate(dialogues, 1):
        errors = dict(d.errors)
        unscored = []
        if "generation" in errors and (run > 1 or update) and record.runs:
            unscored.append(f"run {run}: not held: {errors.pop('generation')}")
        for metric in [m for m in d.judge_gaps
                       if m in errors and (m in record.runs or not update)]:
            unscored.append(f"run {run}: {metric}: {errors.pop(metric)}")
        if unscored:
            record.unscored = [*record.unscored, *unscored]
        problems = [f"{what}: {why}" for what, why in errors.items()]
        if problems:
            pytest.fail("the conversation could not be evaluated:\n  " + "\n  ".join(problems),
                        pytrace=False)


def _result(item: pytest.Item, settings: ItemSettings, judges: Judges,
            dialogues: list[Dialogue], aggregate_file: str | None) -> ItemResult:
    """What the item's runs measured, before its checks (status error until they pass)."""
    scored = [m for m in METRICS if any(m in d.scores for d in dialogues)]
    path, line, name = item.location
    return ItemResult(
        function=function_key(item),
        location=(path, line, name.split("[", 1)[0]),
        document=dialogues[0].document_id,
        scores=dict(dialogues[0].scores),
        # every run's scores: the baseline runs on update, else the candidate's runs
        runs={m: [d.scores[m] for d in dialogues if m in d.scores] for m in scored},
        seeds={m: [d.seed for d in dialogues if m in d.scores] for m in scored},
        turns=sum(len(d.turns) for d in dialogues),
        dialogues=len(dialogues),
        rejections=sum(d.rejection_count for d in dialogues),
        rejected_for=dict(sorted(sum((Counter(d.rejected_for) for d in dialogues),
                                     Counter()).items())),
        usage=_usage(dialogues),
        breakdown=breakdown.cells(dialogues),
        aggregate_file=aggregate_file,
        file=str(bands.item_path(item)),
        judges={k: v.label for k, v in judges.models.items()},
        turns_per_dialogue=settings.turns,
        confirm_runs=settings.confirm_runs,
        role=settings.role,
        status=Status.ERROR,
        # given only where set, so that a record without them reads as before
        **{name: dict(bounds) for name, bounds in (("floors", settings.floors),
                                                   ("ceilings", settings.ceilings)) if bounds},
        **({"no_contexts": list(settings.no_contexts)} if settings.no_contexts else {}),
        **({"turns_held": settings.turns_held} if settings.turns_held is not None else {}),
    )


@functools.cache
def prompts_digest(role: str, metrics: tuple[str, ...], group: bool = False) -> str:
    """The method's prompts and judge questions and thresholds, as a digest: a band scored
    by other ones measured something else. A role's own prompt and metric (the roles
    ``mistaken``, ``vague`` and ``switching``, and those added by the
    ``pytest_ragdive_roles`` hook) and the prompts of a group of documents
    (``prompts/group/``) count only for the items that use them, so that adding them left
    every other band as it was."""
    from importlib.resources import files

    every = roles()
    unused = {f"{r.metric.name}.j2" for r in every if r.metric and r.metric.name not in metrics}
    unused |= {f"{r.name}.j2" for r in every if r.own_prompts and r.name != role}
    folder = files("pytest_ragdive.prompts")
    entries = [*folder.iterdir(), *folder.joinpath("roles").iterdir()]
    texts = sorted(f"{entry.name}\n{entry.read_text(encoding='utf-8')}"
                   for entry in entries if entry.name.endswith(".j2") and entry.name not in unused)
    if group:
        texts += sorted(f"group/{entry.name}\n{entry.read_text(encoding='utf-8')}"
                        for entry in folder.joinpath("group").iterdir()
                        if entry.name.endswith(".j2"))
    # an added role's persona and judge prompt are text, not files
    texts += [f"{r.name}\n{r.description}" for r in every if r.name == role and r.description]
    texts += [f"{m}\n{r.metric.template}" for r in every for m in metrics
              if r.metric and r.metric.name == m and r.metric.template]
    names = [*BINARY_JUDGES, *(r.metric.name for r in every if r.metric and r.metric.name not in BINARY_JUDGES)]
    judges = sorted((m, judge_of(m)) for m in names if f"{m}.j2" not in unused)
    digest = hashlib.sha256("\n".join([*texts, repr(judges)]).encode())
    return f"sha256 {digest.hexdigest()[:12]}"


def produced_by(settings: ItemSettings, judges: dict[str, str],
                group: bool = False) -> ProducedBy:
    """What a band must have been recorded with to judge an item of these settings (``group``:
    about a group of documents): the settings, the judges and their profiles, the package's
    prompts (by digest) and the openers, where there are any, by their number and digest;
    and the turns its runs held, where its document ran out of facts."""
    produced: dict[str, object] = {"turns": settings.turns, "role": settings.role,
                                "metrics": list(settings.metrics), "judges": judges,
                                "prompts": prompts_digest(settings.role,
                                                          settings.metrics, group)}
    if settings.profiles:
        produced["profiles"] = dict(settings.profiles)
    if settings.openers:
        digest = hashlib.sha256("\n".join(
            f"{o.document or ''}\t{o.message}" for o in settings.openers).encode()).hexdigest()
        produced["openers"] = f"{len(settings.openers)} messages, sha256 {digest[:12]}"
    if settings.turns_held is not None:
        produced["turns_held"] = settings.turns_held
    return ProducedBy.model_validate(produced)


def is_group(item: pytest.Item) -> bool:
    """Whether ``item`` is a conversation about a group of documents."""
    callspec = getattr(item, "callspec", None)
    document = callspec.params.get("ragdive_document") if callspec else None
    return isinstance(document, DocumentGroup) and len(document.documents) > 1


def leaves_band(path: Path, produced: ProducedBy, scores: dict[str, float],
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


def stale_reason(doc: BandDoc, produced: ProducedBy) -> str | None:
    """Why a band recorded for other settings, or scored with other judge profiles, cannot
    judge this run, if it can't."""
    return bands.stale_reason(doc, produced) or stale_profiles(doc.produced_by, produced)


def band_runs(path: Path) -> int | None:
    """The fewest baseline runs a metric of the band at ``path`` holds; None when there is
    no readable band (the item fails on it)."""
    try:
        doc = bands.read(path)
    except bands.BaselineError:
        return None
    return min((len(s.runs) for s in doc.metrics.values()), default=None) if doc else None


def check_band(
    item: pytest.Item,
    settings: ItemSettings,
    dialogues: list[Dialogue],
    record: ItemResult,
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
    path = Path(record.file)
    produced = produced_by(settings, record.judges, is_group(item))
    if update:
        from .. import __version__

        stamped = produced.model_copy(update={"plugin": __version__})
        record.produced_by, record.status = produced, Status.RECORDED
        record.band = bands.band(record.runs, stamped, record.seeds)
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
    record.band_doc = doc
    if doc is None:
        record.status = Status.MISSING
        pytest.fail(f"no baseline band at {_rel(path)}; record one with:\n  {command}",
                    pytrace=False)
    if stale:
        record.status = Status.STALE
        pytest.fail(f"the baseline {_rel(path)} was recorded for other settings ({stale}); "
                    f"it is stale. Record it again with:\n  {command}", pytrace=False)
    _compared(record, first, deviations, failing_worse=verdict == "band",
              fail_on_improvement=fail_on_improvement, command=command)


def _compared(record: ItemResult, first: Dialogue, deviations: list[bands.Deviation], *,
              failing_worse: bool, fail_on_improvement: bool, command: str) -> None:
    """The band's verdict on the first run: its status, and the item failed when its scores
    left the band worse (``failing_worse``: the band verdict) or better, where that fails."""
    worse = [d for d in deviations if d.worse]
    better = [d for d in deviations if not d.worse]
    record.left_band = [f"{d.describe()}\n      {_culprit(first, d.metric)}" for d in worse]
    record.left_band_metrics = sorted({d.metric for d in worse})
    failing = bool(worse) and failing_worse
    record.status = (Status.REGRESSED if failing else
                     Status.IMPROVED if better and not worse else Status.PASSED)
    if failing:
        pytest.fail("scores left their baseline band:\n  " + "\n  ".join(record.left_band),
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
