"""Calls in flight that adapt to a provider's rate limits, as the cloud SDKs' adaptive retry
mode does: each model's limit halves when a call sent at that limit is told the provider is
busy, and grows back by about one call per limit's worth of calls answered (additive
increase, multiplicative decrease), never above the client's ``concurrency``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Throttle:
    """The adaptive limit of one model's calls in flight, shared by every event loop."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.limit = float(most)
        self.cuts = 0  # how often the limit was cut: a call's stamp says at which limit it went

    @property
    def allowed(self) -> int:
        return max(1, int(self.limit))

    def busy(self, stamp: int) -> None:
        """A call sent with ``stamp`` was told the provider is busy: halve the limit, once
        for the calls that went at the same limit (their answers say the same thing)."""
        if stamp == self.cuts:
            self.limit = max(1.0, self.limit / 2)
            self.cuts += 1

    def answered(self) -> None:
        """A call got its reply: one more call in flight after ``limit`` of them."""
        self.limit = min(float(self.most), self.limit + 1 / self.limit)


class Slots:
    """Places among one event loop's calls in flight to one model, as many as its
    :class:`Throttle` allows at the moment."""

    def __init__(self, throttle: Throttle) -> None:
        self.throttle = throttle
        self.taken = 0
        self._waiting: list[asyncio.Future[None]] = []

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[int]:
        """A place, held while the call is in flight; yields the throttle's stamp."""
        while self.taken >= self.throttle.allowed:
            waiter = asyncio.get_running_loop().create_future()
            self._waiting.append(waiter)
            try:
                await waiter
            finally:
                self._waiting.remove(waiter)
        self.taken += 1
        try:
            yield self.throttle.cuts
        finally:
            self.taken -= 1
            self._wake()

    def _wake(self) -> None:
        """Let the waiting calls look again whether the limit has room for them."""
        for waiter in self._waiting:
            if not waiter.done():
                waiter.set_result(None)
