"""The HttpAdapter's error, and how its messages show what came back: the shape of parsed
JSON, the first lines of a body with header values hidden, what to check for a status."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ..llm.secrets import mask


class HttpAdapterError(RuntimeError):
    """The bot could not be asked, or its reply could not be read; the message names the
    URL, what went wrong and what to check. It never holds a header value."""


def shape(data: Any) -> str:
    """A short description of parsed JSON for error messages: its keys, not its values."""
    if isinstance(data, Mapping):
        keys = list(data)
        more = ", ..." if len(keys) > 12 else ""
        return f"its keys: {', '.join(map(str, keys[:12]))}{more}" if keys else "an empty object"
    if isinstance(data, list):
        return f"a list of {len(data)}"
    return f"a {type(data).__name__}"


def excerpt(response: httpx.Response, secrets: Sequence[str], lines: int = 5,
            width: int = 200) -> str:
    """The first lines of a response body, cut, indented, with header values hidden."""
    text = mask(response.content[:4000].decode("utf-8", "replace"), secrets)
    shown = [line[:width] + (" ..." if len(line) > width else "")
             for line in text.strip().splitlines()[:lines]]
    if len(text.strip().splitlines()) > lines:
        shown.append("...")
    return "\n".join(f"  | {line}" for line in shown) or "  | (empty body)"


def advice(status: int) -> str:
    """What to check when the bot answered ``status``."""
    if status in (401, 403):
        return ("Check the credentials: the headers= of the HttpAdapter and the environment "
                "variables they name")
    if status in (404, 405):
        return "Check the URL: the path of the bot's chat endpoint, and that it takes POST"
    if status == 429:
        return ("The bot kept rate-limiting: lower the load (ragdive_concurrency, fewer "
                "documents) or raise retries= / max_wait=")
    if status >= 500:
        return "The bot failed on this request: check its logs"
    return ("Check the request body: model= or request= (the fields and format the bot "
            "expects)")
