"""Where the reply to one exact request comes from: the response cache, the same request
already in flight, or the model, called within the limit of calls in flight, retried on
transient errors, counted in the usage ledger and stored in the cache."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable
from typing import Any

from . import providers, retrying
from .cache import ResponseCache, describe, request_key
from .calling import attempt
from .errors import ModelError, Transient
from .flights import Flights
from .model import Model
from .usage import record


class CachedCalls:
    """Cached, bounded, retrying calls; the base of :class:`~.client.LLMClient`, which
    says what its arguments mean."""

    def __init__(self, cache: ResponseCache, *, concurrency: int, timeout: float,
                 retries: int, retry_wait: float) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.cache = cache
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = retries
        self.retry_wait = retry_wait
        # asyncio primitives belong to one event loop; run_dialogue may use several
        self._limits: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]
        ] = weakref.WeakKeyDictionary()
        self._flights = Flights()
        self.calls_made = 0  # model calls this client made (not cache hits), for progress

    def semaphore(self, name: str, size: int) -> asyncio.Semaphore:
        """The running loop's semaphore ``name``, made with ``size`` places if new."""
        limits = self._limits.setdefault(asyncio.get_running_loop(), {})
        return limits.setdefault(name, asyncio.Semaphore(size))

    @contextlib.asynccontextmanager
    async def _slot(self, model: Model) -> Any:
        """A place among the calls in flight. An in-process provider (the embedded model)
        serves few calls at a time, so its calls queue here first: waiting there would
        count against the per-call timeout."""
        shared = self.semaphore("*", self.concurrency)
        at_once = providers.served_at_once(model.name)
        if at_once is not None:
            own = self.semaphore(model.name, at_once)
            async with own, shared:
                yield
        else:
            async with shared:
                yield

    async def cached(self, request: dict[str, Any], model: Model,
                     on_retry: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """The reply to ``request`` (None values left out), from the cache when it is
        recorded; ``on_retry`` is called before the model call's first wait, if any."""
        request = {k: v for k, v in request.items() if v is not None}
        reply = self.cache.load(request)
        if reply is not None:
            record(cache_hits=1)
            return reply
        reply, shared = await self._flights.run(
            request_key(request), lambda: self._recorded(request, model, on_retry))
        if shared:
            record(cache_hits=1)
        return reply

    async def _recorded(self, request: dict[str, Any], model: Model,
                        on_retry: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """The model's reply to ``request``, retried (``on_retry`` is called before the
        first wait), counted and stored in the cache."""
        tries = 0
        while True:
            async with self._slot(model):
                try:
                    reply = await attempt(request, model, self.timeout)
                    break
                except Transient as exc:
                    if tries == self.retries:
                        raise ModelError(
                            f"{describe(request)}: gave up after {tries + 1} attempts: "
                            f"{exc}. Raise ini ragdive_retries or ragdive_retry_wait if the "
                            f"provider is only busy"
                        ) from None
                    headers = getattr(getattr(exc.cause, "response", None), "headers", None)
                    try:
                        wait = retrying.wait(tries + 1, first=1.0, longest=self.retry_wait,
                                             header=(headers or {}).get("retry-after"))
                    except retrying.WaitTooLong as too_long:
                        raise ModelError(
                            f"{describe(request)}: the provider {too_long} (Retry-After), "
                            f"longer than ragdive_retry_wait = {self.retry_wait:g} s: {exc}. "
                            f"Lower the load (ragdive_concurrency) or raise ragdive_retry_wait"
                        ) from None
            on_retry()
            await asyncio.sleep(wait)  # outside the slot: other calls go on meanwhile
            tries += 1
        self.calls_made += 1
        record(
            calls=1,
            prompt_tokens=reply["prompt_tokens"],
            completion_tokens=reply["completion_tokens"],
            cost=reply["cost"],
        )
        self.cache.store(request, reply)
        return reply
