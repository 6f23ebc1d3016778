"""Where the time of a live dialogue on the embedded model goes, stage by stage.

    python benchmarks/embedded.py                 # the example's 3 documents, 3 turns, seed 0
    python benchmarks/embedded.py --documents 1 --turns 2

Runs the example project's dialogues (the CityGuide bot, the embedded model as every judge)
in this process with a fresh response cache, so every call reaches the model, and prints per
stage: calls, prompt tokens, how many of them came from a stored prefix state instead of
being evaluated, completion tokens and seconds; then the wall time and the thread count.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest_ragdive as ragdive
from pytest_ragdive.engine.dialogue import run_blocking
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.embedded import runtime, weights
from pytest_ragdive.llm.embedded.prefixes import CallStats

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"

#: stage -> how its prompt's first line (after the source and the conversation) begins
STAGES = (
    ("generator", "You play a user"),
    ("validator", "A tester wrote"),
    ("correctness", "Question:", "Reference answer"),
    ("forgetfulness + context_retention", "Question:"),
    ("ragas faithfulness", "Your task is to judge the faithfulness"),
    ("ragas faithfulness", "Given a question and an answer"),
    ("ragas context_precision", "Given question, answer and context verify"),
    ("ragas context_recall", "Given a context and an answer, analyze each"),
)


def stage_of(stats: CallStats) -> str:
    for name, start, *also in STAGES:
        if stats.prompt.startswith(start) and all(a in stats.text for a in also):
            return name
    return "the bot (system under test)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=3)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(EXAMPLE))
    from ragbot import RagBot

    docs = ragdive.load_documents(str(EXAMPLE / "kb" / "[bht]*.md"))[: args.documents]
    client = LLMClient(ResponseCache(Path(tempfile.mkdtemp()), "all"), concurrency=8,
                       timeout=1800)
    bot = RagBot(client=client)
    load = runtime.load()
    start = time.perf_counter()
    dialogues = run_blocking(ragdive.arun_dialogues(
        docs, bot, judges=ragdive.Judges(weights.MODEL), client=client, turns=args.turns,
        role="precise", validation="once", max_regenerations=5, seed=args.seed,
        adapter_timeout=1800))
    wall = time.perf_counter() - start

    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0.0])
    for stats in runtime.call_log():
        row = rows[stage_of(stats)]
        row[0] += 1
        row[1] += stats.prompt_tokens
        row[2] += stats.reused_tokens
        row[3] += stats.completion_tokens
        row[4] += stats.seconds
    total = [sum(r[i] for r in rows.values()) for i in range(5)]
    print(f"\n{len(dialogues)} dialogues x {args.turns} turns, seed {args.seed}; errors: "
          f"{[d.errors for d in dialogues if d.errors] or 'none'}")
    print("\n| stage | calls | prompt tokens | reused | evaluated | completion tokens | seconds |")
    print("|---|---|---|---|---|---|---|")
    for name, (calls, prompt, reused, completion, seconds) in sorted(
            rows.items(), key=lambda item: -item[1][4]):
        print(f"| {name} | {calls} | {prompt:,} | {reused:,} | {prompt - reused:,} "
              f"| {completion:,} | {seconds:.0f} |")
    calls, prompt, reused, completion, seconds = total
    print(f"| total | {calls} | {prompt:,} | {reused:,} | {prompt - reused:,} | {completion:,} "
          f"| {seconds:.0f} |")
    print(f"\nwall {wall / 60:.1f} min for the dialogues (+{load:.0f} s model load); prompt "
          f"tokens evaluated per dialogue {(prompt - reused) / len(dialogues):,.0f} of "
          f"{prompt / len(dialogues):,.0f}; threads {runtime._threads()} "
          f"(one core is left to the event loop and the bot; see runtime._threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
