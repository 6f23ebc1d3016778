"""Asking for and reading a model's reply: the ``response_format`` of a pydantic schema, a
JSON reply parsed into it, and P(yes) of a yes/no reply."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_FIRST_WORD = re.compile(r"\W*(\w+)")


def schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """An OpenAI-style ``response_format`` asking for JSON that fits ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
    }


def unfenced(text: str) -> str:
    """What a Markdown code fence around ``text`` holds; ``text`` itself when it has none."""
    fenced = _FENCE.match(text.strip())
    return fenced.group(1) if fenced else text


def parse_reply(text: str, schema: type[T]) -> T:
    """Validate a model's JSON reply, tolerating a Markdown code fence around it."""
    return schema.model_validate_json(unfenced(text.strip()))


def p_yes(reply: Mapping[str, Any]) -> float | None:
    """P(yes) from a yes/no reply's first-token alternatives, else from its first word;
    None when the reply is no verdict."""
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in reply.get("top_logprobs") or []:
        word = str(token).strip().lower()
        if word in mass:
            mass[word] += math.exp(logprob)
    if mass["yes"] + mass["no"] > 0:
        return mass["yes"] / (mass["yes"] + mass["no"])
    first = _FIRST_WORD.match(str(reply["content"]))
    if first and first.group(1).lower() in ("yes", "no"):
        return 1.0 if first.group(1).lower() == "yes" else 0.0
    return None
