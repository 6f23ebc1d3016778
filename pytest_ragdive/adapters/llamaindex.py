"""A LlamaIndex engine as the RAG system under test.

Two shapes are common, and both work without glue:

* a chat engine (``index.as_chat_engine(chat_mode="condense_plus_context")``, or
  ``"condense_question"``, ``"context"``): ``achat(question, chat_history=[...])`` returns the
  answer under ``.response`` and the retrieved nodes under ``.source_nodes``;
* a query engine (``index.as_query_engine()``): ``aquery(question)`` takes no history, so it
  is asked each question alone, as a bot built on one is.

The conversation goes to a chat engine as LlamaIndex ``ChatMessage``s (roles ``user`` and
``assistant``) at every turn, and replaces the engine's own memory: one engine holds one
conversation at a time, so concurrent dialogues take turns on a shared engine. Give a function
that builds the engine instead, and each dialogue gets one of its own (``start``). The contexts
are the text of the source nodes. LlamaIndex is imported when the first question is asked.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

from ..engine.base.models import Message, RagAnswer

_ENGINE = "a LlamaIndex chat engine (achat) or query engine (aquery)"


class LlamaIndexAdapter:
    """``engine`` answers: a chat engine, a query engine, or a function of no arguments that
    builds either, called once per dialogue (at its first question) so that each dialogue has
    an engine of its own."""

    def __init__(self, engine: Any) -> None:
        problem = _problem(engine, builder=True)
        if problem:
            raise TypeError(f"LlamaIndexAdapter needs {_ENGINE}, or a function of no arguments "
                            f"that builds one; {problem}")
        self.engine = engine
        self._engine = engine if _shape(engine) else None  # a builder's: built when first asked
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        name = getattr(self.engine, "__qualname__", None) or type(self.engine).__name__
        return f"LlamaIndexAdapter({name})"

    def start(self) -> LlamaIndexAdapter | None:
        """A dialogue begins: when ``engine`` builds engines, a session that builds its own;
        else None (this adapter answers)."""
        return None if self._engine is not None else LlamaIndexAdapter(self.engine)

    async def answer(self, question: str, history: list[Message]) -> RagAnswer:
        engine = self._engine if self._engine is not None else self._build()
        if _shape(engine) == "query":
            return await _answer(await engine.aquery(question), "aquery")
        async with self._guard():
            reset = getattr(engine, "reset", None)
            if not history and callable(reset):
                # some engines read their memory when given no history; reset runs an event
                # loop of its own when the memory is a database, hence the thread
                await asyncio.to_thread(reset)
            response = await engine.achat(question, chat_history=_messages(history))
        return await _answer(response, "achat")

    def _build(self) -> Any:
        engine = self.engine()
        problem = _problem(engine, builder=False)
        if problem:
            raise TypeError(f"the function given to LlamaIndexAdapter must return {_ENGINE}; "
                            f"{problem}")
        self._engine = engine
        return engine

    def _guard(self) -> asyncio.Lock:
        """The running loop's lock on the engine (``run_dialogue`` runs each dialogue on a
        loop of its own)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        return self._lock


def _shape(engine: Any) -> str | None:
    if hasattr(engine, "acomplete"):  # an LLM has achat too, taking messages
        return None
    if hasattr(engine, "achat"):
        return "chat"
    return "query" if hasattr(engine, "aquery") else None


def _problem(engine: Any, *, builder: bool) -> str | None:
    """Why ``engine`` is not an engine (or, with ``builder``, a function that builds one)."""
    name = type(engine).__name__
    if hasattr(engine, "acomplete"):
        return (f"{name} is an LLM: give an engine built on it, e.g. "
                f"index.as_chat_engine(chat_mode=\"condense_plus_context\", llm=llm)")
    if hasattr(engine, "aretrieve") and not _shape(engine):
        return f"{name} is a retriever: give index.as_query_engine() or index.as_chat_engine()"
    if _shape(engine) or (builder and callable(engine)):
        return None
    return f"not {name}"


def _messages(history: Sequence[Message]) -> list[Any]:
    from llama_index.core.llms import ChatMessage

    return [ChatMessage(role=m.role, content=m.content) for m in history]


async def _answer(response: Any, method: str) -> RagAnswer:
    """The answer and source nodes of a response; a streaming or structured one is read whole
    first (``get_response``)."""
    whole = getattr(response, "get_response", None)
    if callable(whole):
        response = whole()
        if inspect.isawaitable(response):
            response = await response
    if not (hasattr(response, "response") and hasattr(response, "source_nodes")):
        raise TypeError(f"the engine's {method} returned {type(response).__name__}, with no "
                        f"response and source_nodes; give LlamaIndexAdapter {_ENGINE}")
    text = response.response
    return RagAnswer(answer="" if text is None else str(text),
                     contexts=[_text(node) for node in response.source_nodes or []])


def _text(node: Any) -> str:
    """A source node's text, without its metadata."""
    get_content = getattr(node, "get_content", None)
    return str(get_content()) if callable(get_content) else str(node)
