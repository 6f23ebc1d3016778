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
        recorded; ``on_retry`` is called before each wait between the model call's attempts."""
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
        """The model's reply to ``request``, retried (``on_retry`` is called before each
        wait), counted and stored in the cache."""
        async def once() -> dict[str, Any]:
            async with self._slot(model):  # the waits between attempts are outside it
                return await attempt(request, model, self.timeout)

        def gave_up(exc: Transient, attempts: int) -> ModelError:
            return ModelError(
                f"{describe(request)}: gave up after {attempts} attempt{'s' * (attempts != 1)}: "
                f"{exc}. Raise ini ragdive_retries or ragdive_retry_wait if the provider is "
                f"only busy")

        def too_long(exc: Transient, asked: retrying.WaitTooLong) -> ModelError:
            return ModelError(
                f"{describe(request)}: the provider {asked} (Retry-After), longer than "
                f"ragdive_retry_wait = {self.retry_wait:g} s: {exc}. Lower the load "
                f"(ragdive_concurrency) or raise ragdive_retry_wait")

        reply = await retrying.retried(
            once, again=Transient, retries=self.retries, first=1.0, longest=self.retry_wait,
            header=_retry_after, gave_up=gave_up, too_long=too_long, before_wait=on_retry)
        self.calls_made += 1
        record(
            calls=1,
            prompt_tokens=reply["prompt_tokens"],
            completion_tokens=reply["completion_tokens"],
            cost=reply["cost"],
        )
        self.cache.store(request, reply)
        return reply


def _retry_after(exc: Transient) -> str | None:
    """The Retry-After header of the provider's reply that failed, if any."""
    headers = getattr(getattr(exc.cause, "response", None), "headers", None)
    return (headers or {}).get("retry-after")
