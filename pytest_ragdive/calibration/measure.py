"""Calibrating a judge model: each labelled case scored through the package's own prompts
and client, a threshold fitted on the development cases, the figures held out, and the
profile they make (:mod:`.profile`). ``benchmarks/judges.py`` and ``python -m
pytest_ragdive calibrate`` both measure with this module."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..engine.base.models import Document, DocumentGroup
from ..engine.base.profile import MIN_ACCURACY, RAGAS, Judgement, Profile, Reading
from ..engine.evaluation.binary import BINARY_JUDGES, combine, exact_yes, judge_prompts
from ..engine.validation import validator
from ..llm.client import LLMClient
from ..llm.errors import ReplyError
from ..llm.model import Model
from .agreement import Counts, auc, auc_interval, best_threshold, held_out
from .cases import Case
from .files import judges_digest
from .own_messages import own_messages_kept

if TYPE_CHECKING:
    from ..engine.evaluation.ragas_metrics import RagasMetrics

#: a ragas score reads as a verdict of 1 from here (every claim supported, ...)
RAGAS_ONE = 0.999


async def answers(client: LLMClient, model: Model, case: Case) -> list[float]:
    """P(yes) of each question the case's binary judge asks (:func:`.binary.judge_prompts`),
    told what the case's document is about where the case says it."""
    turn, earlier = case.turns()
    prompts = judge_prompts(case.judgement, turn, earlier, case.subject)
    return list(await asyncio.gather(*(
        client.yes_probability(model, [{"role": "user", "content": p}]) for p in prompts)))


async def score(client: LLMClient, model: Model, case: Case,
                ragas: RagasMetrics | None = None) -> float | None:
    """What the case's verdict is read from: the binary judge's P(yes) (1.0 for a reply an
    exact check says yes to), the validator check's P(yes), or ragas' score (``ragas``: a
    :class:`.ragas_metrics.RagasMetrics`; an unscored turn reads 0.5); None when the model
    gave no yes/no answer."""
    try:
        if case.judgement in RAGAS:
            assert ragas is not None, "ragas' metrics score ragas' cases"
            judgement = await ragas.job(case.judgement, case.turns()[0])()
            return 0.5 if judgement.score is None else judgement.score
        if case.judgement.startswith("validator."):
            turn, earlier = case.turns()
            source = DocumentGroup.of(Document(id=case.group or "source", text=case.source or ""))
            prompt = validator.check_prompt(case.judgement.removeprefix("validator."),
                                            turn.generated, source, earlier)
            return await client.yes_probability(model, [{"role": "user", "content": prompt}])
        exact = exact_yes(case.judgement)
        if exact is not None and exact[0](case.turns()[0]):
            return 1.0
        return combine(case.judgement, await answers(client, model, case))
    except ReplyError:
        return None


@dataclass(frozen=True)
class Measured:
    """A judgement's scores on its cases, and the right verdict of each: ``yes`` is 1 where
    the answer should be yes (``inverted`` when yes scores 0: forgetfulness)."""
    judgement: str
    scores: tuple[float, ...]
    yes: tuple[int, ...]
    held: tuple[bool, ...]  # on the held-out split, never fitted on
    groups: tuple[str, ...]
    inverted: bool = False
    unscored: int = 0

    def part(self, held: bool) -> tuple[list[float], list[int], list[str]]:
        chosen = [i for i, h in enumerate(self.held) if h == held]
        return ([self.scores[i] for i in chosen], [self.yes[i] for i in chosen],
                [self.groups[i] for i in chosen])

    def verdicts(self, scores: Sequence[float], threshold: float | None) -> list[int]:
        cut = RAGAS_ONE if threshold is None else threshold
        return [int(s >= cut) for s in scores]

    def fitted(self) -> float | None:
        """The threshold that fits the development cases best (None: ragas' score)."""
        if self.judgement in RAGAS:
            return None
        return best_threshold(*self.part(False)[:2])

    def at(self, threshold: float | None) -> tuple[float, float | None]:
        """The balanced accuracy at ``threshold`` on the development and held-out cases."""
        figures = []
        for held in (False, True):
            scores, yes, _ = self.part(held)
            figures.append(Counts.of(self.verdicts(scores, threshold), yes).balanced_accuracy
                           if scores else None)
        return figures[0] or 0.0, figures[1]

    def auc_of(self, held: bool) -> float | None:
        scores, yes, _ = self.part(held)
        return auc(scores, yes) if scores else None

    def decide(self, reading: Reading) -> Judgement:
        """The profile's entry: the fitted threshold, and whether its verdicts held out are
        informative (:data:`.profile.MIN_ACCURACY`, a 95% interval above chance)."""
        threshold = self.fitted()
        scores, yes, groups = self.part(False)
        if any(self.held):
            scores, yes, _ = self.part(True)
            counts = Counts.of(self.verdicts(scores, threshold), yes)
            measured = (f"the held-out split, at the threshold fitted on the "
                        f"{len(self.held) - len(scores)} development cases")
        elif threshold is not None and len(set(groups)) > 1:
            counts = Counts.of(held_out(scores, yes, groups), yes)
            measured = (f"each of {len(set(groups))} groups held out, at a threshold fitted "
                        f"on the others")
        else:
            counts = Counts.of(self.verdicts(scores, threshold), yes)
            measured = ("its cases, a score of 1 read as 1" if threshold is None
                        else "its cases (one group: none held out)")
        if self.inverted:  # counted as a score of 1 is positive, as the metric reads
            counts = Counts(tp=counts.tn, fn=counts.fp, tn=counts.tp, fp=counts.fn)
        value = auc(scores, yes)
        low, high = counts.interval()
        positives = counts.tp + counts.fn
        return Judgement(
            informative=counts.balanced_accuracy >= MIN_ACCURACY and low > 0.5,
            threshold=threshold, reading="score" if threshold is None else reading,
            balanced_accuracy=counts.balanced_accuracy, interval=(low, high), auc=value,
            auc_interval=auc_interval(value, positives, counts.cases - positives),
            counts=(counts.tp, counts.fn, counts.tn, counts.fp), cases=counts.cases,
            measured=measured + (f"; {self.unscored} not scored" if self.unscored else ""))


def measured(judgement: str, cases: Sequence[Case], scores: Sequence[float | None]
             ) -> Measured:
    """The scores of ``judgement``'s cases as :class:`Measured` (unscored ones left out)."""
    inverted = judgement in BINARY_JUDGES and not BINARY_JUDGES[judgement].yes_scores_one
    kept = [(c, s) for c, s in zip(cases, scores, strict=True) if s is not None]
    return Measured(judgement=judgement, scores=tuple(s for _, s in kept),
                    yes=tuple(int(c.label != inverted) for c, _ in kept),
                    held=tuple(c.split == "held-out" for c, _ in kept),
                    groups=tuple(c.group for c, _ in kept), inverted=inverted,
                    unscored=len(cases) - len(kept))


@dataclass(frozen=True)
class Calibration:
    """What a calibration measured: each judgement's scores, and of the model's own
    follow-up messages how many leaned on the conversation (``follow_ups``: kept, asked)."""
    model: str
    judgements: dict[str, Measured]
    follow_ups: tuple[int, int] | None
    reading: Reading

    def profile(self, previous: Profile | None, when: str) -> Profile:
        """The profile this calibration makes, over ``previous`` (its judgements that were
        not measured again stay, when they were calibrated with the same judges)."""
        digest = judges_digest()
        kept = previous if previous is not None and previous.judges == digest else None
        judgements = {**(kept.judgements if kept else {}),
                      **{n: m.decide(self.reading) for n, m in self.judgements.items()}}
        rewrite, why = (kept.rewrite_follow_ups, kept.follow_ups) if kept else (True, "")
        if self.follow_ups is not None:
            rewrite, why = follow_up_decision(*self.follow_ups)
        return Profile(judges=digest, calibrated=when, rewrite_follow_ups=rewrite,
                       follow_ups=why, judgements=dict(sorted(judgements.items())))


#: the share of a model's own follow-up messages that must lean on the conversation for
#: them to go unrewritten
FOLLOW_UPS_KEPT = 0.8


def follow_up_decision(kept: int, asked: int) -> tuple[bool, str]:
    """Whether a model's follow-up messages need rewriting, and why."""
    rewrite = not asked or kept / asked < FOLLOW_UPS_KEPT
    return rewrite, (f"{kept} of {asked} of its own follow-up messages leaned on the "
                     f"conversation ({FOLLOW_UPS_KEPT:.0%} needed to send them unrewritten)")


async def calibrate(client: LLMClient, model: Model, cases: Sequence[Case],
                    follow_ups: Sequence[Case] = ()) -> Calibration:
    """Score every case with ``model`` (calls in flight as ``client`` allows) and, on
    ``follow_ups``' conversations, see whether its own follow-up messages need rewriting."""
    ragas = None
    if any(c.judgement in RAGAS for c in cases):
        from ..engine.evaluation.ragas_metrics import RagasMetrics

        ragas = RagasMetrics(client, model)
    got = await asyncio.gather(*(score(client, model, c, ragas) for c in cases))
    kept = await own_messages_kept(client, model, follow_ups) if follow_ups else None
    by_judgement: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        by_judgement.setdefault(case.judgement, []).append(i)
    judgements = {name: measured(name, [cases[i] for i in chosen], [got[i] for i in chosen])
                  for name, chosen in by_judgement.items()}
    reading: Reading = "logprobs" if client.served(model).logprobs else "text"
    return Calibration(model.name, judgements, kept, reading)
