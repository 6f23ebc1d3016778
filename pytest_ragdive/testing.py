"""A scripted fake model provider for testing pytest-ragdive and projects that use it.

``scripted({...})`` registers a litellm custom provider named ``fake`` and returns a
model name such as ``"fake/1"`` whose replies come from the given responders, chosen
by the name of the JSON schema the caller asked for (``GeneratedTurn``'s stage
schemas ``FirstQuestion``/``NextQuestion``, ``Checklist``, ``Ruling``, and
ragas' ``StatementGeneratorOutput``, ``NLIStatementOutput``,
``ContextPrecisionOutput``, ``ContextRecallOutput``). A responder gets the request's
messages and returns a dict, a pydantic object or a raw string (to script a malformed
reply). Every call goes through litellm like a real provider's, so tests exercise the
real client, cache and ragas paths with no network.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from .embedded import schema_from_messages
from .llm import import_litellm

Responder = Callable[[list[dict[str, Any]]], Any]
PROVIDER = "fake"

_scripts: dict[str, Mapping[str, Responder]] = {}
_delays: dict[str, float] = {}
_calls: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {}
_ids = itertools.count(1)
_lock = threading.Lock()


def _generic(schema: str) -> Responder:
    """Plausible replies for every stage, so a script only names what it varies."""
    replies: dict[str, Any] = {
        "FirstQuestion": {"question": "What is the topic?", "ground_truth": "The topic."},
        "NextQuestion": {
            "rag_input": "And what else about it?",
            "standalone_question": "What else is there about the topic?",
            "ground_truth": "More about the topic.",
            "question_type": "follow_up",
        },
        "Checklist": {"refers_back": True, "standalone": True, "same_meaning": True,
                      "answer_supported": True, "type_fits": True,
                      "reads_naturally": True, "feedback": ""},
        "Ruling": {"reason": "fine", "verdict": 1},
        "StatementGeneratorOutput": {"statements": ["The answer makes one claim."]},
        "NLIStatementOutput": {
            "statements": [
                {"statement": "The answer makes one claim.", "reason": "supported", "verdict": 1}
            ]
        },
        "ContextPrecisionOutput": {"reason": "useful", "verdict": 1},
        "ContextRecallOutput": {
            "classifications": [
                {"statement": "The reference.", "reason": "in context", "attributed": 1}
            ]
        },
    }
    return lambda messages: replies[schema]


def scripted(
    responders: Mapping[str, Responder] | None = None,
    *,
    name: str | None = None,
    latency: float = 0.0,
) -> str:
    """Register a script and return the model name that plays it: ``fake/<name>``.

    Give a ``name`` when the model name must be stable across processes or runs (it is
    part of cache keys and of baselines); a new script under the same name replaces
    the old one. ``latency`` makes every asynchronous call take that many seconds,
    like a remote model would (benchmarks use it).
    """
    _install()
    name = f"{PROVIDER}/{name or next(_ids)}"
    _scripts[name] = dict(responders or {})
    _delays[name] = latency
    _calls[name] = []
    return name


def calls(model: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(schema name, messages) of every call that reached the fake model ``model``."""
    return _calls[model]


def schema_name(kwargs: Mapping[str, Any]) -> str:
    """The name of the JSON schema a request asks for."""
    fmt = kwargs.get("response_format") or (kwargs.get("optional_params") or {}).get(
        "response_format"
    )
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return str(fmt["json_schema"]["name"])
    schema = schema_from_messages(kwargs.get("messages", []))
    if schema is not None:
        return str(schema.get("title", "object"))
    return "text"


def _reply(model: str, kwargs: Mapping[str, Any]) -> str:
    script = _scripts.get(model)
    if script is None:
        raise KeyError(f"no script for fake model {model!r}")
    schema = schema_name(kwargs)
    messages = list(kwargs.get("messages", []))
    with _lock:
        _calls[model].append((schema, messages))
    responder = script.get(schema) or _generic(schema)
    reply = responder(messages)
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    if isinstance(reply, str):
        return reply
    return json.dumps(reply)


_installed = False


def _install() -> None:
    global _installed
    if _installed:
        return
    litellm = import_litellm()

    class ScriptedLLM(litellm.CustomLLM):  # type: ignore[misc,name-defined]
        def _respond(self, model: str, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> Any:
            name = model if model.startswith(f"{PROVIDER}/") else f"{PROVIDER}/{model}"
            text = _reply(name, {**kwargs, "messages": messages})
            prompt = sum(len(str(m.get("content", "")).split()) for m in messages)
            return litellm.ModelResponse(
                model=name,
                choices=[{"index": 0, "finish_reason": "stop",
                          "message": {"role": "assistant", "content": text}}],
                usage={"prompt_tokens": prompt, "completion_tokens": len(text.split()),
                       "total_tokens": prompt + len(text.split())},
            )

        def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            return self._respond(model, messages, kwargs)

        async def acompletion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
            name = model if model.startswith(f"{PROVIDER}/") else f"{PROVIDER}/{model}"
            if _delays.get(name):
                await asyncio.sleep(_delays[name])
            return self._respond(model, messages, kwargs)

    litellm.custom_provider_map = [
        *[p for p in litellm.custom_provider_map if p.get("provider") != PROVIDER],
        {"provider": PROVIDER, "custom_handler": ScriptedLLM()},
    ]
    from litellm.utils import custom_llm_setup

    custom_llm_setup()
    _installed = True
