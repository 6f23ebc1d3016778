"""One RAG-DIVE dialogue from start to scores: generate and validate each turn (``turns``),
ask the RAG (``asking``), evaluate; and many dialogues at once, or one from blocking code."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ...llm.cache import CacheMiss, RecordMode, ResponseCache
from ...llm.client import LLMClient
from ...llm.errors import ModelError
from ...llm.library import release_loop
from ...llm.usage import usage_scope
from ..base.errors import DialogueError, DocumentExhausted, GenerationError
from ..base.judges import Judges
from ..base.metrics import MULTI_TURN_METRICS, ROLE_METRICS
from ..base.models import Dialogue, Document, DocumentGroup, Message, Turn
from ..base.profile import Profiles, scope
from ..base.settings import check_all, default, scored_metrics
from ..documents.openers import Opener, opener_for
from ..evaluation.evaluator import evaluate
from ..generation.exhausted import RAN_OUT
from ..roles import registry
from ..validation.validator import model_checks
from .asking import RagAdapter, ask, start
from .conduct import Conduct, Progress
from .turns import next_turn

T = TypeVar("T")


async def arun_dialogue(
    document: Document | DocumentGroup,
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
    openers: Sequence[Opener] = (),
    profiles: Profiles | None = None,
    hold_short: bool = False,
) -> Dialogue:
    """Hold a ``turns``-turn conversation about ``document`` (or a group of documents that
    it moves between, :mod:`.groups`) with ``adapter`` and score it.

    Failures of this dialogue (the adapter raising or timing out, a missing recording) end
    it with ``dialogue.errors["dialogue"]`` set, the validator rejecting every attempt at a
    turn with ``dialogue.errors["generation"]``; they are not raised, so that other
    dialogues running alongside go on. ``validation="once"`` is the paper's single-iteration
    set-up: the validator model judges one attempt per turn; after it rejects one, the
    next attempt that passes the exact checks is used unchecked, and when none of the
    ``max_regenerations`` attempts does, the latest whose only fault is not leaning on the
    conversation. ``seed`` seeds the generator's sampling; a new seed gives a new
    conversation, the same seed replays the cached one. With ``openers`` (real users' first
    messages, :mod:`.openers`), turn 1 is one of them, drawn by seed. ``profiles``
    (:mod:`.profile`; default: the shipped ones) say what each judge model is trusted with.
    With ``hold_short``, a document with no fact left to ask about ends the dialogue
    (``dialogue.ended_early``), scored on the turns held (less the follow-up metrics after one).
    """
    check_all({"turns": turns, "role": role, "max_regenerations": max_regenerations,
               "validation": validation, "validator_checks": validator_checks, "seed": seed,
               "record_mode": record_mode, "adapter_timeout": adapter_timeout,
               "dialogue_timeout": dialogue_timeout}, "arun_dialogue")  # before any model call
    profiles = profiles or Profiles()
    chosen = scored_metrics(tuple(metrics) if metrics is not None else None, turns,
                            "arun_dialogue", judges.models["evaluator"].name, role, profiles)
    group = _group(document, role)
    client = client or LLMClient(ResponseCache(Path(cache_dir), record_mode))
    dialogue = Dialogue(document_id=group.id, role=role, seed=seed)
    with usage_scope(dialogue.usage), scope(profiles):  # the validator's checks: its profile's
        conduct = Conduct(
            judges=judges, client=client, turns=turns, max_regenerations=max_regenerations,
            validation=validation, seed=seed,
            model_checks=model_checks(judges.models["validator"], validator_checks),
            adapter_timeout=adapter_timeout, metrics=tuple(chosen),
            opener=opener_for(openers, group, seed), hold_short=hold_short,
            progress=progress or _silent)
        await _held(dialogue, _converse(dialogue, group, adapter, conduct), dialogue_timeout)
    conduct.progress(group.id, len(dialogue.turns), "done")
    return dialogue


def _silent(document_id: str, turn: int, stage: str) -> None:
    """The progress of a dialogue nobody watches."""


def _group(document: Document | DocumentGroup, role: str) -> DocumentGroup:
    """What the dialogue is about, as a group (of one document, or more), which ``role``
    must be able to talk about."""
    group = DocumentGroup.of(document)
    registry.role(role).check_group(group, "arun_dialogue",
                                    "pass run_dialogue a DocumentGroup of two or more documents")
    return group


async def _held(dialogue: Dialogue, work: Coroutine[Any, Any, None], timeout: float) -> None:
    """Run ``work`` on ``dialogue`` within ``timeout`` seconds; what ends it early goes into
    its errors, so that dialogues running alongside go on."""
    try:
        await asyncio.wait_for(work, timeout)
    except TimeoutError:
        dialogue.errors["dialogue"] = (
            f"the dialogue did not finish within {timeout:g} s "
            f"(stopped after {len(dialogue.turns)} turns); raise the dialogue timeout "
            f"or look for a slow model or adapter"
        )
    except GenerationError as exc:
        dialogue.errors["generation"] = str(exc)
    except (DialogueError, CacheMiss, ModelError) as exc:
        dialogue.errors["dialogue"] = str(exc)


async def _converse(dialogue: Dialogue, group: DocumentGroup, adapter: RagAdapter,
                    conduct: Conduct) -> None:
    session = await start(adapter, conduct.adapter_timeout)
    history: list[Message] = []
    for index in range(1, conduct.turns + 1):
        try:
            candidate, rejections, validated = await next_turn(
                dialogue, group, index, conduct,
                report=functools.partial(conduct.progress, group.id, index))
        except DocumentExhausted:
            dialogue.ended_early = RAN_OUT
            if not conduct.hold_short:
                raise
            break
        conduct.progress(group.id, index, "answer")
        answer = await ask(session, candidate.rag_input, history, index, conduct.adapter_timeout)
        dialogue.turns.append(
            Turn(index=index, generated=candidate, answer=answer, rejections=rejections,
                 validated=validated)
        )
        history += [
            Message(role="user", content=candidate.rag_input),
            Message(role="assistant", content=answer.answer),
        ]
    metrics: Sequence[str] = conduct.metrics
    if dialogue.ended_early and len(dialogue.turns) == 1:  # no turn to follow up on
        metrics = [m for m in metrics if m not in (*MULTI_TURN_METRICS, *ROLE_METRICS)]
    conduct.progress(group.id, conduct.turns, "evaluate")
    await evaluate(dialogue, conduct.client, conduct.judges.models["evaluator"], metrics, group)


async def arun_dialogues(
    documents: Sequence[Document | DocumentGroup],
    adapter: RagAdapter,
    *,
    judges: Judges,
    concurrency: int = default("concurrency"),
    client: LLMClient | None = None,
    cache_dir: str | Path = default("cache_dir"),
    record_mode: RecordMode = default("record_mode"),
    **options: Any,
) -> list[Dialogue]:
    """One dialogue per document (or group), all running at once under one limit of
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


def run_dialogue(document: Document | DocumentGroup, adapter: RagAdapter, **options: Any) -> Dialogue:
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
