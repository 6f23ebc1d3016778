"""Running dialogues for pytest items on one background event loop per process.

pytest calls items one after another; the dialogues behind them need not wait for
each other. Every dialogue is a task on one event loop in a daemon thread, sharing
one :class:`~pytest_ragdive.llm.LLMClient` and so one limit of model calls in flight.
An item submits its dialogues (and may submit those of items that follow it), then
waits for its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Hashable
from typing import Any


class Runner:
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
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None
        self._futures.clear()


async def _wrap(start: Callable[[], Awaitable[Any]]) -> Any:
    return await start()
