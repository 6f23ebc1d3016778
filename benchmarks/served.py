"""Seconds per model call: the embedded model in this process vs served over HTTP.

    python benchmarks/served.py

Sends the same prompts, one call at a time with a fresh cache, first to the embedded provider
in this process (``embedded/...``), then, with that model closed, to llama-cpp-python's
OpenAI-compatible server running the same weights on a loopback port (``openai/...`` with
``api_base``), in ``json_object`` mode (what ``auto`` finds on that server) and in ``tools``
mode (schema-constrained there). In process, stored prompt prefixes are dropped before each
call, so both sides evaluate every prompt from scratch (the server keeps only its previous
prompt). Model loading and server start are not counted. Prints
per provider and kind of call: calls, mean prompt and completion tokens, mean seconds.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.embedded import runtime, weights
from pytest_ragdive.llm.embedded.server import embedded_server
from pytest_ragdive.llm.model import Model
from pytest_ragdive.llm.usage import Usage, usage_scope

FACTS = (
    "The Alder Tower is 120 m tall. It opened in 1931 and has 34 floors.",
    "The night ferry leaves the harbour at 23:10 and reaches Osk at 06:40.",
    "A yearly library card costs 15 marks; readers under 18 get one for free.",
)
QUESTIONS = ("How tall is the tower?", "When does the night ferry arrive?",
             "What does a yearly card cost for an adult?")
REPLIES = ("It is 120 metres tall.", "It arrives at 06:40.", "It costs 20 marks.")


class Claims(BaseModel):
    """The structured call: a reason and a verdict per claim, like ragas' NLI step."""

    reason: str
    supported: bool


def yes_no_prompt(i: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content":
             f"Source text: {FACTS[i]}\nQuestion: {QUESTIONS[i]}\nReply: {REPLIES[i]}\n"
             f"Does the reply give an answer the source text supports? Answer yes or no."}]


def structured_prompt(i: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content":
             f"Source text: {FACTS[i]}\nClaim: {REPLIES[i]}\nIs the claim supported by the "
             f"source text? Give a one-sentence reason, then the verdict, as JSON."}]


Call = Callable[[LLMClient, Model, int], Awaitable[Any]]
KINDS: dict[str, Call] = {
    "yes/no (1 token, logprobs)": lambda c, m, i: c.yes_probability(m, yes_no_prompt(i)),
    "structured (reason + verdict)": lambda c, m, i: c.structured(m, structured_prompt(i), Claims),
}


def measure(label: str, model: Model) -> None:
    client = LLMClient(ResponseCache(Path(tempfile.mkdtemp()), "all"), concurrency=1,
                       timeout=600)
    for kind, call in KINDS.items():
        seconds, usage = [], Usage()
        for i in range(len(FACTS)):
            if runtime._prefixes is not None:  # cold, like the server's first sight of it
                runtime._prefixes.clear()
            with usage_scope(usage):
                start = time.perf_counter()
                run_blocking(call(client, model, i))
                seconds.append(time.perf_counter() - start)
        print(f"{label:34} {kind:30} calls {usage.calls:2}  prompt {usage.prompt_tokens / 3:5.0f}"
              f"  completion {usage.completion_tokens / 3:4.0f}  "
              f"s/call {statistics.mean(seconds):5.2f} ({', '.join(f'{s:.2f}' for s in seconds)})")


def main() -> int:
    load = runtime.load()
    print(f"in-process model loaded in {load:.1f} s (not counted)")
    measure("in process (embedded/...)", Model(weights.MODEL))
    runtime._close()  # one model at a time on this machine
    start = time.perf_counter()
    with embedded_server() as url:
        print(f"server ready in {time.perf_counter() - start:.1f} s (not counted)")
        for mode in ("json_object", "tools"):
            served = Model("openai/qwen", {"api_base": url, "api_key": "local"},
                           structured_output=mode)
            measure(f"HTTP, llama_cpp.server, {mode}", served)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
