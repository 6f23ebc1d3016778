"""How long an estimated session's model calls take (``--ragdive-estimate``), as a range.

From each kind of model's stated speed: a hosted model's seconds per call, the calls in
flight at ``ragdive_concurrency`` and each dialogue's longest path; the embedded model's
measured tokens per second, one call at a time; a scripted model's at once. The bot's own
time is not counted, nor the process's start-up."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..engine.conversation.expected import DialogueCalls
from ..llm.providers import IN_PROCESS, served_at_once
from ..llm.scripted_errors import PROVIDER

#: seconds per call of a hosted model: a short yes/no answer to a structured reply, or a
#: provider under load
HOSTED = (1.0, 4.0)
#: a scripted model answers at once: what a call takes is the client's own CPU, one call
#: after another (3.5-5 ms measured, DESIGN.md)
SCRIPTED = (0.0035, 0.005)
#: the embedded model on 2 cores, the example's main job (benchmarks/README.md,
#: embedded.py): prompt tokens evaluated and tokens decoded per second
PREFILL, DECODE = 63.0, 22.0
#: the share of its prompt tokens it took from a stored prefix state there (11,520 of
#: 33,428): the faster end of the range; the slower evaluates every one
REUSED = 0.34


def free(model: str) -> bool:
    """Whether ``model`` costs nothing: the embedded model, a scripted one."""
    return model.split("/", 1)[0] in (*IN_PROCESS, PROVIDER)


def _scripted(model: str) -> bool:
    return model.split("/", 1)[0] == PROVIDER


def seconds(dialogues: Sequence[tuple[Mapping[str, str], DialogueCalls, int]],
            concurrency: int) -> tuple[float, float]:
    """The fewest and most seconds the calls of one test function's ``dialogues`` take
    (each: its models by judge role, its calls, how many such dialogues): they run at
    once, within ``concurrency`` calls in flight, and each no faster than its longest path;
    an in-process model's calls (the embedded model) queue for it. The fewest have every
    generator attempt accepted, the most the expected share rejected."""
    queued, spread, slowest, waves = [0.0, 0.0], [0.0, 0.0], (0.0, 0.0), 0.0
    for models, calls, count in dialogues:
        for stage in calls.stages:
            model = models[stage.role]
            at_once = served_at_once(model)
            shares = (1 - calls.rejected if stage.name == "generator" else 1.0, 1.0)
            for end, share in enumerate(shares):
                times = count * share
                if at_once is not None:
                    evaluated = stage.prompt_tokens * (1 - REUSED if end == 0 else 1.0)
                    queued[end] += times * (evaluated / PREFILL
                                            + stage.completion_tokens / DECODE) / at_once
                elif _scripted(model):
                    queued[end] += times * stage.calls * SCRIPTED[end]
                else:
                    slowest = HOSTED
                    spread[end] += times * stage.calls * HOSTED[end]
        waves = max(waves, calls.waves)
    low, high = (queued[end] + max(waves * slowest[end], spread[end] / concurrency)
                 for end in (0, 1))
    return low, high


def kinds_said(models: Collection[str]) -> str:
    """The speeds the time range assumes, of the kinds of model in ``models``."""
    said = []
    if any(served_at_once(m) is not None for m in models):
        said.append(f"the embedded model evaluates {PREFILL:.0f} prompt tokens and decodes "
                    f"{DECODE:.0f} tokens a second, one call at a time (2 cores, "
                    f"benchmarks/README.md), up to {REUSED:.0%} of the prompt taken from "
                    f"stored prefixes")
    if any(served_at_once(m) is None and not _scripted(m) for m in models):
        said.append(f"a hosted model's call takes {HOSTED[0]:g}-{HOSTED[1]:g} s")
    if any(_scripted(m) for m in models):
        said.append(f"a scripted model answers at once ({SCRIPTED[0] * 1000:g}-"
                    f"{SCRIPTED[1] * 1000:g} ms of the client's CPU a call)")
    return "; ".join(said)


def duration(value: float) -> str:
    """Seconds as a reader says them: seconds, minutes or hours."""
    if value < 90:
        return f"{value:.0f} s" if value >= 1 else f"{value:.1f} s"
    if value < 90 * 60:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"
