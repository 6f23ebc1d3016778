"""A binary judge: one yes/no question to the evaluator model, read as P(yes)."""

from __future__ import annotations

from dataclasses import dataclass


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
