"""The binary judges: each judgement's yes/no question, its prompts, and how its answers
combine into one P(yes) (:class:`BinaryJudge`). The P(yes) from which an answer is yes is
the judge model's, in its profile (:mod:`.profile`), calibrated on the labelled cases of
``pytest_ragdive/judge_cases`` (``python -m pytest_ragdive calibrate``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..base.models import Turn
from ..base.templates import history_view, render, render_text
from ..roles import registry
from ..text.answer_keys import key_parts
from .judge import BinaryJudge

#: the shipped binary judges by their metric: the three every role scores, then the built-in
#: roles' own (:attr:`~..roles.role.Role.metric`); an added role's: :func:`judge_of`
BINARY_JUDGES: dict[str, BinaryJudge] = {
    # the whole key, then each of its parts: asked of the whole key alone, a reply that
    # gives some of its facts, or buries a wrong one in true detail, passed (benchmarks/)
    "correctness": BinaryJudge(
        "Does the reply give the answer of the reference answer: the same facts and figures, "
        "in any wording, and nothing that contradicts them?",
        "the reply gives the reference answer", "the reply does not give the reference answer",
        True, 0.5, per_part="Does the reply state this, in any wording or units: {part}?",
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
    **{r.metric.name: r.metric.judge for r in registry.BUILTIN if r.metric},
}

def judge_of(metric: str) -> BinaryJudge:
    """``metric``'s judge: a shipped one, else that of the role a user added with it."""
    found = BINARY_JUDGES.get(metric)
    if found is None:
        own = registry.metric(metric)
        if own is None:
            raise KeyError(f"no binary judge scores {metric!r}")
        found = own.judge
    return found


def exact_yes(metric: str) -> tuple[Callable[[Turn], bool], str] | None:
    """A check of the reply that scores ``metric`` as its judge's "yes" without asking the
    judge, and the reason then given (a role's metric may have one); None without."""
    own = registry.metric(metric)
    return own.exact_yes if own else None


#: the least P(yes) an answer key's is taken as, so that a share of it stays finite
KEY_FLOOR = 0.05


def combine(metric: str, answers: Sequence[float]) -> float:
    """P(yes) of ``metric``'s judge from its answers (:class:`BinaryJudge`): the
    question's, debiased by its negation's, as a share of the answer key's, or the least of
    the whole key's and its parts'."""
    judge = judge_of(metric)
    if judge.per_part:
        return min(answers)
    if judge.against_key:
        return min(1.0, answers[0] / max(answers[1], KEY_FLOOR))
    return (answers[0] + 1 - answers[1]) / 2 if judge.negation else answers[0]


def shown(metric: str, turn: Turn, answers: Sequence[float]) -> str:
    """What a judgement's reason says of its answers."""
    judge = judge_of(metric)
    if judge.against_key:
        return f"P(yes) {answers[0]:.2f}, {answers[1]:.2f} for the answer key"
    if judge.per_part:
        parts = key_parts(turn.generated.ground_truth, turn.generated.standalone_question)
        least = min(range(len(parts)), key=lambda i: answers[i + 1])
        return (f"P(yes) {answers[0]:.2f}; least for a part, {parts[least]!r}: "
                f"{answers[least + 1]:.2f}")
    return f"P(yes) {combine(metric, answers):.2f}"


def judge_prompts(metric: str, turn: Turn, earlier: list[Turn],
                  subject: str | None = None) -> list[str]:
    """The question of a binary judge about ``turn``, and its further calls if it has them:
    the negation, the question about the answer key in place of the reply, or the question
    of each part of the answer key. ``subject`` (:func:`.evaluator.subject_of`) is what
    the turn asks about, for the judges that show it."""
    own = registry.metric(metric)
    extra = dict(own.context(turn)) if own else {}
    context: dict[str, Any] = {
        "question": turn.generated.standalone_question,
        "rag_input": turn.generated.rag_input,
        "ground_truth": turn.generated.ground_truth,
        "answer": turn.answer.answer,
        "history": history_view(earlier),
        "premise": turn.generated.premise,
        "fact": turn.generated.evidence,
        "readings": turn.generated.readings,
        "subject": subject,
        **extra,
    }
    judge = judge_of(metric)
    ask = judge.question.format(**extra)

    def prompt(**values: Any) -> str:
        if own is not None and own.template is not None:
            return render_text(own.template, **values)
        return render(metric, **values)

    prompts = [prompt(ask=ask, **context)]
    if judge.negation:
        prompts.append(prompt(ask=judge.negation, **context))
    if judge.against_key:
        prompts.append(prompt(ask=ask, **{**context, "answer": turn.generated.ground_truth}))
    if judge.per_part:
        parts = key_parts(turn.generated.ground_truth, turn.generated.standalone_question)
        prompts += [prompt(ask=judge.per_part.format(part=part),
                           **{**context, "ground_truth": None}) for part in parts]
    return prompts
