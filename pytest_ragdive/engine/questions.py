"""The binary judges: each judgement's yes/no question, its prompts, and how its answers
combine into one P(yes) (:class:`BinaryJudge`). The P(yes) from which an answer is yes is
the judge model's, in its profile (:mod:`.profiles`), calibrated on the labelled cases of
``pytest_ragdive/judge_cases`` (``python -m pytest_ragdive calibrate``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .answer_keys import key_parts
from .models import Turn
from .premises import changed_figure
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
    ``per_part`` asks besides, of each part of the answer key (:func:`~.answer_keys.key_parts`),
    whether the reply states it; the least P(yes) of all is the answer, so that a long
    reply can neither bury a wrong figure nor leave a part out.
    Each question is narrow enough for a 1.5B model to answer, unlike "did the
    assistant forget?" (benchmarks/judges.py).
    """

    question: str
    yes: str  # the reason given when the answer is yes
    no: str
    yes_scores_one: bool  # keeps the paper's direction: forgetfulness 1 is "forgot"
    #: the embedded model's threshold, which every model had before judge profiles: what
    #: its shipped profile holds, and part of the prompts' digest that bands record
    threshold: float
    negation: str | None = None
    against_key: bool = False
    per_part: str | None = None  # the question of one part of the answer key ("{part}")


JUDGES: dict[str, BinaryJudge] = {
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


#: the least P(yes) an answer key's is taken as, so that a share of it stays finite
KEY_FLOOR = 0.05


def combine(metric: str, answers: Sequence[float]) -> float:
    """P(yes) of ``metric``'s judge from its answers (:class:`BinaryJudge`): the
    question's, debiased by its negation's, as a share of the answer key's, or the least of
    the whole key's and its parts'."""
    judge = JUDGES[metric]
    if judge.per_part:
        return min(answers)
    if judge.against_key:
        return min(1.0, answers[0] / max(answers[1], KEY_FLOOR))
    return (answers[0] + 1 - answers[1]) / 2 if judge.negation else answers[0]


def shown(metric: str, turn: Turn, answers: Sequence[float]) -> str:
    """What a judgement's reason says of its answers."""
    judge = JUDGES[metric]
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
    if judge.per_part:
        parts = key_parts(turn.generated.ground_truth, turn.generated.standalone_question)
        prompts += [render(metric, ask=judge.per_part.format(part=part),
                           **{**context, "ground_truth": None}) for part in parts]
    return prompts
