"""What one dialogue will ask of its models, counted before it runs (``--ragdive-estimate``).

The calls of each stage (the generator's attempts, the validator model's checks, each
metric's judge calls) and their tokens, from the prompts the engine sends about the
document, rendered with placeholder turns of typical length, at about four characters a
token.

The assumptions, stated where the estimate is printed (:data:`ASSUMED`): a share of the
generator's attempts is rejected (:data:`REJECTED`), by an exact check, so that a rejection
costs a generator call and no validator call (every rejection of the example's recordings
was an exact check's: its judge asks no model check); the bot returns :data:`CONTEXTS`
contexts per answer (context precision asks one call per context); an answer key is one part
(correctness asks the whole key and each part the question asks); and every follow-up is of
the role's kind (a role's own metric judges it). The bot's own model calls are not counted.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pydantic import BaseModel, ConfigDict

from ..base.metrics import MULTI_TURN_METRICS, ROLE_METRICS
from ..base.models import DocumentGroup, GeneratedTurn, RagAnswer, Turn
from ..base.profile import RAGAS
from ..base.templates import history_view, render
from ..base.tokens import CHARS_PER_TOKEN, GENERATOR_REPLY, RAGAS_PROMPT, RAGAS_REPLY
from ..evaluation.binary import judge_of, judge_prompts
from ..roles import registry
from ..validation.validator import FIRST_TURN, QUESTIONS, check_prompt

#: the share of the generator's attempts the validator rejects: on the example's recordings
#: (the 1.5B embedded generator, benchmarks/README.md, generated_turns.py) 16% at the bands'
#: seeds 0-2 and 28-36% at the unseen seeds 100-160
REJECTED = 0.3
#: contexts per answer: the example's bot retrieves 3 paragraphs
CONTEXTS = 3
#: ragas' calls per turn: faithfulness writes statements, then judges them; context recall one
RAGAS_CALLS = {"faithfulness": 2, "context_recall": 1}
#: typical lengths, in characters, of what a turn holds: the message, its stand-alone
#: question, the answer key, the evidence quoted from the document, the bot's reply
MESSAGE, QUESTION, KEY, EVIDENCE, REPLY = 60, 80, 80, 160, 240
#: what the printed estimate says it assumed
ASSUMED = (f"{REJECTED:.0%} of the generator's attempts rejected by an exact check (each one "
           f"more generator call), {CONTEXTS} contexts per answer, answer keys of one part, "
           f"replies of ~{REPLY // CHARS_PER_TOKEN} tokens, ~{CHARS_PER_TOKEN} characters "
           f"per token; the bot's own calls and time are not counted")


class Stage(BaseModel):
    """The calls one stage of a dialogue makes (``name``: generator, validator or a metric),
    by the judge model of ``role``, and their tokens."""

    model_config = ConfigDict(frozen=True)

    name: str
    role: str  # generator, validator or evaluator: whose model answers
    calls: float
    prompt_tokens: float
    completion_tokens: float


class DialogueCalls(BaseModel):
    """The calls of one dialogue by stage, with ``rejected`` of the generator's attempts
    rejected, and ``waves``: how many of them follow one another on its longest path (the
    rest run alongside)."""

    model_config = ConfigDict(frozen=True)

    stages: tuple[Stage, ...]
    rejected: float
    waves: float

    @property
    def calls(self) -> float:
        return sum(s.calls for s in self.stages)


def expected_calls(
    group: DocumentGroup, *, turns: int, role: str, metrics: Sequence[str],
    checks: Collection[str], rejected: float = REJECTED, contexts: int = CONTEXTS,
) -> DialogueCalls:
    """The calls a ``turns``-turn dialogue in ``role`` about ``group`` makes, scored on
    ``metrics``, its validator model asked ``checks`` (:func:`.validator.model_checks`)."""
    attempts = 1 / (1 - rejected)
    persona = registry.role(role).persona()
    held = [_turn(i) for i in range(1, turns + 1)]
    found: dict[tuple[str, str], list[float]] = {}

    def add(name: str, by: str, prompts: Sequence[str], completion: float,
            times: float = 1.0, tokens: float = 0.0) -> None:
        row = found.setdefault((name, by), [0.0, 0.0, 0.0])
        row[0] += len(prompts) * times
        row[1] += (sum(len(p) for p in prompts) / CHARS_PER_TOKEN + tokens) * times
        row[2] += completion * len(prompts) * times

    for index, turn in enumerate(held):
        earlier = held[:index]
        add("generator", "generator", [_generator_prompt(group, persona, earlier)],
            GENERATOR_REPLY, attempts)
        asked = [c for c in QUESTIONS if c in checks and (earlier or c in FIRST_TURN)]
        add("validator", "validator",
            [check_prompt(c, turn.generated, group, earlier) for c in asked], 1)
        for metric in metrics:
            if metric in RAGAS:
                calls = RAGAS_CALLS.get(metric, contexts)
                add(metric, "evaluator", [""] * calls, RAGAS_REPLY, tokens=RAGAS_PROMPT)
            elif earlier or metric not in (*MULTI_TURN_METRICS, *ROLE_METRICS):
                add(metric, "evaluator", _judge_prompts(metric, turn, earlier, group), 1)
    stages = tuple(Stage(name=n, role=r, calls=c, prompt_tokens=p, completion_tokens=o)
                   for (n, r), (c, p, o) in found.items() if c)
    # per turn the generator's attempts, then the validator's checks at once; then the
    # deepest judgement: faithfulness' two calls, else one
    judged = [s for s in stages if s.role == "evaluator"]
    deepest = 2 if "faithfulness" in metrics else 1 if judged else 0
    return DialogueCalls(stages=stages, rejected=rejected,
                         waves=turns * (attempts + (1 if checks else 0)) + deepest)


def _text(length: int) -> str:
    """Placeholder words of about ``length`` characters."""
    return ("word " * max(1, length // 5)).strip()


def _turn(index: int) -> Turn:
    """A placeholder turn of typical length."""
    generated = GeneratedTurn(
        rag_input=_text(MESSAGE), standalone_question=_text(QUESTION),
        ground_truth=_text(KEY), evidence=_text(EVIDENCE),
        question_type="initial" if index == 1 else "follow_up")
    return Turn(index=index, generated=generated,
                answer=RagAnswer(answer=_text(REPLY)))


def _generator_prompt(group: DocumentGroup, persona: str, earlier: list[Turn]) -> str:
    """The generator's prompt for the turn after ``earlier``: the document(s), the
    conversation, the role's persona and the fact asked."""
    fact = _text(EVIDENCE) if earlier else ""
    documents = group.documents
    return render("generator", group=len(documents) > 1, role=persona,
                  history=history_view(earlier), subject=documents[0].subject, opener=None,
                  message=None, index=len(earlier) + 1, feedback="",
                  document=documents[0].text, fact=fact,
                  sources=[(d.id, d.text) for d in documents],
                  names=" or ".join(f'"{d.id}"' for d in documents),
                  facts=[(documents[0].id, fact)] if fact else [])


def _judge_prompts(metric: str, turn: Turn, earlier: list[Turn],
                   group: DocumentGroup) -> list[str]:
    """The prompts of ``metric``'s judge about ``turn``; of a role's own metric whose prompt
    needs what only a real turn holds (its premise's figures), as many of the size of a
    shipped judge's."""
    try:
        return judge_prompts(metric, turn, earlier, group.documents[0].subject)
    except Exception:  # noqa: BLE001  (a role's context reads the real turn's fields)
        judge = judge_of(metric)
        asked = 1 + bool(judge.negation) + judge.against_key
        return [_text(MESSAGE + REPLY + KEY + EVIDENCE + len(judge.question))] * asked
