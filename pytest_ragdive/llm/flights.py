"""One model call per distinct request in flight: identical requests made at the same
time (two judges asking the same question, two dialogues at the same first turn) wait
for the first one's reply instead of calling the model again."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import Any


class Flights:
    """Calls in flight by key, per event loop (futures belong to one loop)."""

    def __init__(self) -> None:
        self._open: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Future[Any]]
        ] = weakref.WeakKeyDictionary()

    async def run(self, key: str, call: Callable[[], Awaitable[Any]]) -> tuple[Any, bool]:
        """The reply of the call in flight for ``key`` and True, or, when there is none,
        of ``call``, made as that call (callers that come meanwhile share its reply or
        its error), and False."""
        loop = asyncio.get_running_loop()
        flights = self._open.setdefault(loop, {})
        while (flight := flights.get(key)) is not None:
            try:
                return await asyncio.shield(flight), True
            except asyncio.CancelledError:
                if not flight.cancelled():  # this caller was cancelled, not the call
                    raise
        flight = flights[key] = loop.create_future()
        try:
            reply = await call()
        except asyncio.CancelledError:
            flight.cancel()  # the callers that came meanwhile make the call themselves
            raise
        except BaseException as exc:
            flight.set_exception(exc)
            flight.exception()  # retrieved: no "never retrieved" log when nobody came
            raise
        else:
            flight.set_result(reply)
            return reply, False
        finally:
            del flights[key]
