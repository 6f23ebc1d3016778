"""A scripted fake model provider for testing pytest-ragdive and projects that use it.

``scripted({...})`` registers a litellm custom provider named ``fake`` and returns a
model name such as ``"fake/1"`` whose replies come from the given responders, chosen
by the name of the JSON schema the caller asked for (``GeneratedTurn``'s stage
schemas ``FirstQuestion``/``NextQuestion``, and
ragas' ``StatementGeneratorOutput``, ``NLIStatementOutput``,
``ContextPrecisionOutput``, ``ContextRecallOutput``), or ``YesNo`` for the yes/no
questions whose answer is read from token probabilities. A responder gets the request's
messages and returns a dict, a pydantic object or a raw string (to script a malformed
reply); a ``YesNo`` responder may return P(yes) as a float. Every call goes through litellm like a real provider's, so tests exercise the
real client, cache and ragas paths with no network.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from .client import import_litellm
from .embedded.grammar import schema_from_messages

Responder = Callable[[list[dict[str, Any]]], Any]
PROVIDER = "fake"

_scripts: dict[str, Mapping[str, Responder]] = {}
_delays: dict[str, float] = {}
_calls: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {}
_in_flight: dict[str, list[int]] = {}  # model -> [calls now, most at once]
_ids = itertools.count(1)
_lock = threading.Lock()


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth", "eleventh", "twelfth")


def source_of(messages: list[dict[str, Any]]) -> str:
    """The source document inside a generator or validator prompt."""
    text = str(messages[-1].get("content", "")) if messages else ""
    match = re.search(r"<source>\n?(.*?)\n?</source>", text, re.DOTALL)
    return match.group(1) if match else ""


def first_sentence(messages: list[dict[str, Any]]) -> str:
    """The source's first sentence: evidence that the exact checks accept."""
    return re.split(r"(?<=[.!?])\s", source_of(messages).strip(), maxsplit=1)[0]


def turn_number(messages: list[dict[str, Any]]) -> int:
    match = re.search(r"Write turn (\d+)", str(messages[-1].get("content", "")))
    return int(match.group(1)) if match else 1


def _generic(schema: str) -> Responder:
    """Plausible replies for every stage, so a script only names what it varies. Generated
    turns pass the exact checks: evidence quoted from the source, a follow-up that refers
    back ("And the third fact about it?") and asks something new each turn."""
    replies: dict[str, Any] = {
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
    if schema == "FirstQuestion":
        return lambda messages: {"question": "What is the topic?",
                                 "evidence": first_sentence(messages),
                                 "ground_truth": "The topic."}
    if schema == "NextQuestion":
        def next_question(messages: list[dict[str, Any]]) -> dict[str, Any]:
            nth = ORDINALS[turn_number(messages) - 1]
            return {"standalone_question": f"What is the {nth} fact about the topic?",
                    "rag_input": f"And the {nth} fact about it?",
                    "evidence": first_sentence(messages),
                    "ground_truth": f"The {nth} fact.", "question_type": "follow_up"}
        return next_question
    if schema == "YesNo":
        return lambda messages: 0.9
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


def max_in_flight(model: str) -> int:
    """The most asynchronous calls the fake model ``model`` was answering at once."""
    return _in_flight.get(model, [0, 0])[1]


def calls(model: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(schema name, messages) of every call that reached the fake model ``model``."""
    return _calls[model]


def schema_name(kwargs: Mapping[str, Any]) -> str:
    """The name of the JSON schema a request asks for (``YesNo``: a yes/no question)."""
    if kwargs.get("logprobs") or (kwargs.get("optional_params") or {}).get("logprobs"):
        return "YesNo"
    fmt = kwargs.get("response_format") or (kwargs.get("optional_params") or {}).get(
        "response_format"
    )
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return str(fmt["json_schema"]["name"])
    schema = schema_from_messages(kwargs.get("messages", []))
    if schema is not None:
        return str(schema.get("title", "object"))
    return "text"


def _reply(model: str, kwargs: Mapping[str, Any]) -> tuple[str, float | None]:
    """The scripted reply's text, and P(yes) when the responder gave a probability."""
    script = _scripts.get(model)
    if script is None:
        raise KeyError(f"no script for fake model {model!r}")
    schema = schema_name(kwargs)
    messages = list(kwargs.get("messages", []))
    with _lock:
        _calls[model].append((schema, messages))
    responder = script.get(schema) or _generic(schema)
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
            choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}
            if p_yes is not None:
                choice["logprobs"] = _logprobs(p_yes)
            return litellm.ModelResponse(
                model=name,
                choices=[choice],
                usage={"prompt_tokens": prompt, "completion_tokens": len(text.split()),
                       "total_tokens": prompt + len(text.split())},
            )

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
