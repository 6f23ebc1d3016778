"""One POST to the bot: headers with ``${NAME}`` expanded from the environment, retries of
429, 5xx and failed connections, and an error that says what to check."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ..llm.retrying import Failures, Policy, WaitTooLong, retried
from ..llm.secrets import mask
from .http_errors import HttpAdapterError, advice, excerpt

_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: str, header: str) -> str:
    """``value`` with every ``${NAME}`` replaced from ``os.environ``; an unset or empty
    variable is an error naming it (CI systems expand a missing secret to "")."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if not found:
            raise HttpAdapterError(
                f"the header {header!r} of the HttpAdapter needs the environment variable "
                f"{name}, which is not set or empty: export it (in CI, from a secret)"
            )
        return found

    return _ENV_VAR.sub(replace, value)


def expand_headers(headers: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Headers with the environment expanded, and the strings to hide in messages."""
    expanded = {name: expand_env(value, name) for name, value in headers.items()}
    secrets: set[str] = set()
    for value in expanded.values():
        secrets.add(value)
        secrets.update(part for part in value.split() if len(part) >= 8)
    return expanded, sorted((s for s in secrets if len(s) >= 6), key=len, reverse=True)


#: failures of a request the bot never got, retried (a timed-out request is not: the bot may
#: still be working on it)
_RETRIED = (httpx.ConnectTimeout, httpx.ConnectError, httpx.RemoteProtocolError)


class _Busy(Exception):
    """A 429 or 5xx reply: retried."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"{response.status_code} {response.reason_phrase}")
        self.response = response


def _retry_after(exc: Exception) -> str | None:
    return exc.response.headers.get("retry-after") if isinstance(exc, _Busy) else None


@dataclass(frozen=True)
class Endpoint:
    """The bot's URL and how a request to it is retried (see :class:`HttpAdapter`)."""

    url: str
    timeout: float
    retries: int
    backoff: float
    max_wait: float

    @property
    def shown(self) -> str:
        """The URL as messages show it, a password or key in it hidden."""
        return mask(self.url)

    async def post(self, client: httpx.AsyncClient, body: Any, headers: Mapping[str, str],
                   secrets: Sequence[str]) -> Any:
        """POST ``body`` with retries (``llm.retrying``); the parsed JSON reply."""
        started = time.monotonic()
        attempts = 0

        async def once() -> httpx.Response:
            nonlocal attempts
            attempts += 1
            try:
                response = await client.post(self.url, json=body, headers=headers)
            except httpx.TimeoutException as exc:
                if isinstance(exc, httpx.ConnectTimeout):
                    raise  # the bot never got it: retried
                raise self._timed_out(exc, attempts) from None
            except _RETRIED:
                raise
            except httpx.HTTPError as exc:
                raise HttpAdapterError(
                    f"POST {self.shown} failed: {type(exc).__name__}: {mask(str(exc), secrets)}"
                ) from None
            if response.status_code == 429 or response.status_code >= 500:
                raise _Busy(response)
            return response

        def gave_up(exc: Exception, attempts: int) -> HttpAdapterError:
            if isinstance(exc, _Busy):
                return HttpAdapterError(
                    self._status_message(exc.response, attempts, secrets, started))
            if isinstance(exc, httpx.ConnectTimeout):
                return self._timed_out(exc, attempts)
            return HttpAdapterError(
                f"POST {self.shown} failed after {attempts} attempts: {type(exc).__name__}: "
                f"{mask(str(exc), secrets)}. Check that the bot is running and reachable at "
                f"this URL")

        def too_long(exc: Exception, asked: WaitTooLong) -> HttpAdapterError:
            assert isinstance(exc, _Busy)  # only a reply has a Retry-After
            return HttpAdapterError(
                f"POST {self.shown} answered {exc.response.status_code} and {asked} "
                f"(Retry-After), longer than max_wait={self.max_wait:g} s:\n"
                f"{excerpt(exc.response, secrets)}\nLower the load (ragdive_concurrency, fewer "
                f"documents) or raise max_wait=")

        response = await retried(
            once, again=(*_RETRIED, _Busy),
            policy=Policy(self.retries, first=self.backoff, longest=self.max_wait),
            failures=Failures(gave_up=gave_up, too_long=too_long, header=_retry_after))
        status = response.status_code
        if not 200 <= status < 300:
            raise HttpAdapterError(self._status_message(response, attempts, secrets, started))
        try:
            return json.loads(response.content)
        except ValueError as exc:
            raise HttpAdapterError(
                f"POST {self.shown} answered {status} with a body that is not JSON ({exc}; "
                f"content-type {response.headers.get('content-type', 'none')!r}):\n"
                f"{excerpt(response, secrets)}\nCheck that the URL is the bot's JSON API "
                f"endpoint (not a web page or a proxy's error page)"
            ) from None

    def _timed_out(self, exc: httpx.TimeoutException, attempt: int) -> HttpAdapterError:
        return HttpAdapterError(
            f"POST {self.shown}: no answer within timeout={self.timeout:g} s "
            f"({type(exc).__name__}, attempt {attempt}). Check that the bot is not "
            f"stuck; if it is just slow, raise timeout= (and ragdive_adapter_timeout)")

    def _status_message(self, response: httpx.Response, attempts: int, secrets: Sequence[str],
                        started: float) -> str:
        status = response.status_code
        tried = (f" after {attempts} attempts in {time.monotonic() - started:.1f} s "
                 f"(429 and 5xx are retried {self.retries} times)" if attempts > 1 else "")
        return (
            f"POST {self.shown} answered {status} {response.reason_phrase}{tried}:\n"
            f"{excerpt(response, secrets)}\n{advice(status)}"
        )
