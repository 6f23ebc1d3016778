"""The installed libraries can do what the plugin needs; when they cannot, one test says which."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest_ragdive as ragdive
from pytest_ragdive.engine.evaluator import RAGAS_METRICS
from pytest_ragdive.llm.scripted import scripted

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
