"""One RAG-DIVE dialogue from start to scores: generate, validate, ask the RAG, evaluate."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..llm.cache import CacheMiss, RecordMode, ResponseCache
from ..llm.client import LLMClient
from ..llm.errors import ModelError, ReplyError
from ..llm.library import release_loop
from ..llm.usage import usage_scope
from .evaluator import evaluate
from .generator import generate_turn
from .judges import Judges
from .models import (
    Dialogue,
    Document,
    GeneratedTurn,
    Message,
    RagAnswer,
    Rejection,
    Turn,
    Usage,
    Verdict,
)
from .settings import check_all, default, scored_metrics
from .validator import asks_model, exact_verdict, judge_turn

T = TypeVar("T")

#: ``progress(document_id, turn, stage)`` is called as a dialogue advances; stage is
#: one of "generate", "validate", "answer", "evaluate", "done".
Progress = Callable[[str, int, str], None]


@runtime_checkable
class RagAdapter(Protocol):
    """The RAG system under test.

    ``answer`` may be ``def`` or ``async def``; a blocking one runs in a thread. It
    receives the user's question as asked in the conversation and the visible history
    (earlier questions and the system's answers). An optional ``start()`` (sync or
    async) is called when a dialogue begins; if it returns an object, that object
    answers the dialogue's questions, which lets a system that keeps history on its
    side hold one session per concurrent dialogue.
    """

    def answer(self, question: str, history: list[Message]) -> RagAnswer: ...


class DialogueError(Exception):
    """The conversation could not be completed; the message names the turn and cause."""


async def arun_dialogue(
    document: Document,
    adapter: RagAdapter,
    *,
    judges: Judges,
    turns: int = default("turns"),
    role: str = default("role"),
    metrics: Sequence[str] | None = None,
    max_regenerations: int = default("max_regenerations"),
    validation: str = default("validation"),
    validator_checks: str = default("validator_checks"),
    seed: int = default("seed"),
    client: LLMClient | None = None,
    cache_dir: str | Path = default("cache_dir"),
    record_mode: RecordMode = default("record_mode"),
    adapter_timeout: float = default("adapter_timeout"),
    dialogue_timeout: float = default("dialogue_timeout"),
    progress: Progress | None = None,
) -> Dialogue:
    """Hold a ``turns``-turn conversation about ``document`` with ``adapter`` and score it.

    Failures of this dialogue (the adapter raising or timing out, the validator
    rejecting every attempt at a turn, a missing recording) end it with
    ``dialogue.errors["dialogue"]`` set; they are not raised, so that other dialogues
    running alongside go on. ``validation="once"`` is the paper's single-iteration
    set-up: only a turn's first attempt is checked, and a rejected turn is regenerated
    once with the feedback and used unchecked (``max_regenerations`` does not apply).
    ``seed`` seeds the generator's sampling; a new seed gives
    a new conversation, the same seed replays the cached one.
    """
    check_all(
        {"turns": turns, "role": role, "max_regenerations": max_regenerations,
         "validation": validation, "validator_checks": validator_checks, "seed": seed,
         "record_mode": record_mode, "adapter_timeout": adapter_timeout,
         "dialogue_timeout": dialogue_timeout},
        "arun_dialogue",
    )  # before any model call
    chosen = scored_metrics(tuple(metrics) if metrics is not None else None, turns,
                            "arun_dialogue", judges.models["evaluator"].name)
    client = client or LLMClient(ResponseCache(Path(cache_dir), record_mode))
    dialogue = Dialogue(document_id=document.id, role=role)
    report = progress or (lambda doc, turn, stage: None)
    with usage_scope(dialogue.usage):
        try:
            await asyncio.wait_for(
                _converse(dialogue, document, adapter, judges, client, turns, max_regenerations,
                          validation, asks_model(judges.models["validator"], validator_checks),
                          seed, adapter_timeout, report, chosen),
                dialogue_timeout,
            )
        except asyncio.TimeoutError:
            dialogue.errors["dialogue"] = (
                f"the dialogue did not finish within {dialogue_timeout:g} s "
                f"(stopped after {len(dialogue.turns)} turns); raise the dialogue timeout "
                f"or look for a slow model or adapter"
            )
        except (DialogueError, CacheMiss, ModelError) as exc:
            dialogue.errors["dialogue"] = str(exc)
    report(document.id, len(dialogue.turns), "done")
    return dialogue


async def _converse(
    dialogue: Dialogue,
    document: Document,
    adapter: RagAdapter,
    judges: Judges,
    client: LLMClient,
    turns: int,
    max_regenerations: int,
    validation: str,
    model_checks: bool,
    seed: int,
    adapter_timeout: float,
    report: Progress,
    metrics: Sequence[str],
) -> None:
    models = judges.models
    session = await _start(adapter)
    history: list[Message] = []
    for index in range(1, turns + 1):
        rejections: list[Rejection] = []
        feedback = ""
        validated = True
        judged = False  # under "once", the validator model judges one attempt per turn
        fallback: tuple[int, GeneratedTurn] | None = None  # see _better_fallback
        for attempt in range(max_regenerations + 1):
            report(document.id, index, "generate")
            candidate = await generate_turn(
                client, models["generator"], document=document, role=dialogue.role,
                history=dialogue.turns, feedback=feedback,
                temperature=judges.generator_temperature, seed=seed + attempt,
            )
            report(document.id, index, "validate")
            verdict = exact_verdict(candidate, document, dialogue.turns)
            validated = not (validation == "once" and judged)
            if verdict.valid and validated and model_checks:
                try:
                    verdict = await judge_turn(
                        client, models["validator"], document=document, history=dialogue.turns,
                        candidate=candidate,
                    )
                except ReplyError as exc:
                    raise DialogueError(
                        f"turn {index}, validating attempt {attempt + 1}: {exc}. Use a validator "
                        f"model that answers yes/no questions, or ragdive_validator_checks = "
                        f"exact to validate with the exact checks only") from None
                judged = True
            if verdict.valid:
                break
            rejections.append(Rejection(turn=candidate, verdict=verdict))
            feedback = verdict.feedback or ", ".join(verdict.categories) or "invalid turn"
            fallback = _better_fallback(fallback, candidate, verdict)
        else:
            if validation == "once" and fallback is not None:
                # the paper's set-up uses a regenerated turn unchecked; here its answer key
                # must at least be the document's
                candidate, validated = fallback[1], False
            else:
                raise DialogueError(
                    f"turn {index}: the validator rejected all {max_regenerations + 1} attempts "
                    f"(max_regenerations={max_regenerations}); last feedback: {feedback}"
                )
        report(document.id, index, "answer")
        answer = await _ask(session, candidate.rag_input, history, index, adapter_timeout)
        dialogue.turns.append(
            Turn(index=index, generated=candidate, answer=answer, rejections=rejections,
                 validated=validated)
        )
        history += [
            Message(role="user", content=candidate.rag_input),
            Message(role="assistant", content=answer.answer),
        ]
    report(document.id, turns, "evaluate")
    await evaluate(dialogue, client, models["evaluator"], metrics)


#: faults an attempt may have and still be used under validation "once", best first: not
#: leaning on the conversation; that and asking again. An invented answer key never is.
_TOLERABLE = ({"rag_input_not_connected"}, {"rag_input_not_connected", "question_not_consistent"})


def _better_fallback(
    fallback: tuple[int, GeneratedTurn] | None, candidate: GeneratedTurn, verdict: Verdict
) -> tuple[int, GeneratedTurn] | None:
    """The attempt to use if none passes: the latest one with the least tolerable faults."""
    faults = set(verdict.categories)
    rank = next((i for i, ok in enumerate(_TOLERABLE) if faults and faults <= ok), None)
    if rank is None or (fallback is not None and fallback[0] < rank):
        return fallback
    return rank, candidate


async def _start(adapter: RagAdapter) -> RagAdapter:
    start = getattr(adapter, "start", None)
    if start is None:
        return adapter
    session = start()
    if inspect.isawaitable(session):
        session = await session
    return adapter if session is None else session


async def _ask(
    adapter: RagAdapter, question: str, history: list[Message], index: int, timeout: float
) -> RagAnswer:
    where = f"turn {index}: the RAG adapter"
    # the adapter's own model calls (if any) are the system under test, not judge usage
    with usage_scope(Usage()):
        try:
            if inspect.iscoroutinefunction(adapter.answer):
                call = adapter.answer(question, list(history))
            else:
                call = _in_daemon_thread(adapter.answer, question, list(history))
            result = await asyncio.wait_for(call, timeout)
        except asyncio.TimeoutError:
            raise DialogueError(
                f"{where} did not answer {question!r} within {timeout:g} s "
                f"(raise ragdive_adapter_timeout if it is just slow)"
            ) from None
        except Exception as exc:
            raise DialogueError(
                f"{where} raised {type(exc).__name__}: {exc} (question {question!r})"
            ) from exc
    try:
        # an instance too: RagAnswer.model_construct(...) skips validation
        data = dict(result) if isinstance(result, RagAnswer) else result
        return RagAnswer.model_validate(data)
    except ValueError as exc:
        why = f" ({_first_error(exc)})" if isinstance(result, (RagAnswer, dict)) else ""
        raise DialogueError(
            f"{where} returned {type(result).__name__} for {question!r}{why}; "
            f"return pytest_ragdive.RagAnswer(answer=..., contexts=[...]) with text only"
        ) from None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)[:200]
    first = errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


async def _in_daemon_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run blocking ``fn`` in a daemon thread. Unlike the default executor, a call that
    hangs for ever cannot keep the process from exiting after its timeout."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def run() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (fn(*args), None)
        except BaseException as exc:  # handed over to the awaiting coroutine
            outcome = (None, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop closed while the call hung
            pass

    threading.Thread(target=run, name="ragdive-adapter", daemon=True).start()
    return await future


async def arun_dialogues(
    documents: Sequence[Document],
    adapter: RagAdapter,
    *,
    judges: Judges,
    concurrency: int = default("concurrency"),
    client: LLMClient | None = None,
    cache_dir: str | Path = default("cache_dir"),
    record_mode: RecordMode = default("record_mode"),
    **options: Any,
) -> list[Dialogue]:
    """One dialogue per document, all running at once under one limit of
    ``concurrency`` model calls in flight. Options are those of :func:`arun_dialogue`."""
    client = client or LLMClient(
        ResponseCache(Path(cache_dir), record_mode), concurrency=concurrency
    )
    return list(
        await asyncio.gather(
            *(arun_dialogue(doc, adapter, judges=judges, client=client, **options)
              for doc in documents)
        )
    )


def run_dialogue(document: Document, adapter: RagAdapter, **options: Any) -> Dialogue:
    """The blocking twin of :func:`arun_dialogue`."""
    return run_blocking(arun_dialogue(document, adapter, **options))


def run_blocking(coroutine: Coroutine[Any, Any, T], *, grace: float = 2.0) -> T:
    """Run ``coroutine`` on a new event loop and close the loop, like ``asyncio.run``, but
    give what is left on the loop only ``grace`` seconds to end.

    litellm's own background worker is stopped first (see ``llm.release_loop``); a task
    that still ignores its cancellation after ``grace`` is abandoned with the loop.
    """
    async def main() -> T:
        try:
            return await coroutine
        finally:
            await release_loop()

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main())
    finally:
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                _, stuck = loop.run_until_complete(asyncio.wait(left, timeout=grace))
                for task in stuck:
                    task._log_destroy_pending = False  # type: ignore[attr-defined]
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
