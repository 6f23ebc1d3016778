"""The HttpAdapter's request body: a template whose placeholders ``"{question}"``,
``"{history}"``, ``"{messages}"`` and ``"{session}"`` are filled in (see :class:`HttpAdapter`),
or a function that builds it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..engine.base.models import Message

#: Builds the JSON body from the question, the visible history and the session id (None
#: outside sessions, and on a session's first request unless ``session_id`` made one).
RequestBuilder = Callable[[str, list[Message], str | None], Any]

#: the value of ``"{session}"`` while there is no session id: its key or item is left out
_OMIT = object()
_LIST_PLACEHOLDERS = ("{history}", "{messages}")


def build(request: Mapping[str, Any] | RequestBuilder, question: str,
          history: Sequence[Message], session: str | None) -> Any:
    """The body ``request`` (a template or a function) makes for ``question``."""
    if callable(request):
        return request(question, list(history), session)
    past = [{"role": m.role, "content": m.content} for m in history]
    values = {
        "{question}": question,
        "{history}": past,
        "{messages}": [*past, {"role": "user", "content": question}],
        "{session}": _OMIT if session is None else session,
    }
    return _fill(request, values)


def _fill(node: Any, values: Mapping[str, Any]) -> Any:
    """The template ``node`` with its placeholders replaced."""
    if isinstance(node, str):
        if node in values:
            return values[node]
        for name in ("{question}", "{session}"):
            if name in node:
                value = values[name]
                node = node.replace(name, "" if value is _OMIT else str(value))
        return node
    if isinstance(node, Mapping):
        filled = {key: _fill(value, values) for key, value in node.items()}
        return {key: value for key, value in filled.items() if value is not _OMIT}
    if isinstance(node, (list, tuple)):
        out: list[Any] = []
        for item in node:
            if isinstance(item, str) and item in _LIST_PLACEHOLDERS:
                out.extend(values[item])
                continue
            value = _fill(item, values)
            if value is not _OMIT:
                out.append(value)
        return out
    return node


def mentions(node: Any, placeholder: str) -> bool:
    """Whether the template ``node`` holds ``placeholder`` anywhere."""
    if isinstance(node, str):
        return placeholder in node
    if isinstance(node, Mapping):
        return any(mentions(v, placeholder) for v in node.values())
    if isinstance(node, (list, tuple)):
        return any(mentions(v, placeholder) for v in node)
    return False
