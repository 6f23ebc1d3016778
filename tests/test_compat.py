"""The installed libraries can do what the plugin needs; when they cannot, one test says which."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.engine.evaluation.evaluator import RAGAS_METRICS
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.scripted import calls, scripted
from pytest_ragdive.llm.structured import schema_text

LIBRARIES = ("ragas", "instructor", "litellm", "openai", "langchain-core")
DOC = ragdive.Document(id="tower", text="The Alder Tower is 120 m tall. It opened in 1931.")


class Bot:
    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        return ragdive.RagAnswer(answer="It is 120 m tall.", contexts=[DOC.text])


def installed() -> str:
    return ", ".join(f"{name} {importlib.metadata.version(name)}" for name in LIBRARIES)


def test_ragas_metrics_run_with_the_installed_libraries(tmp_path: Path) -> None:
    dialogue = ragdive.run_dialogue(
        DOC, Bot(), judges=ragdive.Judges(scripted()), turns=1, metrics=RAGAS_METRICS,
        cache_dir=tmp_path,
    )
    assert not dialogue.errors, (
        f"ragas' metrics cannot run with the installed {installed()}: {dialogue.errors}. "
        f"Install the tested set: python3 -m pip install -c constraints.txt -e '.[embedded]'"
    )
    assert set(dialogue.scores) == set(RAGAS_METRICS)


def asked_for(request: dict[str, Any]) -> str | None:
    """The name of the schema a request carries as data."""
    fmt = request.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return str(fmt["json_schema"]["name"])
    return (fmt.get("schema") or {}).get("title")


def test_ragas_asks_for_its_output_models_as_data_after_its_own_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragas.llms.litellm_llm import LiteLLMStructuredLLM
    from ragas.metrics.collections.context_precision.util import ContextPrecisionOutput
    from ragas.metrics.collections.context_recall.util import ContextRecallOutput
    from ragas.metrics.collections.faithfulness.util import (
        NLIStatementOutput,
        StatementGeneratorOutput,
    )

    outputs = {m.__name__: m.model_json_schema() for m in (
        StatementGeneratorOutput, NLIStatementOutput, ContextPrecisionOutput, ContextRecallOutput)}
    recall = outputs["ContextRecallOutput"]
    listed = {**recall["properties"]["classifications"], "minItems": 1}
    # as sent: one classification per statement of the answer key, so never none
    sent = {**outputs, "ContextRecallOutput": {**recall, "properties": {
        **recall["properties"], "classifications": listed}}}
    prompts: dict[str, list[str]] = {}  # output model -> ragas' prompts, as ragas wrote them
    requests: list[dict[str, Any]] = []  # as ragas' instructor client handed them to ours
    agenerate, send = LiteLLMStructuredLLM.agenerate, LLMClient.send

    async def ragas_agenerate(self: Any, prompt: str, response_model: Any) -> Any:
        assert not self.system_prompt
        prompts.setdefault(response_model.__name__, []).append(prompt)
        return await agenerate(self, prompt, response_model)

    async def client_send(self: Any, request: dict[str, Any], model: Any) -> Any:
        requests.append(request)
        return await send(self, request, model)

    monkeypatch.setattr(LiteLLMStructuredLLM, "agenerate", ragas_agenerate)
    monkeypatch.setattr(LLMClient, "send", client_send)
    model = scripted()
    dialogue = ragdive.run_dialogue(DOC, Bot(), judges=ragdive.Judges(model), turns=1,
                                    metrics=RAGAS_METRICS, cache_dir=tmp_path)
    assert not dialogue.errors and set(prompts) == set(outputs)
    theirs = [r for r in requests if asked_for(r) in outputs]
    ragas_calls = [(name, messages) for name, messages in calls(model) if name in outputs]
    assert len(theirs) == len(ragas_calls) == sum(map(len, prompts.values()))
    for name, messages in ragas_calls:
        fmt = [r for r in theirs if r["messages"] == messages][0]["response_format"]
        schema = outputs[name]
        if fmt["type"] == "json_schema":  # the schema as data, the output model's
            schema = sent[name]
            assert fmt == {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
            # the prompt is ragas' own, then the schema once, in this package's words
            assert [m["role"] for m in messages] == ["user"]
            prompt = messages[0]["content"].removesuffix(f"\n\n{schema_text(schema)}")
            assert prompt in prompts[name]
        else:  # instructor 1.3.7: json_object with the schema, and its own system message
            assert fmt == {"type": "json_object", "schema": schema}
        assert sum(m["content"].count(schema_text(schema)) for m in messages) == 1
        assert messages[-1]["content"].endswith(schema_text(schema))


def test_run_dialogue_returns_promptly_and_the_process_ends(tmp_path: Path) -> None:
    # In a child process: a task that litellm leaves on the loop must neither keep
    # run_dialogue from returning nor the interpreter from exiting.
    script = textwrap.dedent(f"""
        import time, pytest_ragdive as ragdive
        from pytest_ragdive.llm.scripted import scripted
        class Bot:
            def answer(self, question, history):
                return ragdive.RagAnswer(answer="It is 120 m tall.", contexts=["a fact"])
        doc = ragdive.Document(id="tower", text="The Alder Tower is 120 m tall.")
        ragdive.run_dialogue(doc, Bot(), judges=ragdive.Judges(scripted()), turns=2,
                             metrics=["correctness", "forgetfulness"], cache_dir={str(tmp_path)!r})
        start = time.perf_counter()
        ragdive.run_dialogue(doc, Bot(), judges=ragdive.Judges(scripted()), turns=2,
                             metrics=["correctness", "forgetfulness"], cache_dir={str(tmp_path)!r},
                             record_mode="all")
        print("second dialogue", round(time.perf_counter() - start, 1), flush=True)
    """)
    # the bound of a hang: imports and two scripted dialogues take seconds, even on a busy machine
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seconds = float(done.stdout.split("second dialogue")[1])
    assert seconds < 30, f"run_dialogue took {seconds} s to return ({installed()})"


def test_the_end_of_a_loop_leaves_no_logging_callback_never_awaited() -> None:
    # litellm queues a success-logging coroutine per call on its worker; a loop that ends with
    # some still queued must close them, or each prints "coroutine ... was never awaited"
    script = textwrap.dedent("""
        import asyncio, gc, warnings
        from pytest_ragdive.llm.library import import_litellm, release_loop
        import_litellm()
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER as worker

        async def logged():
            await asyncio.sleep(0)

        async def calls_then_end():
            worker.start()
            for _ in range(500):
                worker.enqueue(logged())
            await release_loop()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                asyncio.run(calls_then_end())
            gc.collect()
        print("never awaited:", sum("never awaited" in str(w.message) for w in caught))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "never awaited: 0" in done.stdout, f"{done.stdout[-500:]} ({installed()})"
