"""A LangChain Runnable as the RAG system under test.

Two shapes are common, and both work without glue:

* ``create_history_aware_retriever`` + ``create_retrieval_chain``: the chain takes
  ``{"input": question, "chat_history": [messages]}`` and returns a dict with the answer
  under ``"answer"`` and the retrieved Documents under ``"context"``;
* a plain LCEL chain (``{"context": retriever | ..., "question": RunnablePassthrough()} |
  prompt | llm | StrOutputParser()``): it takes the question and returns text; give its
  ``retriever`` so that the judges see what was retrieved (the retriever is asked the
  same question, as the chain's is).

The conversation goes to the chain as LangChain messages (``HumanMessage``/``AIMessage``).
LangChain is imported when the first question is asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..engine.base.models import Message, RagAnswer


class LangChainAdapter:
    """``runnable`` answers; ``input_key`` / ``history_key`` name its inputs (``input_key=None``:
    the chain takes the question itself; ``history_key=None``: it takes no history), and
    ``answer_key`` / ``context_key`` the parts of a dict output."""

    def __init__(self, runnable: Any, *, retriever: Any = None, input_key: str | None = "input",
                 history_key: str | None = "chat_history", answer_key: str = "answer",
                 context_key: str = "context") -> None:
        if not hasattr(runnable, "ainvoke"):
            raise TypeError(f"LangChainAdapter needs a LangChain Runnable, not "
                            f"{type(runnable).__name__}")
        if input_key is None and history_key is not None:
            raise ValueError("LangChainAdapter: a chain that takes the question itself takes "
                             "no history; give history_key=None, or name its input_key")
        self.runnable, self.retriever = runnable, retriever
        self.input_key, self.history_key = input_key, history_key
        self.answer_key, self.context_key = answer_key, context_key

    def __repr__(self) -> str:
        return f"LangChainAdapter({type(self.runnable).__name__})"

    async def answer(self, question: str, history: list[Message]) -> RagAnswer:
        inputs: Any = question
        if self.input_key is not None:
            inputs = {self.input_key: question}
            if self.history_key is not None:
                inputs[self.history_key] = _messages(history)
        output = await self.runnable.ainvoke(inputs)
        if isinstance(output, dict):
            if self.answer_key not in output:
                raise ValueError(f"the chain's output has no {self.answer_key!r} (it has "
                                 f"{', '.join(map(repr, output)) or 'nothing'}); give "
                                 f"LangChainAdapter(answer_key=...)")
            answer, documents = output[self.answer_key], output.get(self.context_key)
        else:
            answer, documents = output, None
        if documents is None and self.retriever is not None:
            documents = await self.retriever.ainvoke(question)
        if answer is None:
            raise ValueError(f"the chain's answer is None (output {type(output).__name__}); "
                             f"check the chain's last step, or give "
                             f"LangChainAdapter(answer_key=...)")
        if isinstance(documents, (str, bytes)) or (
                documents is not None and not isinstance(documents, Sequence)):
            raise ValueError(f"the chain's {self.context_key!r} holds "
                             f"{type(documents).__name__}, not a list of documents; give "
                             f"LangChainAdapter(context_key=...) the key of the retrieved "
                             f"Documents")
        return RagAnswer(answer=_text(answer), contexts=[_text(d) for d in documents or []])


def _messages(history: Sequence[Message]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    return [HumanMessage(m.content) if m.role == "user" else AIMessage(m.content)
            for m in history]


def _text(value: Any) -> str:
    """A Document's ``page_content``, a message's ``content``, or the string itself."""
    for attribute in ("page_content", "content"):
        if hasattr(value, attribute):
            return str(getattr(value, attribute))
    return str(value)
