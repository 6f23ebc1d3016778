"""Stage 3, the Conversation Evaluator: per-turn and multi-turn scores in [0, 1].

``correctness``, ``forgetfulness`` and ``context_retention`` are binary judgements
with this project's prompts (the paper's adapted Aspect Critic), and so are the roles' own,
scored only on their turns: ``premise_corrected`` on those that state a false premise,
``clarified`` on those whose question has several readings; ``faithfulness``,
``context_precision`` and ``context_recall`` are ragas 0.4.3 metrics whose model
calls go through the same :class:`~pytest_ragdive.llm.client.LLMClient` and cache. The binary
judges' questions are in :mod:`.binary` and the roles', the P(yes) from which each answer is yes in the
evaluator model's judge profile (:mod:`.profile`). A dialogue's score is the mean over its turns; a
turn that cannot be scored makes the metric an error of the dialogue, not a mean over the
others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from ...llm.cache import CacheMiss
from ...llm.client import LLMClient
from ...llm.errors import ModelError, ReplyError
from ...llm.model import Model
from ..base.metrics import MULTI_TURN_METRICS
from ..base.models import Dialogue, DocumentGroup, Judgement, Turn
from ..base.profile import of as profile_of
from ..roles import registry
from .binary import combine, exact_yes, judge_of, judge_prompts, shown
from .ragas_metrics import CONTEXTS_FIX, RAGAS_METRICS, RagasMetrics


async def evaluate(
    dialogue: Dialogue, client: LLMClient, model: Model, metrics: Sequence[str],
    group: DocumentGroup | None = None,
) -> None:
    """Score every turn of ``dialogue`` (about ``group``) for ``metrics`` concurrently;
    fill its scores.

    A turn that cannot be scored keeps a judgement with no score and the reason, and
    its metric goes into ``dialogue.errors`` instead of ``scores``: a mean over the
    other turns would be another measurement than the band's. A missing
    recording (record mode ``none``) or a failing provider is not a scoring problem
    and propagates.
    """
    ragas = RagasMetrics(client, model) if set(metrics) & set(RAGAS_METRICS) else None
    jobs: list[tuple[Turn, str, Callable[[], Awaitable[Judgement]]]] = []
    for turn in dialogue.turns:
        earlier = dialogue.turns[: turn.index - 1]
        for metric in metrics:
            owner = registry.owner(metric)
            if owner is not None:
                if earlier and owner.scores(turn):
                    jobs.append((turn, metric, _judge_job(client, model, metric, turn, earlier)))
            elif metric in MULTI_TURN_METRICS:
                if earlier:
                    jobs.append((turn, metric, _judge_job(client, model, metric, turn, earlier,
                                                          subject_of(turn, group))))
            elif metric == "correctness":
                jobs.append((turn, metric, _judge_job(client, model, metric, turn, earlier)))
            else:
                assert ragas is not None
                jobs.append((turn, metric, ragas.job(metric, turn)))
    results = await asyncio.gather(*(_scored(job) for _, _, job in jobs), return_exceptions=True)
    for (turn, metric, _), result in zip(jobs, results, strict=True):
        if isinstance(result, BaseException):
            raise result
        turn.judgements[metric] = result
    for metric in metrics:
        judged = [t for t in dialogue.turns if metric in t.judgements]
        unscored = [t for t in judged if t.judgements[metric].score is None]
        if unscored:
            if not any(t.judgements[metric].by_bot for t in unscored):
                dialogue.judge_gaps.append(metric)
            dialogue.errors[metric] = (
                f"{len(unscored)} of {len(judged)} turns could not be scored, so there is no "
                f"mean to compare: " + "; ".join(
                    f"turn {t.index}: {t.judgements[metric].reason}" for t in unscored)
                + _by_bot(metric, unscored, len(judged))
            )
        elif judged:
            values = [t.judgements[metric].score or 0.0 for t in judged]
            dialogue.scores[metric] = sum(values) / len(values)
        elif (own := registry.metric(metric)) is not None:
            dialogue.errors[metric] = own.no_turn
        else:
            dialogue.errors[metric] = "needs at least two turns"


def _by_bot(metric: str, unscored: list[Turn], judged: int) -> str:
    """What an error adds where the bot left turns nothing to score: the fix."""
    bare = sum(t.judgements[metric].by_bot for t in unscored)
    if not bare:
        return ""
    fix = CONTEXTS_FIX.format("it")
    return f". The bot returned no contexts on {bare} of {judged} turns: {fix}"


async def _scored(job: Callable[[], Awaitable[Judgement]]) -> Judgement:
    try:
        return await job()
    except ReplyError as exc:
        return Judgement(reason=f"not scored: {exc}")
    except Exception as exc:  # ragas and instructor raise many kinds for a bad reply
        cause = _hard_cause(exc)
        if cause is not None:
            raise cause from None
        return Judgement(reason=f"not scored: {_why(exc)}")


def _why(exc: BaseException) -> str:
    """The first line of what went wrong; for instructor's retry exception, of the last
    attempt's error rather than its dump of every attempt."""
    attempts = getattr(exc, "failed_attempts", None)
    if attempts:
        last = getattr(attempts[-1], "exception", None)
        if last is not None:
            exc = last
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"


def _hard_cause(exc: BaseException | None) -> BaseException | None:
    """A missing recording or a failing provider, even when a library wrapped it."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (CacheMiss, ModelError)) and not isinstance(exc, ReplyError):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def subject_of(turn: Turn, group: DocumentGroup | None) -> str | None:
    """What ``turn`` asks about, as the headings of the documents its evidence is from name
    it (the dialogue's one document, or those of its ``source`` in a group)."""
    if group is None:
        return None
    named = [d for s in turn.generated.source.split("+") if (d := group.get(s))]
    return " and ".join(d.subject for d in named or group.documents[:1] if d.subject) or None


def _judge_job(
    client: LLMClient, model: Model, metric: str, turn: Turn, earlier: list[Turn],
    subject: str | None = None,
) -> Callable[[], Awaitable[Judgement]]:
    judge = judge_of(metric)

    async def job() -> Judgement:
        exact, reason = exact_yes(metric) or (None, "")
        if exact is not None and exact(turn):
            return Judgement(score=float(judge.yes_scores_one), reason=reason)
        answers = await asyncio.gather(*(
            client.yes_probability(model, [{"role": "user", "content": prompt}])
            for prompt in judge_prompts(metric, turn, earlier, subject)
        ))
        yes = combine(metric, answers) >= profile_of(model).threshold(metric)
        return Judgement(score=float(yes == judge.yes_scores_one),
                         reason=f"{judge.yes if yes else judge.no} "
                                f"({shown(metric, turn, answers)})")

    return job
