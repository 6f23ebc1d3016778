"""The package's one retry policy and loop, for model calls and for a bot over HTTP alike:
how long to wait before the next attempt (``wait``), and the attempts (``retried``), bounded
by a count of retries and by a budget of time."""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
E = TypeVar("E", bound=BaseException)


class WaitTooLong(Exception):
    """The server asked to wait longer than the caller allows; ``asked`` seconds."""

    def __init__(self, asked: float) -> None:
        super().__init__(f"asked to retry after {asked:g} s")
        self.asked = asked


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (seconds or an HTTP date); None if unusable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - time.time()
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


def wait(attempt: int, *, first: float, longest: float, header: str | None = None) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1, 2, ...): what the server's
    Retry-After ``header`` asks, or :class:`WaitTooLong` when that is more than ``longest``;
    without one, ``first`` doubling each attempt up to ``longest``, less up to a quarter at
    random, so that callers that failed together do not retry together."""
    asked = retry_after(header)
    if asked is not None:
        if asked > longest:
            raise WaitTooLong(asked)
        return asked
    return min(longest, first * 2.0 ** min(attempt - 1, 60)) * random.uniform(0.75, 1.0)


#: how a retry waits: ``asyncio.sleep``, a seam for tests that play a long storm on a fast clock
sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


@dataclass(frozen=True)
class Policy:
    """How a caller retries: up to ``retries`` times (the failures it counts), the first
    wait ``first`` seconds doubling up to ``longest``, the waits within ``budget`` in all."""

    retries: int
    first: float
    longest: float
    budget: float = math.inf


@dataclass(frozen=True)
class Failures(Generic[E]):
    """What a caller makes of the failures it retries: the Retry-After ``header`` of one,
    whether it is ``counted`` against the retries, the errors raised when the retries are
    spent (``gave_up``), when the server asks for too long a wait (``too_long``) and when
    the budget is spent (``out_of_time``), and ``before_wait(seconds)``."""

    gave_up: Callable[[E, int], BaseException]
    too_long: Callable[[E, WaitTooLong], BaseException]
    header: Callable[[E], str | None] = lambda exc: None
    counted: Callable[[E], bool] = lambda exc: True
    out_of_time: Callable[[E, int, float], BaseException] = lambda exc, n, waited: exc
    before_wait: Callable[[float], None] = lambda seconds: None


async def retried(attempt: Callable[[], Awaitable[T]], *, again: type[E] | tuple[type[E], ...],
                  policy: Policy, failures: Failures[E]) -> T:
    """What ``attempt`` returns, trying again when it raises ``again``: up to
    ``policy.retries`` times for the failures that are counted (and those it may retry at
    once), and as long as the waits between attempts stay within the policy's budget.

    Between attempts: ``before_wait(seconds)``, then the wait of that attempt number and
    the failure's Retry-After header. When the retries are spent, ``gave_up(failure,
    attempts)`` is raised; when the next wait would take the waits past the budget,
    ``out_of_time(failure, attempts, waited)``; for a Retry-After longer than the longest
    wait, ``too_long(failure, asked)`` at once. Any other exception of ``attempt`` goes
    through untouched.
    """
    waited, spent = 0.0, 0
    for number in itertools.count(1):
        try:
            return await attempt()
        except again as exc:
            try:
                seconds = wait(number, first=policy.first, longest=policy.longest,
                               header=failures.header(exc))
            except WaitTooLong as asked:
                raise failures.too_long(exc, asked) from None
            # with no wait, time cannot bound them
            spent += failures.counted(exc) or seconds == 0
            if spent > policy.retries:
                raise failures.gave_up(exc, number) from None
            if waited + seconds > policy.budget:
                raise failures.out_of_time(exc, number, waited) from None
        failures.before_wait(seconds)
        await sleep(seconds)
        waited += seconds
    raise AssertionError("unreachable")  # itertools.count never ends
