"""Models behind a server: structured output that adapts to what the server takes, and
requests the server rejects as invalid, which fail at once with its message and the fix.
Every server here is the scripted fake provider, playing one server's limits per test."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import PROJECT_CONFTEST
from pydantic import BaseModel

import pytest_ragdive as ragdive
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.errors import ModelError
from pytest_ragdive.llm.model import Model
from pytest_ragdive.llm.scripted import forms, scripted
from pytest_ragdive.llm.scripted_errors import http_error
from pytest_ragdive.llm.secrets import mask
from pytest_ragdive.llm.structured import (
    readable,
    reshape,
    schema_text,
)

DOC = ragdive.Document(id="tower", text="The Alder Tower is 120 m tall. It opened in 1931.")
ASK = [{"role": "user", "content": "Is the tower tall?"}]
SIX = ("correctness", "faithfulness", "context_precision", "context_recall", "forgetfulness",
       "context_retention")


class Verdict(BaseModel):
    tall: bool


class Bot:
    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        return ragdive.RagAnswer(answer=f"It is 120 m. ({question})", contexts=[DOC.text])


def client(tmp_path: Path, mode: str = "new", **options: Any) -> LLMClient:
    return LLMClient(ResponseCache(tmp_path / "cache", mode), **options)  # type: ignore[arg-type]


def dialogue(model: str | Model, tmp_path: Path, **options: Any) -> ragdive.Dialogue:
    options.setdefault("client", client(tmp_path))
    return ragdive.run_dialogue(DOC, Bot(), judges=ragdive.Judges(model), turns=2,
                                validation="once", **options)


def fallbacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "rejected structured output" in
            r.getMessage() or "rejects logprobs" in r.getMessage()]


def structured_forms(model: str) -> Counter[tuple[str, ...]]:
    return Counter(f for f in forms(model) if "logprobs" not in f)


# ------------------------------------------------------------------------ request shapes


def test_each_mode_shapes_our_request_and_instructors_alike() -> None:
    schema = Verdict.model_json_schema()
    asked = [{"role": "user", "content": f"Is the tower tall?\n\n{schema_text(schema)}"}]
    ours = {"model": "m", "messages": ASK, "response_format": {
        "type": "json_schema", "json_schema": {"name": "Verdict", "schema": schema}}}
    # instructor 1.3.7's JSON_SCHEMA mode: json_object with the schema as data
    older = {"model": "m", "messages": ASK,
             "response_format": {"type": "json_object", "schema": schema}}
    assert reshape(ours, "json_schema") == ours  # the default keeps its cache key
    # ours, instructor's of 1.3.7, and ragas' calls as stand_in sends them
    for request in (ours, older, readable(ours)):
        as_tools = reshape(request, "tools")
        assert as_tools["tools"][0]["function"] == {"name": "Verdict", "parameters": schema}
        assert as_tools["tool_choice"]["function"]["name"] == "Verdict"
        assert "response_format" not in as_tools
        assert reshape(request, "json_object")["response_format"] == {"type": "json_object"}
        assert reshape(request, "json_schema")["response_format"]["json_schema"]["schema"] \
            == schema
        as_text = reshape(request, "text")
        assert "response_format" not in as_text and "tools" not in as_text
        # the schema travels in the prompt, once, after the prompt: prompts keep the prefix
        # they share
        for mode in ("json_object", "text"):
            assert reshape(request, mode)["messages"] == asked
    # a schema is read from the request's data only, never from its prompt
    bare = {"model": "m", "messages": asked, "response_format": {"type": "json_object"}}
    assert readable(bare) == bare
    for mode in ("json_schema", "json_object", "tools"):
        assert reshape(bare, mode) == bare


def test_readable_writes_a_schema_that_travels_as_data_into_the_prompt_once() -> None:
    schema = Verdict.model_json_schema()
    ours = {"model": "m", "messages": [{"role": "system", "content": "You judge."}, *ASK],
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": "Verdict", "schema": schema}}}
    shown = readable(ours)
    assert shown == {**ours, "messages": [
        {"role": "system", "content": "You judge."},
        {"role": "user", "content": f"Is the tower tall?\n\n{schema_text(schema)}"}]}
    assert ours["messages"][1] == ASK[0]  # the caller's messages are left as they were
    assert readable(shown) == shown
    plain = {"model": "m", "messages": ASK}
    assert readable(plain) == plain


# ------------------------------------------------------------------------------ fallbacks


@pytest.mark.parametrize(("rejects", "status", "taken"), [
    (("json_schema",), 500, "json_object"),  # llama-cpp-python's server, as in the issue
    (("json_schema", "json_object"), 400, "tools"),
    (("json_schema", "json_object", "tools"), 422, "text"),
])
def test_a_rejected_format_falls_back_once_for_every_call_of_the_model(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, rejects: tuple[str, ...], status: int,
    taken: str,
) -> None:
    model = scripted(rejects=rejects, reject_status=status)
    started = time.perf_counter()
    result = dialogue(model, tmp_path)
    assert time.perf_counter() - started < 20  # no backoff: a rejection is not retried
    assert result.errors == {} and set(result.scores) == set(SIX)
    sent = structured_forms(model)
    # each rejected form reached the server once; everything after, generator and ragas'
    # calls alike, went in the form the server took
    assert all(sent[(form,)] == 1 for form in rejects)
    expected = () if taken == "text" else (taken,)
    assert sent[expected] == sum(sent.values()) - len(rejects) >= 8
    [line] = fallbacks(caplog)
    assert f"as {', '.join(rejects)} and took {taken}" in line
    assert f"ragdive_structured_output = {taken}" in line


@pytest.mark.parametrize("status", [400, 500])  # 500: llama-cpp-python's --logits_all false
def test_rejected_logprobs_fall_back_to_the_first_word(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    def p_yes(messages: list[dict[str, Any]]) -> float:
        return 0.2 if "reference answer" in messages[-1]["content"] else 0.9

    model = scripted({"YesNo": p_yes}, rejects=("logprobs",), reject_status=status)
    result = dialogue(model, tmp_path, metrics=["correctness"])
    assert result.errors == {}
    judgement = result.turns[0].judgements["correctness"]
    assert judgement.score == 0.0 and "P(yes) 0.00" in judgement.reason  # "no", as a word
    assert [f for f in forms(model) if "logprobs" in f] == [("logprobs",)]
    [line] = fallbacks(caplog)
    assert "rejects logprobs" in line


def test_the_default_sends_what_it_always_sent(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                               ) -> None:
    model = scripted()
    result = dialogue(model, tmp_path)
    assert result.errors == {}
    # this package's calls and ragas' (instructor's JSON_SCHEMA mode) alike as json_schema
    assert set(structured_forms(model)) == {("json_schema",)}
    assert fallbacks(caplog) == []


def test_a_server_that_refuses_json_object_rejects_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = scripted(rejects=("json_object",))  # LM Studio
    result = dialogue(model, tmp_path)
    assert result.errors == {} and set(result.scores) == set(SIX)
    assert set(structured_forms(model)) == {("json_schema",)}
    assert fallbacks(caplog) == []


def test_a_mode_goes_into_cache_keys_only_where_it_changes_the_request(tmp_path: Path) -> None:
    def keys(folder: str, model: str | Model, **options: Any) -> set[str]:
        result = dialogue(model, tmp_path / folder, metrics=["correctness"],
                          client=client(tmp_path / folder, **options))
        assert result.errors == {}
        return {p.name for p in (tmp_path / folder).rglob("*.json")}

    model = scripted(name="keys")
    auto = keys("auto", model)
    # json_schema is what auto sends for this package's calls: the same keys
    assert keys("fixed", Model(model, structured_output="json_schema"),
                structured_output="tools") == auto
    tools = keys("tools", model, structured_output="tools")
    assert len(tools - auto) == 2  # the generator's two calls; the yes/no calls are alike


@pytest.mark.parametrize("where", ["model", "params", "client"])
def test_a_fixed_mode_is_used_from_the_first_call(tmp_path: Path, where: str) -> None:
    name = scripted(rejects=("json_schema",))
    model: str | Model = {"model": Model(name, structured_output="tools"),
                          "params": Model(name, {"structured_output": "tools"}),
                          "client": name}[where]
    result = dialogue(model, tmp_path, client=client(tmp_path, structured_output="tools"
                                                     if where == "client" else "auto"))
    assert result.errors == {}
    assert set(structured_forms(name)) == {("tools",)}
    assert "structured_output" not in as_params(model)


def as_params(model: str | Model) -> dict[str, Any]:
    return dict(model.params) if isinstance(model, Model) else {}


def test_a_fixed_mode_the_server_rejects_fails_at_once_naming_the_setting(tmp_path: Path
                                                                          ) -> None:
    name = scripted(rejects=("json_object",), reject_status=500)
    result = dialogue(Model(name, structured_output="json_object"), tmp_path)
    error = result.errors["dialogue"]
    assert "rejected the request as invalid (HTTP 500; not retried)" in error
    assert "1 validation error:" in error and "'response_format', 'type'" in error
    assert "structured_output" in error and "ragdive_structured_output" in error
    assert "File " not in error  # the server's traceback is left out
    assert forms(name) == [("json_object",)]


def test_a_recording_made_after_a_fallback_replays_without_the_server(tmp_path: Path) -> None:
    model = scripted(name="served", rejects=("json_schema", "logprobs"))
    recorded = dialogue(model, tmp_path)
    assert recorded.errors == {}
    asked = len(forms(model))
    replayed = dialogue(model, tmp_path, client=client(tmp_path, "none"))
    assert replayed.errors == {} and replayed.scores == recorded.scores
    assert len(forms(model)) == asked and replayed.usage.calls == 0


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="structured_output='xml' is not one of auto, json_s"):
        Model("m", structured_output="xml")
    with pytest.raises(ValueError, match="is not one of"):
        LLMClient(ResponseCache(Path("unused")), structured_output="yaml")


# ------------------------------------------------------------------------ permanent errors


def failing(status: int, message: str, **script: Any) -> str:
    def respond(messages: list[dict[str, Any]]) -> Any:
        raise http_error(status, message)

    return scripted({"Verdict": respond, "YesNo": respond}, **script)


async def ask(model: str | Model, tmp_path: Path, **options: Any) -> str:
    with pytest.raises(ModelError) as caught:
        await client(tmp_path, **options).structured(model, ASK, Verdict)
    return str(caught.value)


@pytest.mark.parametrize(("status", "message", "kind", "fix"), [
    (400, "Invalid value for 'temperature': must be <= 2.", "BadRequestError",
     "check the model name, api_base"),
    (404, "The model `qwen` does not exist.", "NotFoundError", "lists at <api_base>/models"),
    (400, "This model's maximum context length is 4096 tokens, you sent 5000.",
     "ContextWindowExceededError", "larger context (llama.cpp: --n_ctx"),
    (422, "temperature: Input should be less than or equal to 2", "UnprocessableEntityError",
     "check the model name"),
    (403, "This model is not available in your region.", "PermissionDeniedError",
     "check the model name"),
    (413, "Request body too large.", "APIError", "check the model name"),
    (500, "2 validation errors:\n  {'loc': ('body', 'seed')}\n  {'loc': ('body', 'stop')}",
     "InternalServerError", "check the model name"),
])
def test_a_request_the_server_rejects_fails_at_once_with_its_message_and_the_fix(
    tmp_path: Path, status: int, message: str, kind: str, fix: str
) -> None:
    model = failing(status, message)
    started = time.perf_counter()
    error = asyncio.run(ask(model, tmp_path))
    assert time.perf_counter() - started < 5 and len(forms(model)) == 1
    assert f"HTTP {status}; not retried): {kind}: {message.splitlines()[0]}" in error
    assert all(line.strip() in error for line in message.splitlines())  # not only the first
    assert fix in error.split("Fix:", 1)[1]  # the fix, where the message gives it


def test_an_unsupported_structured_request_names_the_setting(tmp_path: Path) -> None:
    model = failing(400, "response_format json_schema is not supported by this model")
    error = asyncio.run(ask(Model(model, structured_output="json_schema"), tmp_path))
    assert "as json_schema: set another with Model(..., structured_output=...)" in error


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
def test_transient_answers_are_retried_and_the_last_message_is_kept_whole(
    tmp_path: Path, status: int
) -> None:
    attempts = iter(range(3))

    def respond(messages: list[dict[str, Any]]) -> Any:
        if next(attempts) < 2:
            raise http_error(status, "busy\nthe cause, on the second line")
        return {"tall": True}

    model = scripted({"Verdict": respond})
    verdict = asyncio.run(client(tmp_path, retries=2).structured(model, ASK, Verdict))
    assert verdict.tall and len(forms(model)) == 3
    # a busy answer (429, 503) is bounded by the budget of waits (the first wait is 0.75-1 s,
    # the second 1.5-2 s), the others by the count of retries
    gave_up = asyncio.run(ask(failing(status, "busy\nthe cause, on the second line"),
                              tmp_path / "b", retries=1, retry_budget=1.2))
    assert "gave up after 2 attempts" in gave_up and "the cause, on the second line" in gave_up


def test_a_rejection_ends_the_dialogue_with_the_message(tmp_path: Path) -> None:
    result = dialogue(failing(404, "model 'qwen' not found"), tmp_path)
    assert "model 'qwen' not found" in result.errors["dialogue"]
    assert "Fix: the server serves no model" in result.errors["dialogue"]


# ------------------------------------------------------------------------------- secrets


def test_secrets_are_masked_in_every_form() -> None:
    # the key-shaped strings are built here so that no key-shaped text sits in the repository
    text = (f"{'sk'}-abcdefgh12345678 api_key=plainkey123 'key': 'quoted1234' Bearer "
            f"tok.en-123456 {'AIza'}SyA1234567890abcdefghijkl {'AKIA'}ABCDEFGHIJKLMNOP "
            f"{'hf'}_abcdefghijklmnopqrstuv my-own-server-secret task-1234567890 "
            "monkey: banana1234")
    masked = mask(text, ["my-own-server-secret"])
    for secret in ("abcdefgh12345678", "plainkey123", "quoted1234", "tok.en-123456",
                   "AIzaSy", "AKIAABCD", "hf_abcdef", "my-own-server-secret"):
        assert secret not in masked
    assert "sk-***" in masked and "Bearer ***" in masked
    assert "task-1234567890" in masked and "monkey: banana1234" in masked  # not keys


def test_the_models_api_key_and_the_environments_never_reach_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVER_TOKEN", "env-token-value-42")
    model = failing(400, "bad request from local-key-0001 with env-token-value-42")
    error = asyncio.run(ask(Model(model, {"api_key": "local-key-0001"}), tmp_path))
    assert "local-key-0001" not in error and "env-token-value-42" not in error
    assert "bad request from *** with ***" in error


def test_fallback_log_lines_name_the_model_only(tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "pytest_ragdive")
    model = scripted({"Verdict": lambda messages: {"tall": True}}, rejects=("json_schema",))
    asyncio.run(client(tmp_path).structured(Model(model, {"api_key": "sk-secret-9999"}), ASK,
                                            Verdict))
    [line] = fallbacks(caplog)
    assert model in line and "sk-secret" not in line


# ------------------------------------------------------------------- the ini setting


def served_project(project: pytest.Pytester, setting: str) -> pytest.Pytester:
    """The conftest project, its judge behind a server that refuses json_object."""
    judge = 'scripted({"YesNo": yes}, name="judge", rejects=("json_object",))'
    project.makeconftest(PROJECT_CONFTEST.replace('scripted({"YesNo": yes}, name="judge")',
                                                  judge))
    project.makeini("[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n"
                    f"ragdive_structured_output = {setting}\n")
    project.makepyfile(test_bot="import pytest_ragdive as ragdive\n\n"
                                "@ragdive.conversation(turns=2, runs=1)\n"
                                "def test_bot():\n    pass\n")
    return project


def test_the_ini_setting_reaches_every_judge(project: pytest.Pytester) -> None:
    fixed = served_project(project, "json_object").runpytest(
        "-m", "ragdive", "--ragdive-update")
    fixed.assert_outcomes(failed=2)
    fixed.stdout.fnmatch_lines(["*rejected the request as invalid (HTTP 400; not retried)*",
                                "*Fix: the server does not take structured output as json_object*"])
    tools = served_project(project, "tools").runpytest("-m", "ragdive",
                                                                  "--ragdive-update")
    tools.assert_outcomes(passed=2)


def test_an_unknown_ini_setting_is_a_usage_error(project: pytest.Pytester) -> None:
    result = served_project(project, "yaml").runpytest("-m", "ragdive")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini ragdive_structured_output: structured_output='yaml' is not 'auto' or 'json_schema'*"])
