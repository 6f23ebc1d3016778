"""The RAG system under test and how a dialogue asks it: a session per dialogue if it keeps
one, a bounded wait for each answer (a blocking ``answer`` runs in a daemon thread), and
an answer checked to be a :class:`RagAnswer`."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ...llm.secrets import mask
from ...llm.usage import usage_scope
from ..base.errors import DialogueError
from ..base.models import Message, RagAnswer, Usage


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


async def start(adapter: RagAdapter, timeout: float) -> RagAdapter:
    """What answers a new dialogue's questions: the session ``adapter.start()`` returns
    within ``timeout`` s, else the adapter."""
    begin = getattr(adapter, "start", None)
    if begin is None:
        return adapter
    session = await _guarded("the RAG adapter's start()", "return a session", "starting a "
                             "dialogue", timeout, begin)
    return adapter if session is None else session


async def ask(
    adapter: RagAdapter, question: str, history: list[Message], index: int, timeout: float
) -> RagAnswer:
    """The answer of ``adapter`` to ``question`` at turn ``index``, within ``timeout`` s."""
    where = f"turn {index}: the RAG adapter"
    # the adapter's own model calls (if any) are the system under test, not judge usage
    with usage_scope(Usage()):
        result = await _guarded(where, f"answer {question!r}", f"question {question!r}",
                                timeout, adapter.answer, question, list(history))
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


async def _guarded(where: str, doing: str, context: str, timeout: float,
                   fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` within ``timeout`` s, a blocking one in a daemon thread so that a hang
    cannot block the dialogues' loop; a failure is a :class:`DialogueError` naming
    ``where``, with the error's text masked (it may quote a URL with a key)."""
    try:
        call = fn(*args) if inspect.iscoroutinefunction(fn) else _in_daemon_thread(fn, *args)
        result = await asyncio.wait_for(call, timeout)
        if inspect.isawaitable(result):  # a plain function that returned a coroutine
            result = await asyncio.wait_for(result, timeout)
    except TimeoutError:
        raise DialogueError(
            f"{where} did not {doing} within {timeout:g} s (raise ragdive_adapter_timeout if "
            f"it is just slow)"
        ) from None
    except Exception as exc:
        raise DialogueError(
            f"{where} raised {type(exc).__name__}: {mask(str(exc))} ({context})"
        ) from exc
    return result


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
