"""How the generator's turns in the example's recorded dialogues fare on the exact checks.

    python benchmarks/generated_turns.py                       # the bands' runs
    RAGBOT_HISTORY=none python benchmarks/generated_turns.py \
        --cache .ragdive/unseen --seeds 100

Replays the example suite's dialogues from a response cache (no model call: a miss is an
error) and counts, over the follow-up turns that were used: how many pass the exact check
(a question that repeats none of the conversation's subject), how many depend on the
conversation (the message leaves out a word its
stand-alone question names that the conversation said), how many ask again what was asked,
how many answer keys match a quoted sentence of the document with every figure, and how many
turns were used without the validator model's approval (``validation = once``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest_ragdive as ragdive
from pytest_ragdive.engine import checks, follow_ups
from pytest_ragdive.engine.dialogue import run_blocking
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=".ragdive/cache", help="relative to example_project")
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(EXAMPLE))
    from ragbot import RagBot

    client = LLMClient(ResponseCache(EXAMPLE / args.cache, "none"))
    docs = ragdive.load_documents(str(EXAMPLE / "kb" / "[bht]*.md"))
    dialogues = [
        d for seed in map(int, args.seeds.split(","))
        for d in run_blocking(ragdive.arun_dialogues(
            docs, RagBot(client=client), judges=ragdive.Judges("embedded/qwen2.5-coder-1.5b"),
            client=client, turns=3, role="precise", validation="once", max_regenerations=4,
            seed=seed))
    ]
    n_follow_ups = leaning = depends = repeated = 0
    keys = supported = unchecked = attempts = 0
    for dialogue in dialogues:
        for what in ("dialogue", "generation"):
            if dialogue.errors.get(what):
                print(f"{dialogue.document_id}: {dialogue.errors[what][:200]}")
        doc = next(d for d in docs if d.id == dialogue.document_id)
        for turn in dialogue.turns:
            earlier = dialogue.turns[: turn.index - 1]
            keys += 1
            supported += checks.unsupported_key(turn.generated, doc.text) is None
            attempts += 1 + len(turn.rejections)
            if earlier:
                n_follow_ups += 1
                said = follow_ups.said_before(earlier)
                leaning += follow_ups.leans_back(turn.generated, earlier) is None
                depends += follow_ups.depends_on_conversation(
                    turn.generated.rag_input, turn.generated.standalone_question, said)
                repeated += checks.repeated_question(
                    turn.generated, [t.generated for t in earlier]) is not None
                unchecked += not turn.validated
    print(f"{len(dialogues)} dialogues, {keys} turns, {attempts} generator attempts")
    print(f"follow-up turns passing the exact check (a question, leaning back): "
          f"{leaning} of {n_follow_ups}")
    print(f"follow-up turns whose message leaves out something its stand-alone question names "
          f"and the conversation said: {depends} of {n_follow_ups}")
    print(f"follow-up turns asking again: {repeated} of {n_follow_ups}")
    print(f"answer keys matching a quoted sentence with every figure: {supported} of {keys}")
    print(f"follow-up turns used without the validator model's approval: {unchecked}")
    for dialogue in dialogues:
        print(f"\n{dialogue.document_id}: {dialogue.scores}")
        for turn in dialogue.turns:
            print(f"  {turn.index}. {turn.generated.rag_input!r} -> {turn.answer.answer[:90]!r}"
                  f"  [key: {turn.generated.ground_truth[:60]!r}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
