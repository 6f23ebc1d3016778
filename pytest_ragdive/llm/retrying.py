"""The package's one retry policy, for model calls and for a bot over HTTP alike: how long
to wait before the next attempt."""

from __future__ import annotations

import email.utils
import math
import random
import time


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
    return min(longest, first * 2.0 ** (attempt - 1)) * random.uniform(0.75, 1.0)
