"""The metrics an item's runs can score: not the context metrics where the bot returned no
contexts, nor the follow-up ones where a document ran out of facts after one turn; and what
the summary says of them.

A bot that returned no contexts on any turn has the context metrics left out, unless they
were named in ``metrics`` or its band holds them (then the item fails, naming the fix). Runs
whose document ran out of facts are scored on the turns they held, less the follow-up metrics
when the first held one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.base.metrics import METRICS, MULTI_TURN_METRICS, ROLE_METRICS

if TYPE_CHECKING:
    from ..engine.base.models import Dialogue
    from .options import ItemSettings
    from .records import ItemResult


def ran_out(first: Dialogue) -> bool:
    """Whether an item's ``first`` run (its runs sorted, those not held last) failed where its
    document ran out of facts: then none was held, and the item holds them short instead."""
    return "generation" in first.errors and bool(first.ended_early)


def fitted(settings: ItemSettings, dialogues: Sequence[Dialogue], band: Path,
           update: bool) -> ItemSettings:
    """``settings`` fitted to what an item's runs (``dialogues``, the first one first; its
    band file at ``band``) could score."""
    out = settings
    context = _without_contexts(settings, dialogues, band, update)
    if context:
        out = replace(out, metrics=tuple(m for m in out.metrics if m not in context),
                      no_contexts=context)
    short = [d for d in dialogues if d.ended_early and "generation" not in d.errors]
    if short:
        first = dialogues[0]
        one = first.ended_early and "generation" not in first.errors and len(first.turns) == 1
        follow_ups = (*MULTI_TURN_METRICS, *ROLE_METRICS) if one else ()
        out = replace(out, turns_held=min(len(d.turns) for d in short),
                      metrics=tuple(m for m in out.metrics if m not in follow_ups))
    return out


def _without_contexts(settings: ItemSettings, dialogues: Sequence[Dialogue], band: Path,
                      update: bool) -> tuple[str, ...]:
    """The context metrics to leave out: those of the settings, left to their default, when
    no turn of any run returned contexts; on a check, not when the band holds them (the bot
    stopped returning contexts: its item fails, the error naming the fix)."""
    from ..engine.evaluation.ragas_metrics import RAGAS_METRICS

    context = tuple(m for m in settings.metrics if m in RAGAS_METRICS)
    turns = [t for d in dialogues for t in d.turns]
    if settings.metrics_chosen or not context or not turns or any(t.answer.contexts
                                                                  for t in turns):
        return ()
    if not update:
        from . import bands

        try:
            doc = bands.read(band)
        except bands.BaselineError:
            doc = None  # the item fails on it
        if doc is not None and any(m in doc.metrics for m in context):
            return ()
    return context


def strip(dialogues: Sequence[Dialogue], settings: ItemSettings) -> None:
    """Leave the metrics that ``settings`` do not score out of each dialogue: its scores,
    errors, judge gaps and turns' judgements."""

    def gone(metric: str) -> bool:
        return metric in METRICS and metric not in settings.metrics

    for dialogue in dialogues:
        for table in (dialogue.scores, dialogue.errors,
                      *(t.judgements for t in dialogue.turns)):
            for metric in [m for m in table if gone(m)]:
                del table[metric]
        dialogue.judge_gaps = [m for m in dialogue.judge_gaps if not gone(m)]


def notes(results: Mapping[str, ItemResult]) -> list[str]:
    """What the summary says of the items whose runs could not score some metrics: per test
    function, the context metrics left out for a bot without contexts; per item, the turns
    its runs held where its document ran out of facts."""
    from ..engine.evaluation.ragas_metrics import CONTEXTS_FIX
    from ..engine.generation.exhausted import RAN_OUT

    documents = Counter(r.function for r in results.values())
    bare: dict[str, list[ItemResult]] = {}
    out = []
    for nodeid, record in sorted(results.items()):
        if record.no_contexts:
            bare.setdefault(record.function, []).append(record)
        if record.turns_held is not None:
            out.append(f"short: {nodeid} held {record.turns_held} of "
                       f"{record.turns_per_dialogue} turns ({RAN_OUT})")
    for function, records in bare.items():
        metrics = [m for m in METRICS if any(m in r.no_contexts for r in records)]
        count = len(records)
        of = "" if count == documents[function] else f" of {documents[function]}"
        one = len(metrics) == 1
        out.append(f"{', '.join(metrics)} not scored: the bot returned no contexts on any "
                   f"turn of {function} ({count}{of} document{'s' * (documents[function] != 1)}"
                   f"); {CONTEXTS_FIX.format('it' if one else 'them')}")
    return out
