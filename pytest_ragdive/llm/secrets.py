"""Hiding secrets in text that reaches a person: failure messages, reprs, reports."""

from __future__ import annotations

import re
from collections.abc import Sequence

_SECRET = re.compile(
    r"(?P<label>\bsk-|(?<![A-Za-z])(?:key|token|secret|password)[\"']?\s*[=:]\s*[\"']?|"
    r"\bBearer\s+)[A-Za-z0-9_\-.~+/]{6,}"
    r"|\bAIza[0-9A-Za-z_\-]{20,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bhf_[A-Za-z0-9]{20,}|\bxox[abprs]-[A-Za-z0-9\-]{10,}",
    re.IGNORECASE,
)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]+:)[^@\s/]+(?=@)")
#: names of parameters and headers whose values are credentials
SECRET_NAME = re.compile(r"key|token|secret|password|credential", re.IGNORECASE)


def mask(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with the given secret values and anything that looks like a key hidden."""
    for value in secrets:
        text = text.replace(value, "***")
    text = _URL_PASSWORD.sub(r"\1***", text)
    return _SECRET.sub(lambda m: f"{m.group('label') or ''}***", text)
