"""The usage ledger: model calls, tokens and cost, counted per dialogue."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict


class Usage(BaseModel):
    """Model calls made for one dialogue. Cache hits cost nothing and count separately;
    ``retried``: calls that needed more than one attempt, ``waited_s``: the seconds they
    waited between attempts, summed over the calls."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    retried: int = 0
    waited_s: float = 0.0

    def add(self, other: Usage) -> None:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @classmethod
    def total(cls, usages: Iterator[Usage] | list[Usage]) -> Usage:
        out = cls()
        for usage in usages:
            out.add(usage)
        return out


_current: contextvars.ContextVar[Usage | None] = contextvars.ContextVar(
    "ragdive_usage", default=None
)


@contextlib.contextmanager
def usage_scope(usage: Usage) -> Iterator[Usage]:
    """Count every call made in this context (and tasks started from it) into ``usage``."""
    token = _current.set(usage)
    try:
        yield usage
    finally:
        _current.reset(token)


def record(**counts: float) -> None:
    """Add ``counts`` to the ledger of the current scope, if any."""
    usage = _current.get()
    if usage is not None:
        for name, value in counts.items():
            setattr(usage, name, getattr(usage, name) + value)
