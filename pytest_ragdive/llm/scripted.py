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

A script can also play a server's limits: ``rejects`` names request forms the fake
server refuses (structured-output modes ``json_schema``, ``json_object``, ``tools``, and
``logprobs``), answering as a real server does (HTTP 400, 422, or 500 with a request
validation error as llama-cpp-python's server sends); a responder may raise
:func:`http_error` to script any other failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .embedded import runtime, weights
from .embedded.grammar import schema_from_messages
from .library import import_litellm

Responder = Callable[[list[dict[str, Any]]], Any]
PROVIDER = "fake"

_scripts: dict[str, Mapping[str, Responder]] = {}
_delays: dict[str, float] = {}
_calls: dict[str, list[tuple[str, list[dict[str, Any]]]]] = {}
_in_flight: dict[str, list[int]] = {}  # model -> [calls now, most at once]
_limits: dict[str, tuple[frozenset[str], int]] = {}  # model -> (refused forms, HTTP status)
_forms: dict[str, list[tuple[str, ...]]] = {}  # model -> forms of each request it got
FORMS = ("json_schema", "json_object", "tools", "logprobs")
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


def http_error(status: int, message: str, model: str = f"{PROVIDER}/model",
               headers: Mapping[str, str] | None = None) -> Exception:
    """The litellm exception a real provider raises for an HTTP ``status`` answer (with
    ``headers``, such as Retry-After); a responder raises it to script a server's failure.
    A 400 about the context length becomes ``ContextWindowExceededError``, as litellm
    maps it."""
    litellm = import_litellm()
    import httpx

    response = httpx.Response(status, headers=dict(headers or {}),
                              request=httpx.Request("POST", "http://fake/v1/chat"))
    common = {"message": message, "model": model, "llm_provider": PROVIDER}
    if status == 400 and re.search(r"context (length|window)", message, re.IGNORECASE):
        return litellm.ContextWindowExceededError(**common)
    kinds: dict[int, Any] = {
        400: litellm.BadRequestError, 401: litellm.AuthenticationError,
        404: litellm.NotFoundError, 408: litellm.Timeout, 429: litellm.RateLimitError,
        500: litellm.InternalServerError, 503: litellm.ServiceUnavailableError,
    }
    if status in (403, 422):
        kind = litellm.PermissionDeniedError if status == 403 else litellm.UnprocessableEntityError
        return kind(**common, response=response)  # type: ignore[no-any-return]
    if status == 429:
        return litellm.RateLimitError(**common, response=response)  # type: ignore[no-any-return]
    if status in kinds:
        return kinds[status](**common)  # type: ignore[no-any-return]
    return litellm.APIError(status_code=status, **common)  # type: ignore[no-any-return]


def request_form(kwargs: Mapping[str, Any]) -> list[str]:
    """The forms of ``FORMS`` a request uses."""
    params = {**(kwargs.get("optional_params") or {}), **kwargs}
    kind = (params.get("response_format") or {}).get("type")
    forms = [kind] if kind in ("json_schema", "json_object") else []
    if params.get("tools"):
        forms.append("tools")
    if params.get("logprobs"):
        forms.append("logprobs")
    return forms


def _refusal(model: str, kwargs: Mapping[str, Any]) -> Exception | None:
    """The error the fake server answers a request with that uses a form it refuses."""
    refused, status = _limits.get(model, (frozenset(), 400))
    form = next((f for f in request_form(kwargs) if f in refused), None)
    if form is None:
        return None
    field = {"json_schema": "response_format.type", "json_object": "response_format.type",
             "tools": "tools", "logprobs": "logprobs"}[form]
    if status == 500 and form == "logprobs":  # llama-cpp-python's server, --logits_all false
        message = "logprobs is not supported for models created with logits_all=False"
    elif status == 500:  # llama-cpp-python's server: FastAPI's validation error, as a 500
        message = (f"1 validation error:\n  {{'type': 'value_error', 'loc': ('body', "
                   f"{', '.join(repr(p) for p in field.split('.'))}), 'msg': 'Input should "
                   f"not be {form!r}'}}\n\n  File \"app.py\", line 1, in create_chat_completion")
    else:
        message = f"Invalid value for '{field}': {form!r} is not supported by this server."
    return http_error(status, message, model)


def max_in_flight(model: str) -> int:
    """The most asynchronous calls the fake model ``model`` was answering at once."""
    return _in_flight.get(model, [0, 0])[1]


def calls(model: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(schema name, messages) of every call that reached the fake model ``model``."""
    return _calls[model]


def schema_name(kwargs: Mapping[str, Any]) -> str:
    """The name of the JSON schema a request asks for (``YesNo``: a yes/no question, with
    logprobs or in one token)."""
    params = {**(kwargs.get("optional_params") or {}), **kwargs}
    if params.get("logprobs") or params.get("max_tokens") == 1:
        return "YesNo"
    fmt = params.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return str(fmt["json_schema"]["name"])
    if params.get("tools"):
        return str(params["tools"][0]["function"]["name"])
    schema = schema_from_messages(kwargs.get("messages", []))
    if schema is not None:
        return str(schema.get("title", "object"))
    return "text"


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
    refusal = _refusal(model, kwargs)
    if refusal is not None:
        raise refusal
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


# ------------------------------------------------------------------ a real served model


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def embedded_server(args: Sequence[str] = (), *, ready_within: float = 180.0) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server running the embedded model on a free
    loopback port while the context lasts; yields its base URL (``http://127.0.0.1:N/v1``)
    for ``Model("openai/<any name>", {"api_base": url, "api_key": "<any>"})``.

    Needs ``pytest-ragdive[embedded]``, which brings llama-cpp-python's ``server`` extra.
    ``args`` are more server options (``python -m llama_cpp.server --help``).
    """
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(weights.model_path()),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(runtime.N_CTX),
               *args]
    # OpenMP threads that sleep while they wait: the server shares the cores with the test run
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    with tempfile.TemporaryDirectory(prefix="ragdive-server-") as folder:
        log = Path(folder) / "server.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_until_ready(url, process, log, ready_within)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_ready(url: str, process: subprocess.Popen[bytes], log: Path, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the model server exited with {process.returncode}: "
                               f"{log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the model server did not answer within {limit:g} s: "
                       f"{log.read_text(errors='replace')[-2000:]}")
