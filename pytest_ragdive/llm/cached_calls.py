"""Where the reply to one exact request comes from: the response cache, the same request
already in flight, or the model, called within the limit of calls in flight (adapted to the
provider's rate limits, ``throttle.py``), retried on transient errors within a count and a
budget of time, counted in the usage ledger and stored in the cache."""

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
from .throttle import Slots, Throttle
from .usage import record


class CachedCalls:
    """Cached, bounded, retrying calls; the base of :class:`~.client.LLMClient`, which
    says what its arguments mean."""

    def __init__(self, cache: ResponseCache, *, concurrency: int, timeout: float,
                 retries: int, retry_wait: float, retry_budget: float) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.cache = cache
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = retries
        self.retry_wait = retry_wait
        self.retry_budget = retry_budget
        #: each model server's adaptive limit of calls in flight (the loops' slots share it)
        self._throttles: dict[tuple[str, str], Throttle] = {}
        # asyncio primitives belong to one event loop; run_dialogue may use several
        self._limits: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]
        ] = weakref.WeakKeyDictionary()
        self._slots: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[str, str], Slots]
        ] = weakref.WeakKeyDictionary()
        self._flights = Flights()
        self.calls_made = 0  # model calls this client made (not cache hits), for progress

    def semaphore(self, name: str, size: int) -> asyncio.Semaphore:
        """The running loop's semaphore ``name``, made with ``size`` places if new."""
        limits = self._limits.setdefault(asyncio.get_running_loop(), {})
        return limits.setdefault(name, asyncio.Semaphore(size))

    def _throttle(self, model: Model) -> Throttle:
        """The adaptive limit of the calls in flight to ``model``'s server."""
        return self._throttles.setdefault(model.server, Throttle(self.concurrency))

    @contextlib.asynccontextmanager
    async def _slot(self, model: Model) -> Any:
        """A place among the calls in flight to ``model`` (as many as its throttle allows)
        and among all calls in flight; yields the throttle's stamp. An in-process provider
        (the embedded model) serves few calls at a time, so its calls queue here first:
        waiting there would count against the per-call timeout."""
        slots = self._slots.setdefault(asyncio.get_running_loop(), {}).setdefault(
            model.server, Slots(self._throttle(model)))
        shared = self.semaphore("*", self.concurrency)
        at_once = providers.served_at_once(model.name)
        own = self.semaphore(model.name, at_once) if at_once is not None else None
        async with slots.slot() as stamp, own or contextlib.nullcontext(), shared:
            yield stamp

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
        wait), counted and stored in the cache. A provider that says it is busy (429, 503,
        529) lowers the model's calls in flight, and is retried within the time budget
        whatever the count of retries."""
        throttle = self._throttle(model)
        waited = False

        async def once() -> dict[str, Any]:
            async with self._slot(model) as stamp:  # the waits between attempts are outside it
                try:
                    reply = await attempt(request, model, self.timeout)
                except Transient as exc:
                    if exc.busy:
                        throttle.busy(stamp)
                    raise
                throttle.answered()
                return reply

        def before_wait(seconds: float) -> None:
            nonlocal waited
            on_retry()
            record(retried=0 if waited else 1, waited_s=seconds)
            waited = True

        reply = await retrying.retried(
            once, again=Transient,
            policy=retrying.Policy(self.retries, first=1.0, longest=self.retry_wait,
                                   budget=self.retry_budget),
            failures=retrying.Failures(
                gave_up=self._gave_up(request), too_long=self._too_long(request),
                header=_retry_after, counted=lambda exc: not exc.busy,
                out_of_time=self._out_of_time(request), before_wait=before_wait))
        self.calls_made += 1
        record(
            calls=1,
            prompt_tokens=reply["prompt_tokens"],
            completion_tokens=reply["completion_tokens"],
            cost=reply["cost"],
        )
        self.cache.store(request, reply)
        return reply

    def _gave_up(self, request: dict[str, Any]) -> Callable[[Transient, int], ModelError]:
        def gave_up(exc: Transient, attempts: int) -> ModelError:
            return ModelError(
                f"{describe(request)}: gave up after {attempts} attempt{'s' * (attempts != 1)}: "
                f"{exc}. Raise ini ragdive_retries or ragdive_retry_wait if the provider is "
                f"only busy")
        return gave_up

    def _too_long(self, request: dict[str, Any]
                  ) -> Callable[[Transient, retrying.WaitTooLong], ModelError]:
        def too_long(exc: Transient, asked: retrying.WaitTooLong) -> ModelError:
            return ModelError(
                f"{describe(request)}: the provider {asked} (Retry-After), longer than "
                f"ragdive_retry_wait = {self.retry_wait:g} s: {exc}. Lower the load "
                f"(ragdive_concurrency) or raise ragdive_retry_wait")
        return too_long

    def _out_of_time(self, request: dict[str, Any]
                     ) -> Callable[[Transient, int, float], ModelError]:
        def out_of_time(exc: Transient, attempts: int, waited: float) -> ModelError:
            return ModelError(
                f"{describe(request)}: gave up after {attempts} attempt{'s' * (attempts != 1)} "
                f"and {waited:.1f} s of waits between them, as the next wait would pass ini "
                f"ragdive_retry_budget = {self.retry_budget:g} s: {exc}. Raise "
                f"ragdive_retry_budget if the provider is only busy for a while, or lower "
                f"ragdive_concurrency")
        return out_of_time


def _retry_after(exc: Transient) -> str | None:
    """The Retry-After header of the provider's reply that failed, if any."""
    headers = getattr(getattr(exc.cause, "response", None), "headers", None)
    return (headers or {}).get("retry-after")
