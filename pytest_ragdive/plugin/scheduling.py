"""Running dialogues for pytest items on one background event loop per process.

pytest calls items one after another; the dialogues behind them need not wait for
each other. Every dialogue is a task on one event loop in a daemon thread, sharing
one :class:`~pytest_ragdive.llm.client.LLMClient` and so one limit of model calls in
flight. An item submits its dialogues (and may submit those of the items of the same
test that follow it), then waits for its own, showing progress with ``-v``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

import pytest

from ..llm.library import release_loop


class Runner:
    """Coroutines started once per key on a private event loop in a daemon thread."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._futures: dict[Hashable, concurrent.futures.Future[Any]] = {}

    def submit(self, key: Hashable, start: Callable[[], Awaitable[Any]]) -> concurrent.futures.Future[Any]:
        """The future of the coroutine known as ``key``, started once."""
        future = self._futures.get(key)
        if future is None:
            future = asyncio.run_coroutine_threadsafe(_wrap(start), self._ensure_loop())
            self._futures[key] = future
        return future

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            from ..llm.library import import_litellm

            # on pytest's thread: the first import changes process-wide warning filters,
            # which must not race with pytest's own per-test catch_warnings
            import_litellm()
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="ragdive-loop", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        for future in self._futures.values():
            future.cancel()

        with contextlib.suppress(Exception):  # litellm's worker must not outlive its loop
            asyncio.run_coroutine_threadsafe(release_loop(), loop).result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None
        self._futures.clear()


async def _wrap(start: Callable[[], Awaitable[Any]]) -> Any:
    return await start()


class Progress:
    """Progress events from the loop's thread, shown on the terminal by the main thread at
    ``-v``: dialogues done of those started, the stage each is at, the model calls made, the
    time spent and an estimate of the time left (from the pace of the turns so far)."""

    def __init__(self, config: pytest.Config, calls: Callable[[], int] = lambda: 0) -> None:
        self.config = config
        self._calls = calls
        self._events: queue.SimpleQueue[tuple[int, str, int, int, str]] = queue.SimpleQueue()
        self._started = time.monotonic()
        self._work: list[int] = []  # per dialogue started: its turns and its evaluation
        self._done: dict[int, int] = {}  # per dialogue: the part of that work done
        self._finished = 0

    def reporter(self, run: int, runs: int, turns: int, *, certain: bool = True
                 ) -> Callable[[str, int, str], None]:
        """A dialogue's ``progress`` callback; ``run`` counts from 0. ``runs`` is how many
        there will be, or when not ``certain`` how many there may be (confirmation runs)."""
        label = (f" (run {run + 1}/{runs})" if certain else f" (run {run + 1}, up to {runs})"
                 ) if runs > 1 else ""
        ident = len(self._work)
        self._work.append(turns + 1)
        return lambda document, turn, stage: self._events.put(
            (ident, document + label, turn, turns, stage))

    def wait(self, futures: list[concurrent.futures.Future[Any]]) -> list[Any]:
        """The results of ``futures``, showing progress meanwhile with ``-v``."""
        pending = set(futures)
        while pending:
            _, pending = concurrent.futures.wait(pending, timeout=0.5)
            self._show()
        return [f.result() for f in futures]

    def _line(self, ident: int, document: str, turn: int, turns: int, stage: str) -> str:
        work = self._work[ident]
        done = {"done": work, "evaluate": turns}.get(stage, max(turn - 1, 0))
        self._done[ident] = max(self._done.get(ident, 0), done)
        self._finished += stage == "done"
        elapsed = time.monotonic() - self._started
        so_far = sum(self._done.values())
        left = sum(self._work) - so_far
        eta = f", about {_clock(elapsed * left / so_far)} left" if so_far and left else ""
        where = "done" if stage == "done" else f"turn {turn}/{turns} {stage}"
        return (f"  ragdive {self._finished}/{len(self._work)} dialogues · {document}: {where} · "
                f"{self._calls()} model calls · {_clock(elapsed)}{eta}")

    def _show(self) -> None:
        events = []
        while not self._events.empty():
            events.append(self._events.get())
        if not events:
            return
        lines = [self._line(*event) for event in events]  # counted whatever the verbosity
        if self.config.get_verbosity() <= 0:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or capture is None:
            return
        with capture.global_and_fixture_disabled():
            for line in lines:
                reporter.write_line(line)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}:{secs:02d}"
