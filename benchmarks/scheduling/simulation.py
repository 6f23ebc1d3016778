"""The modelled parts of the scheduling benchmark: the engine's structure (critical path,
calls per dialogue), an ideal schedule of many dialogues under the concurrency limit, and
the least-squares fit of the tokens' growth."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pytest_ragdive.engine.base.metrics import MULTI_TURN_METRICS, ROLE_METRICS
from pytest_ragdive.engine.evaluation.binary import BINARY_JUDGES
from pytest_ragdive.engine.validation import validator

from .workload import Config


def eval_chains(turns: int, contexts: int) -> list[tuple[str, int]]:
    """(metric, sequential model calls) of every judgement of one dialogue, as
    ``pytest_ragdive.engine.evaluation.evaluator.evaluate`` starts them, all at once.

    From ragas 0.4.3 ``metrics/collections``: Faithfulness.ascore awaits statement
    generation, then NLI over the joined contexts (2 calls in a row); ContextPrecision
    (WithReference).ascore awaits one call per retrieved context in a ``for`` loop (one
    call after the other, not gathered); ContextRecall.ascore makes one call over the
    joined contexts. The binary judges make one yes/no call per question they ask, at
    once (``questions.BINARY_JUDGES``: a debiased one also asks its negation, or about the answer
    key; correctness asks about each part of the key too, one part in this workload's keys);
    the multi-turn ones start at turn 2.
    """
    chains: list[tuple[str, int]] = []
    for turn in range(1, turns + 1):
        chains += [("faithfulness", 2), ("context_precision", contexts), ("context_recall", 1)]
        for metric, judge in BINARY_JUDGES.items():  # a role's own judges: not in these dialogues
            if metric not in ROLE_METRICS and (turn > 1 or metric not in MULTI_TURN_METRICS):
                asked = 1 + bool(judge.negation or judge.against_key) + bool(judge.per_part)
                chains += [(metric, 1)] * asked
    return chains


def validator_calls(turn: int) -> int:
    """The validator model's yes/no calls on one attempt at ``turn`` (they run at once),
    for a model that is asked them (the scripted one is: ``validator.model_checks``)."""
    return len([c for c in validator.QUESTIONS if turn > 1 or c in validator.FIRST_TURN])


@dataclass(frozen=True)
class Structure:
    """The dependent calls of one dialogue, as the engine orders them."""

    model_chain: int        # model calls on the longest dependent chain of one dialogue
    adapter_chain: int      # adapter calls on it
    eval_depth: int         # of which: sequential calls of the slowest judgement
    calls: int              # model calls of one dialogue

    def critical_path(self, model_latency: float, adapter_latency: float) -> float:
        return self.model_chain * model_latency + self.adapter_chain * adapter_latency


def structure(turns: int, contexts: int) -> Structure:
    """Per turn: generator call, then the validator's calls at once (no rejections with
    the default replies), then the adapter call; after the last turn, every judgement at
    once, so the evaluation adds the longest judgement chain."""
    chains = eval_chains(turns, contexts)
    depth = max(n for _, n in chains)
    validating = [validator_calls(t) for t in range(1, turns + 1)]
    return Structure(model_chain=turns + sum(1 for v in validating if v) + depth,
                     adapter_chain=turns, eval_depth=depth,
                     calls=turns + sum(validating) + sum(n for _, n in chains))


class IdealSchedule:
    """A discrete-event run of dialogues with the engine's dependencies under a FIFO limit of
    model calls in flight (adapter calls are outside it), each call holding its slot ``hold``
    seconds, zero CPU time."""

    def __init__(self, cfg: Config, hold: float) -> None:
        self.cfg, self.hold = cfg, hold
        self.now, self.seq, self.free = 0.0, 0, cfg.concurrency
        self.events: list[tuple[float, int, Callable[[], None]]] = []
        self.waiting: deque[Callable[[], None]] = deque()
        self.finished: list[float] = []

    def at(self, delay: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self.events, (self.now + delay, self.seq, fn))
        self.seq += 1

    def model(self, then: Callable[[], None]) -> None:
        if self.free:
            self.free -= 1
            self.at(self.hold, lambda: self.release(then))
        else:
            self.waiting.append(then)

    def release(self, then: Callable[[], None]) -> None:
        if self.waiting:
            nxt = self.waiting.popleft()
            self.at(self.hold, lambda: self.release(nxt))
        else:
            self.free += 1
        then()

    def chain(self, steps: Sequence[str | int], then: Callable[[], None]) -> None:
        """Steps in order: "m" a model call, "a" an adapter call, n > 0 that many model
        calls at once (the next step waits for all)."""
        def step(i: int) -> None:
            if i == len(steps):
                then()
            elif steps[i] == "m":
                self.model(lambda: step(i + 1))
            elif steps[i] == "a":
                self.at(self.cfg.adapter_latency, lambda: step(i + 1))
            else:
                self.together(int(steps[i]), lambda: step(i + 1))
        step(0)

    def together(self, n: int, then: Callable[[], None]) -> None:
        """``n`` model calls at once; ``then`` once all have ended."""
        left = [n]

        def one_done() -> None:
            left[0] -= 1
            if left[0] == 0:
                then()
        for _ in range(n):
            self.model(one_done)

    def dialogue(self) -> None:
        """The turns one after the other, then every judgement's chain at once."""
        chains = eval_chains(self.cfg.turns, self.cfg.contexts)
        left = [len(chains)]

        def joined() -> None:
            left[0] -= 1
            if left[0] == 0:
                self.finished.append(self.now)

        def evaluate() -> None:
            for _, n in chains:
                self.chain("m" * n, joined)

        turns: list[str | int] = []
        for turn in range(1, self.cfg.turns + 1):
            calls = validator_calls(turn)
            turns += ["m", *([calls] if calls else []), "a"]
        self.chain(turns, evaluate)

    def makespan(self) -> float:
        for _ in range(self.cfg.documents):
            self.dialogue()
        while self.events:
            self.now, _, fn = heapq.heappop(self.events)
            fn()
        return max(self.finished)


def ideal_makespan(cfg: Config, hold: float | None = None) -> float:
    """Makespan of ``cfg.documents`` dialogues started together, with the engine's
    dependencies, a FIFO limit of ``cfg.concurrency`` model calls in flight (the
    LLMClient semaphore) and zero CPU time: the best any scheduler of this engine could do.
    ``hold``: seconds a call keeps its slot, instead of the model latency (to price in
    per-call overhead inside the limit)."""
    return IdealSchedule(cfg, cfg.model_latency if hold is None else hold).makespan()


def smallest_limit(cfg: Config, target: float) -> int:
    """The smallest concurrency limit whose ideal schedule of ``cfg`` meets ``target`` s."""
    return next(c for c in range(1, 10_000)
                if ideal_makespan(replace(cfg, concurrency=c)) <= target)


def quadratic_fit(points: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """Least squares y = a + b x + c x^2 (normal equations, Gauss-Jordan)."""
    rows = [[sum(x ** (i + j) for x, _ in points) for j in range(3)]
            + [sum(y * x ** i for x, y in points)] for i in range(3)]
    for col in range(3):
        pivot = rows[col][col]
        rows[col] = [v / pivot for v in rows[col]]
        for other in range(3):
            if other != col:
                factor = rows[other][col]
                rows[other] = [v - factor * w for v, w in zip(rows[other], rows[col])]
    return rows[0][3], rows[1][3], rows[2][3]

