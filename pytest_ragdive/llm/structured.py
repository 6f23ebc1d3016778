"""Structured output in the form a model's server accepts.

A structured request asks for JSON that fits a schema. Servers accept that request in
different forms, so each model gets one *mode*:

============  =====================================================  ======================
mode          what is sent                                           instructor's like mode
============  =====================================================  ======================
json_schema   ``response_format`` of type ``json_schema`` (schema)   ``Mode.JSON_SCHEMA``
json_object   ``response_format`` ``json_object``, schema in prompt  ``Mode.JSON``
tools         one forced tool call whose parameters are the schema   ``Mode.TOOLS``
text          no format at all, schema in prompt; reply parsed       ``Mode.MD_JSON``
============  =====================================================  ======================

``auto`` (the default) sends each request as its caller built it (this package's calls
and ragas' calls through instructor's ``JSON_SCHEMA`` mode alike as ``json_schema``) until
a server rejects a form; then the model moves to the next form, for every call of the run.
The schema is read from the request's data only (``response_format``), never from its
prompt, and every other form is derived from it here; where a form needs the schema in
the prompt, it is written there in this package's words (:func:`schema_text`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("pytest_ragdive")

#: the fixed modes, in the order ``auto`` tries them
MODES = ("json_schema", "json_object", "tools", "text")
STRUCTURED_OUTPUTS = ("auto", *MODES)


def check_mode(value: str, where: str) -> str:
    """``value`` if it names a structured-output setting, else a ValueError saying which do."""
    if value not in STRUCTURED_OUTPUTS:
        raise ValueError(
            f"{where}: structured_output={value!r} is not one of {', '.join(STRUCTURED_OUTPUTS)}"
        )
    return value


def request_mode(request: Mapping[str, Any]) -> str | None:
    """The mode a request is in, or None for a request that asks for no structure."""
    kind = (request.get("response_format") or {}).get("type")
    if kind in ("json_schema", "json_object"):
        return str(kind)
    if request.get("tools") and isinstance(request.get("tool_choice"), Mapping):
        return "tools"
    return None


def wants_structure(request: Mapping[str, Any]) -> bool:
    return (request.get("response_format") or {}).get("type") in ("json_schema", "json_object")


def without_logprobs(request: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k not in ("logprobs", "top_logprobs")}


#: the words that carry a schema in the prompt, followed by the schema as one line of JSON
SCHEMA_INSTRUCTION = "Reply with only a JSON object that fits this json_schema: "


def schema_text(schema: Mapping[str, Any]) -> str:
    """The instruction that carries a schema in the prompt."""
    return SCHEMA_INSTRUCTION + json.dumps(schema, ensure_ascii=False)


@dataclass(frozen=True)
class _Wanted:
    name: str
    schema: dict[str, Any]


def _wanted(request: Mapping[str, Any]) -> _Wanted | None:
    """The schema a request asks for, from its data: an OpenAI ``json_schema`` format, or a
    ``json_object`` one with a ``schema`` (llama.cpp's form, and what instructor 1.3.7's
    ``JSON_SCHEMA`` mode sends). None for a request that carries none."""
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        return _Wanted(str(spec.get("name") or "Output"), dict(spec.get("schema") or {}))
    if fmt.get("type") == "json_object" and isinstance(fmt.get("schema"), Mapping):
        schema = dict(fmt["schema"])
        return _Wanted(str(schema.get("title") or "Output"), schema)
    return None


def _with_schema(messages: list[dict[str, Any]], schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The messages with the schema instruction after the last user message's text, so that
    prompts keep the prefixes they share; unchanged when a message already holds it."""
    messages = [dict(m) for m in messages]
    instruction = schema_text(schema)
    if any(isinstance(m.get("content"), str) and instruction in m["content"] for m in messages):
        return messages
    for message in reversed(messages):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            message["content"] = f"{message['content']}\n\n{instruction}"
            return messages
    return [*messages, {"role": "user", "content": instruction}]


def readable(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with its schema also written once after the last user message, for a
    request whose schema travels as data only (ragas' calls through instructor): a small
    model fills a schema it is only constrained to, and never shown, badly."""
    wanted = _wanted(request)
    if wanted is None:
        return request
    return {**request, "messages": _with_schema(list(request.get("messages") or []),
                                                wanted.schema)}


def reshape(request: dict[str, Any], mode: str) -> dict[str, Any]:
    """``request`` (one whose schema travels as data, see :func:`_wanted`) sent in ``mode``;
    ``json_object`` and ``text`` write the schema into the prompt, once.

    A request that carries no schema is returned unchanged, except that ``text`` drops its
    ``response_format``.
    """
    wanted = _wanted(request)
    base = {k: v for k, v in request.items()
            if k not in ("response_format", "tools", "tool_choice")}
    if wanted is None:
        return base if mode == "text" else request
    messages = list(request.get("messages") or [])
    if mode == "json_schema":
        return {**base, "response_format": {
            "type": "json_schema", "json_schema": {"name": wanted.name, "schema": wanted.schema}}}
    if mode == "tools":
        function = {"name": wanted.name, "parameters": wanted.schema}
        return {**base, "tools": [{"type": "function", "function": function}],
                "tool_choice": {"type": "function", "function": {"name": wanted.name}}}
    base["messages"] = _with_schema(messages, wanted.schema)
    if mode == "json_object":
        return {**base, "response_format": {"type": "json_object"}}
    return base


@dataclass
class ServedModel:
    """What one model's server was found to accept during one run.

    ``setting`` is ``auto`` or a fixed mode. Under ``auto``, ``chosen`` is the mode taken
    after a rejection (None: requests go as their callers built them).
    """

    setting: str
    chosen: str | None = None
    rejected: set[str] = field(default_factory=set)
    logprobs: bool = True
    announced: bool = False  # the mode taken after rejections was logged
    works: set[str | None] = field(default_factory=lambda: {None})  # forms that got replies

    def mode(self) -> str | None:
        """The mode to send structured requests in (None: as built)."""
        return self.setting if self.setting != "auto" else self.chosen

    def next_mode(self, failed: str) -> str | None:
        """After ``failed`` was rejected: the mode to use now, or None when there is none
        left to try (a fixed setting never moves)."""
        if self.setting != "auto":
            return None
        self.rejected.add(failed)
        if self.chosen is not None and self.chosen not in self.rejected:
            return self.chosen  # another call already moved on
        left = [m for m in MODES if m not in self.rejected]
        self.chosen = left[0] if left else None
        return self.chosen

    def form(self, request: dict[str, Any]) -> str | None:
        """The form whose acceptance ``request`` depends on: its structured-output mode
        under ``auto``, or logprobs; None when it depends on nothing that may be rejected."""
        if wants_structure(request):
            if self.setting != "auto":
                return None
            return self.mode() or request_mode(request)
        return "logprobs" if request.get("logprobs") and self.logprobs else None

    def shape(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` in the form this server is known to take."""
        mode = self.mode() if wants_structure(request) else None
        sent = reshape(request, mode) if mode else request
        return without_logprobs(sent) if sent.get("logprobs") and not self.logprobs else sent

    def adapt(self, about: str | None, sent: dict[str, Any], model: str) -> bool:
        """After the server rejected ``sent`` for ``about`` (``"structured"``, ``"logprobs"``
        or None): whether another form may work; notes the form to use."""
        if about == "logprobs" and sent.get("logprobs") and self.logprobs:
            self.logprobs = False
            log.warning("pytest-ragdive: %s rejects logprobs; its yes/no verdicts are read "
                        "from the reply's first word from now on", model)
            return True
        mode = request_mode(sent)
        if about != "structured" or mode is None:
            return False
        return self.next_mode(mode) is not None

    def took(self, request: dict[str, Any], model: str) -> None:
        """``request`` got a reply: its form works; logged once when that form came after
        rejections of others."""
        self.works.add(self.form(request))
        if self.rejected and not self.announced and wants_structure(request):
            self.announced = True
            rejected = ", ".join(m for m in MODES if m in self.rejected)
            log.warning("pytest-ragdive: %s rejected structured output as %s and took %s, used "
                        "for its calls from now on (structured_output=%r on the Model, or ini "
                        "ragdive_structured_output = %s, skips this check)",
                        model, rejected, self.chosen, self.chosen, self.chosen)
