"""What the scheduling benchmark runs: the generated pytest project (documents, the bot, the
scripted model and their latencies), the configurations of each section, and the what-if
patches appended to the conftest."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

# The generated project. COMMON is both the body of the generated conftest.py and what
# the in-process probe executes, so both run the very same model script and adapter.

COMMON = '''
import asyncio
import re

import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted_replies import ORDINALS, first_sentence

_TAG = re.compile(r"\\[(doc-\\d+)\\]")
_TURN = re.compile(r"Write turn (\\d+)")


def _where(messages):
    text = str(messages[-1]["content"])
    tag, turn = _TAG.search(text), _TURN.search(text)
    return (tag.group(1) if tag else "doc"), (int(turn.group(1)) if turn else 1)


# The generator's default replies are the same for every document, so later dialogues
# would hit the cache entries of earlier ones (same question, same answer, same ragas
# prompt). These two name the document and the turn, so that every call is a miss.
def first_question(messages):
    tag, _ = _where(messages)
    return {"question": f"What is the topic of {tag}?", "evidence": first_sentence(messages),
            "ground_truth": f"The topic of {tag}."}


_FACT = re.compile(r"^Fact: (.*)$", re.MULTILINE)


def next_question(messages):
    """About the fact the plugin chose for the turn, quoted as the evidence and the key.
    The message names no document ("And the second fact about it?"): it leans on the
    conversation, as the validator's exact checks require of a follow-up; its stand-alone
    question names the document."""
    tag, turn = _where(messages)
    nth = ORDINALS[turn - 1]
    fact = _FACT.search(str(messages[-1]["content"]))
    evidence = fact.group(1) if fact else first_sentence(messages)
    return {
        "rag_input": f"And the {nth} fact about it?",
        "standalone_question": f"What is the {nth} fact about the topic of {tag}, "
                               f"{max(evidence.split(), key=len)}?",
        "evidence": evidence,
        "ground_truth": evidence,
        "question_type": "follow_up",
    }


RESPONDERS = {"FirstQuestion": first_question, "NextQuestion": next_question}

FILLER = ("It was founded long ago and serves many people every day. Its opening hours "
          "change in winter, tickets are sold at the entrance and online, and groups of "
          "more than ten should book a week ahead. ")


def make_documents(n):
    return [ragdive.Document(id=f"doc-{i:02d}", text=f"[doc-{i:02d}] Topic {i}. " + FILLER * 3)
            for i in range(n)]


class Bot:
    """A RAG stand-in: waits ``latency`` seconds, answers with ``contexts`` passages. It
    keeps the conversation as chat RAG does: a follow-up ("And the second fact about
    it?") is read with the first question, so answers and passages differ per document."""

    def __init__(self, latency, contexts, stamps=None):
        self.latency, self.contexts, self.stamps = latency, contexts, stamps

    async def answer(self, question, history):
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.stamps is not None:
            self.stamps.append(asyncio.get_running_loop().time())
        turn = len(history) // 2 + 1
        query = f"{question} ({history[0].content})" if history else question
        contexts = [f"Passage {i + 1} retrieved for {query!r}: opening hours change in "
                    f"winter and tickets are sold online." for i in range(self.contexts)]
        return ragdive.RagAnswer(
            answer=f"Answer {turn}: about {query!r}, the knowledge base says that "
                   f"opening hours change in winter.",
            contexts=contexts,
        )
'''

CONFTEST = '''
import pytest
from pytest_ragdive.llm.scripted import scripted

MODEL_LATENCY = {model_latency!r}
ADAPTER_LATENCY = {adapter_latency!r}
CONTEXTS = {contexts!r}
DOCUMENTS = {documents!r}
{common}

MODEL = scripted(RESPONDERS, name="bench", latency=MODEL_LATENCY)


@pytest.fixture(scope="session")
def ragdive_adapter():
    return Bot(ADAPTER_LATENCY, CONTEXTS)


@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges(MODEL)


ragdive_document = ragdive.document_fixture(make_documents(DOCUMENTS))
'''

TEST_MODULE = '''
import pytest_ragdive as ragdive


@ragdive.conversation(turns={turns})
def test_bench(ragdive_dialogue):
    pass
'''


@dataclass(frozen=True)
class Config:
    """One benchmarked configuration: N documents x T turns at the given latencies."""

    label: str
    documents: int
    turns: int
    model_latency: float
    adapter_latency: float
    concurrency: int
    contexts: int = 2
    patch: str = ""  # a key of WHAT_IF: code appended to the conftest


#: --what-if: changes to the plugin proposed in benchmarks/README.md, simulated from the
#: generated conftest (the plugin itself is not touched).
WHAT_IF = {
    "import": """
import threading


def _warm():  # what the first evaluation would import on the event loop
    import instructor, ragas.llms, ragas.metrics.collections  # noqa: F401


def pytest_collection_finish(session):
    threading.Thread(target=_warm, daemon=True).start()
""",
    "import+freeze": """
import gc
import threading


def _warm():
    import instructor, ragas.llms, ragas.metrics.collections  # noqa: F401
    gc.freeze()  # the long-lived import graph leaves the collector's work


def pytest_collection_finish(session):
    threading.Thread(target=_warm, daemon=True).start()
""",
}


def make_project(root: Path, cfg: Config) -> Path:
    """The generated project of ``cfg`` under ``root``, written on first use."""
    project = root / (f"p-{cfg.documents}d-{cfg.turns}t-{cfg.model_latency}-"
                      f"{cfg.adapter_latency}-{cfg.contexts}c{cfg.patch and '-' + cfg.patch}")
    if project.exists():
        return project
    project.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "conftest.py").write_text(CONFTEST.format(
        model_latency=cfg.model_latency, adapter_latency=cfg.adapter_latency,
        contexts=cfg.contexts, documents=cfg.documents, common=COMMON)
        + WHAT_IF.get(cfg.patch, ""))
    (project / "test_bench.py").write_text(TEST_MODULE.format(turns=cfg.turns))
    return project


def make_startup_project(root: Path, modules: int = 10, tests: int = 20) -> Path:
    """``modules`` x ``tests`` trivial non-ragdive tests."""
    project = root / "startup"
    project.mkdir(exist_ok=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    for module in range(modules):
        body = "".join(f"def test_{module}_{n}():\n    pass\n\n\n" for n in range(tests))
        (project / f"test_trivial_{module}.py").write_text(body)
    return project


#: concurrency: 20 documents x 5 turns, 200 ms per model call, 50 ms per adapter call
BASE = Config("C=16", documents=20, turns=5, model_latency=0.2, adapter_latency=0.05,
              concurrency=16)
CONCURRENCY = (
    BASE,
    replace(BASE, label="C=1 (sequential)", concurrency=1),
    # not asked for: a limit that never binds, to see the engine's own overhead
    replace(BASE, label="C=1000 (no limit)", concurrency=1000),
)

#: tokens: 4 documents, zero latency, C=16, growing turns
TOKENS = tuple(Config(f"turns={turns}", documents=4, turns=turns, model_latency=0.0,
                      adapter_latency=0.0, concurrency=16) for turns in (1, 3, 5, 7))


@dataclass(frozen=True)
class Sizes:
    """What one run of the benchmark measures: every section's configurations."""

    base: Config
    concurrency: tuple[Config, ...]  # the first is ``base``; one has C=1
    tokens: tuple[Config, ...]
    startup: tuple[int, int]  # modules x trivial tests
    what_if: bool = True  # False: only the base with every WHAT_IF patch


FULL = Sizes(BASE, CONCURRENCY, TOKENS, (10, 20))
#: ``--tiny``: each section once on 2 documents x 2 turns, in about a minute: whether the
#: benchmark runs (tests/test_benchmarks.py), not a measurement
_TINY_BASE = Config("C=1", documents=2, turns=2, model_latency=0.01, adapter_latency=0.005,
                    concurrency=1)
TINY = Sizes(_TINY_BASE, (_TINY_BASE,),
             (replace(_TINY_BASE, label="turns=2", model_latency=0.0, adapter_latency=0.0),),
             (2, 2), what_if=False)


def what_if(needed: int, sizes: Sizes = FULL) -> list[Config]:
    """The base configuration as is, with the WHAT_IF patches, and at limit ``needed``."""
    base = sizes.base
    if not sizes.what_if:
        return [replace(base, label="every patch", patch="import+freeze")]
    return [
        replace(base, label="as is"),
        replace(base, label="ragas imported in a thread at collection", patch="import"),
        replace(base, label="  + gc.freeze() after the imports", patch="import+freeze"),
        replace(base, label=f"C={needed} as is", concurrency=needed),
        replace(base, label=f"C={needed} + import thread + gc.freeze()", concurrency=needed,
                patch="import+freeze"),
    ]
