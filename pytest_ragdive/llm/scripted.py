"""A scripted fake model provider for testing pytest-ragdive and projects that use it.

``scripted({...})`` registers a litellm custom provider named ``fake`` and returns a
model name such as ``"fake/1"`` whose replies come from the given responders, chosen
by the name of the JSON schema the caller asked for (``GeneratedTurn``'s stage
schemas ``FirstQuestion``/``NextQuestion``, ``GroupFirstQuestion`` about a group of
documents, and
ragas' ``StatementGeneratorOutput``, ``NLIStatementOutput``,
``ContextPrecisionOutput``, ``ContextRecallOutput``), or ``YesNo`` for the yes/no
questions whose answer is read from token probabilities. A responder gets the request's
messages and returns a dict, a pydantic object or a raw string (to script a malformed
reply); a ``YesNo`` responder may return P(yes) as a float (``scripted_replies`` has the
replies of the stages a script does not name). Every call goes through litellm like a real
provider's, so tests exercise the real client, cache and ragas paths with no network.

A script can also play a server's limits: ``rejects`` names request forms the fake
server refuses (structured-output modes ``json_schema``, ``json_object``, ``tools``, and
``logprobs``), answering as a real server does (HTTP 400, 422, or 500 with a request
validation error as llama-cpp-python's server sends); a responder may raise
:func:`~.scripted_errors.http_error` to script any other failure.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import threading
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel

from .library import import_litellm
from .scripted_errors import FORMS, PROVIDER, refusal, request_form
from .scripted_replies import Responder, generic
from .structured import SCHEMA_INSTRUCTION

_scripts: dict[str, Mapping[str, Responder]] = {}
_delays: dict[str, float] = {}
_calls: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {}
_in_flight: dict[str, list[int]] = {}  # model -> [calls now, most at once]
_limits: dict[str, tuple[frozenset[str], int]] = {}  # model -> (refused forms, HTTP status)
_forms: dict[str, list[tuple[str, ...]]] = {}  # model -> forms of each request it got
_ids = itertools.count(1)
_lock = threading.Lock()


def scripted(
    responders: Mapping[str, Responder] | None = None,
    *,
    name: str | None = None,
    latency: float = 0.0,
    rejects: Collection[str] = (),
    reject_status: int = 400,
) -> str:
    """Register a script and return the model name that plays it: ``fake/<name>``.

    Give a ``name`` when the model name must be stable across processes or runs (it is
    part of cache keys and of baselines); a new script under the same name replaces
    the old one. ``latency`` makes every asynchronous call take that many seconds,
    like a remote model would (benchmarks use it). ``rejects`` lists the request forms
    (of ``FORMS``) the fake server refuses, with HTTP ``reject_status`` (400, 422 or 500).
    """
    unknown = set(rejects) - set(FORMS)
    if unknown or reject_status not in (400, 422, 500):
        raise ValueError(f"rejects takes {', '.join(FORMS)} and reject_status 400, 422 or 500")
    _install()
    name = f"{PROVIDER}/{name or next(_ids)}"
    _scripts[name] = dict(responders or {})
    _delays[name] = latency
    _calls[name] = []
    _limits[name] = (frozenset(rejects), reject_status)
    _forms[name] = []
    return name


def forms(model: str) -> list[tuple[str, ...]]:
    """The forms (of ``FORMS``; empty: plain text) of every request the fake model got,
    refused ones included."""
    return _forms[model]


def max_in_flight(model: str) -> int:
    """The most asynchronous calls the fake model ``model`` was answering at once."""
    return _in_flight.get(model, [0, 0])[1]


def in_flight(model: str) -> int:
    """How many asynchronous calls the fake model ``model`` is answering now (a responder
    may read it)."""
    return _in_flight.get(model, [0, 0])[0]


def calls(model: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(schema name, messages) of every call that reached the fake model ``model``."""
    return _calls[model]


def schema_name(kwargs: Mapping[str, Any]) -> str:
    """The name of the JSON schema a request asks for (``YesNo``: a yes/no question, with
    logprobs or in one token), read from the request's data: its ``json_schema`` format,
    the title of a ``json_object`` format's ``schema``, or its forced tool. A request in the
    ``json_object`` or ``text`` mode carries its schema only in the prompt, in this
    package's words (``structured.schema_text``), where the fake reads it as a model would."""
    params = {**(kwargs.get("optional_params") or {}), **kwargs}
    if params.get("logprobs") or params.get("max_tokens") == 1:
        return "YesNo"
    fmt = params.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return str(fmt["json_schema"]["name"])
    if isinstance(fmt, dict) and isinstance(fmt.get("schema"), dict):
        return str(fmt["schema"].get("title", "object"))
    if params.get("tools"):
        return str(params["tools"][0]["function"]["name"])
    schema = _instructed_schema(kwargs.get("messages", []))
    if schema is not None:
        return str(schema.get("title", "object"))
    return "text"


def _instructed_schema(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The schema of the package's own instruction in the prompt, if any."""
    for message in reversed(messages):
        text = message.get("content")
        at = text.rfind(SCHEMA_INSTRUCTION) if isinstance(text, str) else -1
        if at >= 0:
            try:
                schema, _ = json.JSONDecoder().raw_decode(text, at + len(SCHEMA_INSTRUCTION))
            except json.JSONDecodeError:
                continue
            return dict(schema) if isinstance(schema, dict) else None
    return None


#: a responder's reply that makes the fake provider answer HTTP 200 with no choices
NO_CHOICES = "<no choices>"


def _reply(model: str, kwargs: Mapping[str, Any]) -> tuple[str, float | None]:
    """The scripted reply's text, and P(yes) when the responder gave a probability."""
    script = _scripts.get(model)
    if script is None:
        raise KeyError(f"no script for fake model {model!r}")
    schema = schema_name(kwargs)
    messages = list(kwargs.get("messages", []))
    with _lock:
        _calls[model].append((schema, messages))
        _forms[model].append(tuple(request_form(kwargs)))
    refused = refusal(model, kwargs, *_limits.get(model, (frozenset(), 400)))
    if refused is not None:
        raise refused
    responder = script.get(schema) or generic(schema)
    reply = responder(messages)
    if isinstance(reply, float):
        return ("yes" if reply >= 0.5 else "no"), reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json(), None
    if isinstance(reply, str):
        return reply, None
    return json.dumps(reply), None


def _logprobs(p_yes: float) -> dict[str, Any]:
    entries = [{"token": word, "logprob": math.log(max(p, 1e-9)), "bytes": None}
               for word, p in sorted({"yes": p_yes, "no": 1 - p_yes}.items(),
                                     key=lambda item: -item[1])]
    return {"content": [{**entries[0], "top_logprobs": entries}]}


_installed = False


def _install() -> None:
    global _installed
    if _installed:
        return
    litellm = import_litellm()

    class ScriptedLLM(litellm.CustomLLM):  # type: ignore[misc,name-defined]
        def _respond(self, model: str, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> Any:
            name = model if model.startswith(f"{PROVIDER}/") else f"{PROVIDER}/{model}"
            text, p_yes = _reply(name, {**kwargs, "messages": messages})
            prompt = sum(len(str(m.get("content", "")).split()) for m in messages)
            params = {**(kwargs.get("optional_params") or {}), **kwargs}
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if params.get("tools"):  # a forced tool call carries the reply
                function = {"name": params["tools"][0]["function"]["name"], "arguments": text}
                message = {"role": "assistant", "content": None,
                           "tool_calls": [{"id": "call_1", "type": "function",
                                           "function": function}]}
            choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "message": message}
            if p_yes is not None and params.get("logprobs"):
                choice["logprobs"] = _logprobs(p_yes)
            response = litellm.ModelResponse(
                model=name,
                choices=[choice],
                usage={"prompt_tokens": prompt, "completion_tokens": len(text.split()),
                       "total_tokens": prompt + len(text.split())},
            )
            if text == NO_CHOICES:
                response.choices = []
            return response

        def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            return self._respond(model, messages, kwargs)

        async def acompletion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            name = model if model.startswith(f"{PROVIDER}/") else f"{PROVIDER}/{model}"
            counts = _in_flight.setdefault(name, [0, 0])
            counts[0] += 1
            counts[1] = max(counts)
            try:
                if _delays.get(name):
                    await asyncio.sleep(_delays[name])
                return self._respond(model, messages, kwargs)
            finally:
                counts[0] -= 1

    litellm.custom_provider_map = [
        *[p for p in litellm.custom_provider_map if p.get("provider") != PROVIDER],
        {"provider": PROVIDER, "custom_handler": ScriptedLLM()},
    ]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    _installed = True
