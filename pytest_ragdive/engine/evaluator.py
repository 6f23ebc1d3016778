"""Stage 3, the Conversation Evaluator: per-turn and multi-turn scores in [0, 1].

``correctness``, ``forgetfulness`` and ``context_retention`` are binary judgements
with this project's prompts (the paper's adapted Aspect Critic), and so are the roles' own,
scored only on their turns: ``premise_corrected`` on those that state a false premise,
``clarified`` on those whose question has several readings; ``faithfulness``,
``context_precision`` and ``context_recall`` are ragas 0.4.3 metrics whose model
calls go through the same :class:`~pytest_ragdive.llm.LLMClient` and cache.
A dialogue's score is the mean over the turns that could be scored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..llm.cache import CacheMiss
from ..llm.client import LLMClient
from ..llm.errors import ModelError, ReplyError
from ..llm.model import Model
from .metrics import MULTI_TURN_METRICS, ROLE_METRICS, ROLE_TURNS
from .models import Dialogue, DocumentGroup, Judgement, Turn
from .premises import changed_figure
from .ragas_metrics import RAGAS_METRICS, RagasMetrics
from .readings import answers_each
from .templates import history_view, render


@dataclass(frozen=True)
class BinaryJudge:
    """A binary judgement as a yes/no question, answered with the probability of "yes"
    read from the first answer token.

    Small models say "yes" to almost anything, and more readily to some questions than
    to others. Where it measured better, a second call cancels that: the question is
    also asked negated (``negation``; the mean of P(yes | question) and
    1 - P(yes | negation)), or also asked about the answer key in place of the reply
    (``against_key``; the reply's P(yes) as a share of the key's), so that a question
    the model is unsure of for any answer does not read as a bad reply (:func:`combine`).
    Each question is narrow enough for a 1.5B model to answer, unlike "did the
    assistant forget?" (benchmarks/judges.py).
    """

    question: str
    yes: str  # the reason given when the answer is yes
    no: str
    yes_scores_one: bool  # keeps the paper's direction: forgetfulness 1 is "forgot"
    threshold: float  # P(yes) from which the answer is yes, calibrated on labelled cases
    negation: str | None = None
    against_key: bool = False


JUDGES: dict[str, BinaryJudge] = {
    "correctness": BinaryJudge(
        "Does the reply give the answer of the reference answer: the same facts and figures, "
        "in any wording, and nothing that contradicts them?",
        "the reply gives the reference answer", "the reply does not give the reference answer",
        True, 0.66,
    ),
    # what the reply is about: the generator's stand-alone question names the referent and
    # the constraints the conversation established, so the judge needs it and the reply,
    # and what the document is about (its heading, subject_of): a small generator writes
    # "Who operates the ferry?" where the kb has two, and then only the heading tells a
    # reply about the other ferry from a right one.
    # Asked of the reply and of the answer key: the model is less sure for some questions
    # than for others, so a reply is read against what the right answer gets (the
    # negation, used before, flattened every turn of the example to P(yes) 0.48-0.63)
    "forgetfulness": BinaryJudge(
        "Does the reply answer this question?",
        "the reply answers what the user meant", "the reply does not answer what the user meant",
        False, 0.92, against_key=True,
    ),
    # whether the reply is consistent with what was said: the judge reads the conversation
    "context_retention": BinaryJudge(
        "Does the latest reply agree with everything said earlier in the conversation?",
        "the reply agrees with what was said earlier",
        "the reply contradicts something said earlier in the conversation",
        True, 0.5,
        negation="Does the latest reply contradict something said earlier in the conversation?",
    ),
    # whether the bot corrected a false premise (role "mistaken"): the judge reads the
    # user's belief, the document's fact that refutes it, the message and the reply, and is
    # told both figures ({wrong}, {right}: premises.changed_figure). Read against the answer
    # key, like forgetfulness: asked alone, or without the figures, it measured near chance
    "premise_corrected": BinaryJudge(
        "Does the reply say {right}, or say that {wrong} is wrong?",
        "the reply corrects the user's false belief",
        "the reply goes along with the user's false belief or ignores it",
        True, 0.99, against_key=True,
    ),
    # whether the bot saw that a vague question has several readings (role "vague"): a
    # reply that states every reading's answer is a yes by code (EXACT_YES); of another, the
    # judge reads the message, the document's facts that answer it differently and the
    # reply, and is asked whether it asks which one is meant, debiased by the negation
    "clarified": BinaryJudge(
        "Does the reply ask the user which one they mean?",
        "the reply asks which one is meant",
        "the reply answers one reading as if there were no other, or none",
        True, 0.599,
        negation="Does the reply answer for one case only, as if there were no other?",
    ),
}

#: metric -> a check of the reply that scores it as its judge's "yes" without asking the
#: judge, and the reason then given
EXACT_YES: dict[str, tuple[Callable[[Turn], bool], str]] = {
    "clarified": (lambda turn: answers_each(turn.answer.answer, turn.generated.readings),
                  "the reply gives the answer of every reading (exact)"),
}

#: why a role's own metric has no score in a dialogue with no turn of the role's kind
NO_TURN = {
    "premise_corrected": "no turn stated a false premise to correct (role 'mistaken' states "
                         "one from turn 2 on, about a fact with a figure)",
    "clarified": "no turn asked a question with several readings (role 'vague' asks one from "
                 "turn 2 on, about facts that answer one question with different figures)",
}


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
            if metric in ROLE_TURNS:
                if getattr(turn.generated, ROLE_TURNS[metric]):
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
            )
        elif judged:
            values = [t.judgements[metric].score or 0.0 for t in judged]
            dialogue.scores[metric] = sum(values) / len(values)
        elif metric in ROLE_METRICS:
            dialogue.errors[metric] = NO_TURN[metric]
        else:
            dialogue.errors[metric] = "needs at least two turns"


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
    judge = JUDGES[metric]

    async def job() -> Judgement:
        exact, reason = EXACT_YES.get(metric, (None, ""))
        if exact is not None and exact(turn):
            return Judgement(score=float(judge.yes_scores_one), reason=reason)
        answers = await asyncio.gather(*(
            client.yes_probability(model, [{"role": "user", "content": prompt}])
            for prompt in judge_prompts(metric, turn, earlier, subject)
        ))
        p_yes = combine(metric, answers)
        yes = p_yes >= judge.threshold
        shown = (f"P(yes) {answers[0]:.2f}, {answers[1]:.2f} for the answer key"
                 if judge.against_key else f"P(yes) {p_yes:.2f}")
        return Judgement(score=float(yes == judge.yes_scores_one),
                         reason=f"{judge.yes if yes else judge.no} ({shown})")

    return job


#: the least P(yes) an answer key's is taken as, so that a share of it stays finite
KEY_FLOOR = 0.05


def combine(metric: str, answers: Sequence[float]) -> float:
    """P(yes) of ``metric``'s judge from its answers (:class:`BinaryJudge`): the
    question's, debiased by its negation's, or as a share of the answer key's."""
    judge = JUDGES[metric]
    if judge.against_key:
        return min(1.0, answers[0] / max(answers[1], KEY_FLOOR))
    return (answers[0] + 1 - answers[1]) / 2 if judge.negation else answers[0]


def judge_prompts(metric: str, turn: Turn, earlier: list[Turn],
                  subject: str | None = None) -> list[str]:
    """The question of a binary judge about ``turn``, and its second call if it has one:
    the negation, or the question about the answer key in place of the reply.
    ``subject`` (:func:`subject_of`) is what the turn asks about, for the judges that show
    it."""
    wrong, right = changed_figure(turn.generated.premise, turn.generated.evidence)
    context: dict[str, Any] = {
        "question": turn.generated.standalone_question,
        "rag_input": turn.generated.rag_input,
        "ground_truth": turn.generated.ground_truth,
        "answer": turn.answer.answer,
        "history": history_view(earlier),
        "premise": turn.generated.premise,
        "fact": turn.generated.evidence,
        "wrong": wrong,
        "right": right,
        "readings": turn.generated.readings,
        "subject": subject,
    }
    judge = JUDGES[metric]
    ask = judge.question.format(wrong=wrong, right=right)
    prompts = [render(metric, ask=ask, **context)]
    if judge.negation:
        prompts.append(render(metric, ask=judge.negation, **context))
    if judge.against_key:
        prompts.append(render(metric, ask=ask,
                              **{**context, "answer": turn.generated.ground_truth}))
    return prompts
