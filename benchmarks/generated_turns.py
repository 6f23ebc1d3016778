"""How the generator's turns in the example's recorded dialogues fare on the exact checks.

    python benchmarks/generated_turns.py                                  # the bands' runs
    RAGBOT_HISTORY=none python benchmarks/generated_turns.py \
        --cache .ragdive/history-none --seeds 100

Replays the example suite's dialogues from a response cache (no model call: a miss is an
error) and counts the generator's rejected attempts by cause and, over the follow-up turns
used: how many cannot be understood without the conversation (the user's message leaves out
something its stand-alone question names from earlier turns, and does not repeat the
subject), how many ask again what was asked, how many are typed as a question, how many were
used unvalidated; and how many answer keys say what their fact of the document says. Then
every turn, for reading.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import pytest_ragdive as ragdive
from pytest_ragdive.engine import checks
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
    follow_ups = leaning = repeated = questions = unvalidated = 0
    keys = supported = attempts = 0
    causes: Counter[str] = Counter()
    for dialogue in dialogues:
        if dialogue.errors.get("dialogue"):
            print(f"{dialogue.document_id}: {dialogue.errors['dialogue'][:200]}")
        doc = next(d for d in docs if d.id == dialogue.document_id)
        causes.update(dialogue.rejected_for)
        for turn in dialogue.turns:
            earlier = dialogue.turns[: turn.index - 1]
            asked = [q for t in earlier for q in (t.generated.rag_input,
                                                  t.generated.standalone_question)]
            told = [a for t in earlier for a in (t.generated.ground_truth, t.answer.answer)]
            g = turn.generated
            keys += 1
            supported += checks.unsupported_key(g, doc.text) is None
            attempts += 1 + len(turn.rejections)
            if earlier:
                follow_ups += 1
                # the user's message leaves out something its stand-alone question names,
                # only what earlier turns said, and does not repeat the subject
                leaning += (checks.leans_back(g.rag_input, g.standalone_question,
                                              [*asked, *told]) is None
                            and checks.refers_back(g.rag_input, asked, told) is None)
                repeated += checks.repeated_question(g, [t.generated for t in earlier]) is not None
                questions += checks.is_question(g.rag_input) is None
                unvalidated += not turn.validated
    rejected = attempts - keys
    print(f"{len(dialogues)} dialogues, {keys} turns, {attempts} generator attempts, "
          f"{rejected} rejected ({rejected / max(1, attempts):.0%}): "
          + ", ".join(f"{c} {n}" for c, n in causes.most_common()))
    print(f"follow-ups that need the conversation: {leaning} of {follow_ups}")
    print(f"follow-ups asking again: {repeated} of {follow_ups}")
    print(f"follow-ups typed as a question: {questions} of {follow_ups}")
    print(f"follow-ups used unvalidated (validation once): {unvalidated} of {follow_ups}")
    print(f"answer keys that say what their fact of the document says: {supported} of {keys}")
    for dialogue in dialogues:
        print(f"\n{dialogue.document_id}: {dialogue.scores}")
        for turn in dialogue.turns:
            g = turn.generated
            print(f"  {turn.index}. {g.rag_input!r} ({g.standalone_question!r})\n"
                  f"     fact: {g.evidence[:100]!r}\n     key: {g.ground_truth[:100]!r}\n"
                  f"     bot: {turn.answer.answer[:100]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
