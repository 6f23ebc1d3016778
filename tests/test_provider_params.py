"""What reaches each provider. The HTTP request litellm builds from the client's request,
caught by a mocked transport (no network), holds no parameter that litellm's table says
the provider refuses; yes/no verdicts come from token probabilities where the provider
returns them and from the reply's first word where it does not. The plugin's own providers
and served models get the request as built, byte for byte, and no cache key changes."""

from __future__ import annotations

import asyncio
import json
import math
import socket
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from pytest_ragdive.llm import provider_params, providers
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.library import import_litellm
from pytest_ragdive.llm.model import Model
from pytest_ragdive.llm.provider_params import fitted, refused
from pytest_ragdive.llm.structured import schema_text

# litellm builds some pydantic models on first use, each warning about its own typing
pytestmark = pytest.mark.filterwarnings("ignore:.*ReadOnly:UserWarning")

ASK = [{"role": "user", "content": "Does the reply answer the question? yes or no"}]
#: P(yes) of the OpenAI-shaped replies' first token: Yes at -0.2, No at -1.8
P_YES = 1 / (1 + math.exp(-1.6))
_TOP = [{"token": "Yes", "logprob": -0.2, "bytes": None},
        {"token": "No", "logprob": -1.8, "bytes": None}]
LOGPROBS = {"content": [{**_TOP[0], "top_logprobs": _TOP}]}


class Verdict(BaseModel):
    tall: bool


Reply = Callable[[str, dict[str, Any] | None], dict[str, Any]]


def openai_reply(text: str, tool: dict[str, Any] | None) -> dict[str, Any]:
    choice = {"index": 0, "finish_reason": "stop", "logprobs": LOGPROBS,
              "message": {"role": "assistant", "content": json.dumps(tool) if tool else text}}
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [choice],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}}


def anthropic_reply(text: str, tool: dict[str, Any] | None) -> dict[str, Any]:
    block = ({"type": "tool_use", "id": "toolu_1", "name": "json_tool_call", "input": tool}
             if tool else {"type": "text", "text": text})
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [block], "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1}}


def gemini_reply(text: str, tool: dict[str, Any] | None) -> dict[str, Any]:
    return {"candidates": [{"content": {"parts": [{"text": json.dumps(tool) if tool else text}],
                                        "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 1,
                              "totalTokenCount": 10}}


def bedrock_reply(text: str, tool: dict[str, Any] | None) -> dict[str, Any]:
    block = ({"toolUse": {"toolUseId": "t1", "name": "json_tool_call", "input": tool}}
             if tool else {"text": text})
    return {"output": {"message": {"role": "assistant", "content": [block]}},
            "stopReason": "tool_use" if tool else "end_turn", "metrics": {"latencyMs": 10},
            "usage": {"inputTokens": 9, "outputTokens": 1, "totalTokens": 10}}


def ollama_reply(text: str, tool: dict[str, Any] | None) -> dict[str, Any]:
    return {"model": "llama3.1", "created_at": "2024-01-01T00:00:00Z",
            "response": json.dumps(tool) if tool else text, "done": True,
            "done_reason": "stop", "prompt_eval_count": 9, "eval_count": 1}


_AWS = {"AWS_ACCESS_KEY_ID": "dummy-id", "AWS_SECRET_ACCESS_KEY": "dummy-secret",
        "AWS_REGION_NAME": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
_AZURE = {"AZURE_API_KEY": "dummy-azure", "AZURE_API_VERSION": "2024-10-21",
          "AZURE_API_BASE": "https://dummy.openai.azure.com"}
#: name: (model, dummy environment, reply in the provider's wire format, where the HTTP body
#: holds the sampling parameters, whether it takes seed, whether it takes logprobs)
PROVIDERS: dict[str, tuple[Model, dict[str, str], Reply, str, bool, bool]] = {
    "openai": (Model("openai/gpt-4o-mini"), {"OPENAI_API_KEY": "dummy-openai"},
               openai_reply, "", True, True),
    "azure": (Model("azure/my-gpt-4o-mini"), _AZURE, openai_reply, "", True, True),
    "anthropic": (Model("anthropic/claude-3-5-haiku-20241022"),
                  {"ANTHROPIC_API_KEY": "dummy-anthropic"}, anthropic_reply, "", False, False),
    "gemini": (Model("gemini/gemini-2.0-flash"), {"GEMINI_API_KEY": "dummy-gemini"},
               gemini_reply, "generationConfig", True, False),
    "bedrock": (Model("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"), _AWS,
                bedrock_reply, "inferenceConfig", False, False),
    "ollama": (Model("ollama/llama3.1"), {}, ollama_reply, "options", True, False),
    "server": (Model("openai/my-model", {"api_base": "http://localhost:8000/v1"}),
               {"OPENAI_API_KEY": "dummy-server"}, openai_reply, "", True, True),
}
#: the names a provider's HTTP body gives the logprobs parameters (Gemini: responseLogprobs
#: and logprobs)
LOGPROB_NAMES = {"logprobs", "top_logprobs", "responseLogprobs"}


def _offline(monkeypatch: pytest.MonkeyPatch, reply: Callable[[httpx.Request], dict[str, Any]]
             ) -> list[httpx.Request]:
    """The HTTP requests litellm sends from now on, each answered by a mocked transport with
    ``reply(request)``; a socket that tries to reach anything fails the test."""
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=reply(request))

    def offline(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a test of provider requests reached for the network")

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    monkeypatch.setattr(socket.socket, "connect", offline)
    monkeypatch.setattr(httpx.AsyncClient, "_transport_for_url",
                        lambda self, url: httpx.MockTransport(answer))
    return sent


def _client(tmp_path: Path) -> LLMClient:
    return LLMClient(ResponseCache(tmp_path / "cache", "new"), retries=0)


def _sampling(request: httpx.Request, where: str) -> dict[str, Any]:
    body = json.loads(request.content)
    return body.get(where, {}) if where else body


def _yes_no(model: Model) -> dict[str, Any]:
    """The request the client builds for a yes/no question (its cache key)."""
    return {"model": model.name, "messages": ASK, "temperature": 0.0, "seed": 0,
            "max_tokens": 1, "logprobs": True, "top_logprobs": 20,
            **({"server": model.server_id} if model.server_id else {})}


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_yes_no_question_sends_only_what_the_provider_takes(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, env, reply, where, seed, logprobs = PROVIDERS[name]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    sent = _offline(monkeypatch, lambda request: reply("Yes", None))
    client = _client(tmp_path)
    p_yes = asyncio.run(client.yes_probability(model, ASK))
    assert len(sent) == 1, "one request, and none refused before it"
    sampling = _sampling(sent[0], where)
    assert ("seed" in sampling) is seed, sampling
    assert bool(LOGPROB_NAMES & set(sampling)) is logprobs, sampling
    # from the first token's probabilities where they come back, else from the first word
    assert p_yes == pytest.approx(P_YES if logprobs else 1.0)
    assert client.cache.contains(_yes_no(model)), "the cache key is the request as built"


@pytest.mark.parametrize("name", ["anthropic", "bedrock", "openai", "gemini", "ollama"])
def test_a_structured_request_sends_only_what_the_provider_takes(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, env, reply, where, seed, _ = PROVIDERS[name]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    sent = _offline(monkeypatch, lambda request: reply("", {"tall": True}))
    verdict = asyncio.run(_client(tmp_path).structured(model, ASK, Verdict))
    assert verdict == Verdict(tall=True) and len(sent) == 1
    assert ("seed" in _sampling(sent[0], where)) is seed


@pytest.fixture
def litellm_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The keyword arguments of every ``litellm.acompletion`` call, each answered "Yes"
    (with the first token's alternatives when asked for); no provider is registered or run."""
    litellm = import_litellm()
    calls: list[dict[str, Any]] = []

    async def acompletion(**kwargs: Any) -> Any:
        calls.append(kwargs)
        top = [SimpleNamespace(token=t["token"], logprob=t["logprob"]) for t in _TOP]
        choice = SimpleNamespace(
            message=SimpleNamespace(content='{"tall": true}' if "response_format" in kwargs
                                    else "Yes", tool_calls=None),
            logprobs=SimpleNamespace(content=[SimpleNamespace(top_logprobs=top)])
            if kwargs.get("logprobs") else None)
        return SimpleNamespace(choices=[choice], usage=None)

    monkeypatch.setattr(litellm, "acompletion", acompletion)
    monkeypatch.setattr(providers, "ensure_registered", lambda model: None)
    return calls


@pytest.mark.parametrize("model", [
    Model("embedded/qwen2.5-coder-1.5b"),
    Model("fake/judge"),
    Model("openai/my-model", {"api_base": "http://localhost:8000/v1"}),
    Model("anthropic/claude-3-5-haiku-20241022", {"api_base": "http://localhost:8000/v1"}),
], ids=["embedded", "fake", "server", "anthropic-behind-a-server"])
def test_the_plugins_own_providers_and_servers_get_the_request_as_built(
        model: Model, tmp_path: Path, litellm_calls: list[dict[str, Any]]) -> None:
    client = _client(tmp_path)
    asyncio.run(client.yes_probability(model, ASK))
    asyncio.run(client.structured(model, ASK, Verdict))
    asyncio.run(client.complete(model, ASK))
    as_built = [  # the requests the client built before provider_params existed
        {"model": model.name, "messages": ASK, "temperature": 0.0, "seed": 0, "max_tokens": 1,
         "logprobs": True, "top_logprobs": 20},
        {"model": model.name, "messages": ASK, "temperature": 0.0, "seed": 0,
         "response_format": {"type": "json_schema", "json_schema": {
             "name": "Verdict", "schema": Verdict.model_json_schema()}}},
        {"model": model.name, "messages": ASK, "temperature": 0.0, "seed": 0},
    ]
    expected = [{**request, **model.params, "timeout": client.timeout} for request in as_built]
    assert [json.dumps(c) for c in litellm_calls] == [json.dumps(e) for e in expected]
    server = {"server": model.server_id} if model.server_id else {}
    assert all(client.cache.contains({**request, **server}) for request in as_built)


def test_what_the_table_refuses_is_left_out_of_what_is_sent_only(
        tmp_path: Path, litellm_calls: list[dict[str, Any]], caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_params, "_told", set())
    model = Model("anthropic/claude-3-5-haiku-20241022")
    client = _client(tmp_path)
    with caplog.at_level("INFO", logger="pytest_ragdive"):
        assert asyncio.run(client.yes_probability(model, ASK)) == 1.0  # the word, not 0.83
        asyncio.run(client.yes_probability(model, [*ASK, *ASK]))
    assert litellm_calls[0] == {"model": model.name, "messages": ASK, "temperature": 0.0,
                                "max_tokens": 1, "timeout": client.timeout}
    assert client.cache.contains(_yes_no(model))
    told = [r.getMessage() for r in caplog.records if model.name in r.getMessage()]
    assert len(told) == 1 and "without seed, logprobs" in told[0] and "first word" in told[0]


def test_the_table_decides_per_provider() -> None:
    assert refused(Model("openai/gpt-4o-mini")) == set()
    anthropic = Model("anthropic/claude-3-5-haiku-20241022")
    assert {"seed", "logprobs", "top_logprobs"} <= refused(anthropic)
    # Gemini takes logprobs but not top_logprobs: without alternatives there is no P(no)
    assert {"logprobs", "top_logprobs"} <= refused(Model("gemini/gemini-2.0-flash"))
    assert "seed" not in refused(Model("gemini/gemini-2.0-flash"))
    for unknown in ("nosuch/model", "embedded/qwen2.5-coder-1.5b", "fake/1"):
        request = _yes_no(Model(unknown))
        assert refused(Model(unknown)) == set() and fitted(request, Model(unknown)) is request


def test_a_refused_response_format_goes_as_a_forced_tool_or_as_text(
        monkeypatch: pytest.MonkeyPatch) -> None:
    schema = Verdict.model_json_schema()
    request = {"model": "cohere/command-r", "messages": ASK, "temperature": 0.0, "seed": 0,
               "response_format": {"type": "json_schema",
                                   "json_schema": {"name": "Verdict", "schema": schema}}}
    tool = fitted(request, Model("cohere/command-r"))  # cohere takes tools, no response_format
    assert "response_format" not in tool and tool["tool_choice"]["function"]["name"] == "Verdict"
    monkeypatch.setattr(provider_params, "_refused",
                        lambda name, provider: frozenset({"response_format", "tools"}))
    text = fitted(request, Model("cohere/command-r"))
    assert "response_format" not in text and "tools" not in text
    assert text["messages"][-1]["content"].endswith(schema_text(schema))
