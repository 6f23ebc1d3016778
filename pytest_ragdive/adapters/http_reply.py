"""Reading the bot's parsed JSON reply: the answer, the contexts and the session id at
dotted field paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.base.models import RagAnswer
from .http_errors import HttpAdapterError, shape

#: Where an OpenAI-compatible endpoint puts the reply.
OPENAI_ANSWER = "choices.0.message.content"
#: The keys tried, in order, for the text of a context given as an object.
CONTEXT_TEXT_KEYS = ("text", "content", "page_content", "chunk")

_MISSING = object()


def lookup(data: Any, path: str) -> Any:
    """The value at dotted ``path`` ("choices.0.message.content") in parsed JSON, or
    ``_MISSING``. A numeric part indexes a list."""
    node = data
    for part in path.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and _is_index(part) and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _is_index(part: str) -> bool:
    return part.lstrip("-").isdigit()


def read(reply: Any, *, url: str, answer_field: str, contexts_field: str | None,
         context_text_field: str | None) -> RagAnswer:
    """The answer and contexts in a parsed reply of ``url``."""
    answer = lookup(reply, answer_field)
    if answer is _MISSING:
        raise HttpAdapterError(
            f"the reply of {url} has no answer at {answer_field!r} "
            f"({shape(reply)}): set answer_field= to the dotted path of the answer text"
        )
    if not isinstance(answer, str):
        raise HttpAdapterError(
            f"the reply of {url} holds {type(answer).__name__} at "
            f"{answer_field!r}, not the answer text: check answer_field="
        )
    if contexts_field is None:
        return RagAnswer(answer=answer, contexts=[])
    return RagAnswer(answer=answer,
                     contexts=_contexts(reply, url, contexts_field, context_text_field))


def _contexts(reply: Any, url: str, field: str, text_field: str | None) -> list[str]:
    found = lookup(reply, field)
    if found is _MISSING or found is None:
        return []
    if not isinstance(found, list):
        raise HttpAdapterError(
            f"the reply of {url} holds {type(found).__name__} at "
            f"{field!r}, not a list of contexts: check contexts_field="
        )
    keys = (text_field,) if text_field else CONTEXT_TEXT_KEYS
    return [_context_text(item, i, url, field, keys) for i, item in enumerate(found)]


def _context_text(item: Any, index: int, url: str, field: str, keys: tuple[str, ...]) -> str:
    if isinstance(item, str):
        return item
    for key in keys:
        text = lookup(item, key)
        if isinstance(text, str):
            return text
    raise HttpAdapterError(
        f"context {index} at {field!r} in the reply of {url} has no text "
        f"at {' or '.join(map(repr, keys))} ({shape(item)}): set context_text_field="
    )


def session_id(reply: Any, field: str) -> str | None:
    """The session id at ``field`` of a reply; None where it holds none."""
    found = lookup(reply, field)
    if found is not _MISSING and found is not None and not isinstance(found, (dict, list)):
        return str(found)
    return None
