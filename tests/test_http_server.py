"""The judges over HTTP: the embedded model served by llama-cpp-python's OpenAI-compatible
server on a loopback port, reached as ``openai/...`` with ``api_base`` like any served model.

The server takes ``response_format`` of type ``text`` or ``json_object`` only, and answers
a ``json_schema`` request with HTTP 500 and a request validation error: the client must
find that out once and go on in ``json_object`` mode, for its own calls and ragas' alike.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.llm import embedded
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.embedded.server import embedded_server
from pytest_ragdive.llm.model import Model

SERVER_MODULES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context",
                  "pydantic_settings")


def server_installed() -> bool:
    return embedded.is_installed() and all(
        importlib.util.find_spec(name) is not None for name in SERVER_MODULES
    )


pytestmark = [
    pytest.mark.embedded,
    pytest.mark.skipif(not server_installed(),
                       reason="needs pytest-ragdive[embedded] with llama-cpp-python's server"),
]

SIX = {"correctness", "faithfulness", "context_precision", "context_recall", "forgetfulness",
       "context_retention"}
DOC = ragdive.Document(
    id="museum",
    text="The city museum opens at 9 am and closes at 6 pm. Entry costs 12 marks for adults. "
    "Children under 12 enter for free. The museum is closed on Mondays.",
)


class Bot:
    """Answers with the document's sentences that the question's words point to."""

    TOPICS: ClassVar[dict[str, int]] = {"open": 0, "opens": 0, "close": 0, "closes": 0, "hours": 0, "time": 0,
              "cost": 1, "costs": 1, "price": 1, "entry": 1, "pay": 1, "much": 1, "ticket": 1,
              "children": 2, "child": 2, "kids": 2, "free": 2, "under": 2,
              "monday": 3, "mondays": 3, "closed": 3, "days": 3, "day": 3}

    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        sentences = [s.strip() + "." for s in DOC.text.split(".") if s.strip()]
        words = [w.strip("?.,!").lower() for w in question.split()]
        chosen = sorted({self.TOPICS[w] for w in words if w in self.TOPICS})
        contexts = [sentences[i] for i in chosen] or sentences
        return ragdive.RagAnswer(answer=" ".join(contexts), contexts=contexts)


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """The base URL of llama-cpp-python's server running the embedded model."""
    with embedded_server() as url:
        yield url


def judge(url: str) -> Model:
    return Model("openai/kessa", {"api_base": url, "api_key": "local-test-key"})


def test_real_server_returns_first_token_logprobs(served: str, tmp_path: Path) -> None:
    client = LLMClient(ResponseCache(tmp_path, "all"), concurrency=1, timeout=300)
    question = [{"role": "user", "content": "Is Paris in France? Answer yes or no."}]
    assert run_blocking(client.yes_probability(judge(served), question)) > 0.5
    [entry] = [json.loads(p.read_text()) for p in tmp_path.rglob("*.json")]
    tokens = [token.strip().lower() for token, _ in entry["response"]["top_logprobs"]]
    assert len(tokens) == 20 and "yes" in tokens  # a probability, not a word


@pytest.mark.first  # about 5 minutes on 2 cores
def test_real_two_turn_dialogue_over_http_with_all_six_metrics(
    served: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    client = LLMClient(ResponseCache(tmp_path, "all"), concurrency=1, timeout=600)
    started = time.perf_counter()
    dialogue = ragdive.run_dialogue(
        DOC, Bot(), judges=ragdive.Judges(judge(served)), turns=2, validation="once",
        max_regenerations=4, client=client, dialogue_timeout=3600,
    )
    seconds = time.perf_counter() - started
    print(f"2-turn dialogue over HTTP: {seconds:.0f} s, {dialogue.usage.calls} calls, "
          f"{dialogue.usage.prompt_tokens} prompt tokens")
    assert dialogue.errors == {}
    assert len(dialogue.turns) == 2 and set(dialogue.scores) == SIX
    fallbacks = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                 and "rejected structured output" in r.getMessage()]
    assert len(fallbacks) == 1 and "as json_schema and took json_object" in fallbacks[0]
    assert client.served(judge(served)).chosen == "json_object"
