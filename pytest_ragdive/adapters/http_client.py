"""The HttpAdapter's ``httpx.AsyncClient``: one for the event loop it is used on, closed
when that loop ends or when asked to, from that loop or from another thread."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import httpx


class LoopClient:
    """The open client, if any, and the loop it belongs to."""

    def __init__(self) -> None:
        self._open: _Open | None = None

    @property
    def client(self) -> httpx.AsyncClient | None:
        """The open HTTP client, if any."""
        return self._open.client if self._open is not None else None

    def for_loop(self, make: Callable[[], httpx.AsyncClient]) -> httpx.AsyncClient:
        """The client of the running loop, made by ``make`` when there is none."""
        loop = asyncio.get_running_loop()
        if self._open is not None and self._open.loop is not loop:
            # run_dialogue runs each dialogue on a new event loop, and a client's
            # connections belong to the loop that opened them
            self._let_go()
        if self._open is None:
            self._open = _Open.start(make(), loop)
        return self._open.client

    def _let_go(self) -> None:
        """Close the client on its loop if that loop still runs (in another thread)."""
        opened, self._open = self._open, None
        if opened is not None and opened.loop.is_running():
            asyncio.run_coroutine_threadsafe(opened.close(), opened.loop)

    async def aclose(self) -> None:
        """Close the HTTP client (a later request opens a new one)."""
        opened, self._open = self._open, None
        if opened is None:
            return
        if opened.loop is asyncio.get_running_loop():
            await opened.close()
        elif opened.loop.is_running():
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(opened.close(), opened.loop))

    def close(self) -> None:
        """Close the HTTP client from synchronous code; the event loop that used it may run
        in another thread."""
        opened = self._open
        if opened is None:
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is opened.loop:
            raise RuntimeError("HttpAdapter.close() inside its event loop: await aclose()")
        self._open = None
        if opened.loop.is_running():
            asyncio.run_coroutine_threadsafe(opened.close(), opened.loop).result(timeout=30)
        elif not opened.loop.is_closed() and running is None:
            opened.loop.run_until_complete(opened.close())
        # a loop that ended (asyncio.run, run_dialogue) closed the client as it did


@dataclass
class _Open:
    """An HTTP client and the task that closes it on its own event loop: when asked to, or
    when the loop ends and cancels what is left on it (``asyncio.run``, ``run_dialogue``)."""

    client: httpx.AsyncClient
    loop: asyncio.AbstractEventLoop
    closing: asyncio.Event
    keeper: asyncio.Task[None]

    @classmethod
    def start(cls, client: httpx.AsyncClient, loop: asyncio.AbstractEventLoop) -> _Open:
        closing = asyncio.Event()
        keeper = loop.create_task(cls._keep(client, closing), name="ragdive-http-client")
        # a loop stopped without cancelling its tasks (the plugin's, at exit) drops it quietly
        keeper._log_destroy_pending = False  # type: ignore[attr-defined]
        return cls(client, loop, closing, keeper)

    @staticmethod
    async def _keep(client: httpx.AsyncClient, closing: asyncio.Event) -> None:
        try:
            await closing.wait()
        finally:
            await client.aclose()

    async def close(self) -> None:
        self.closing.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self.keeper
