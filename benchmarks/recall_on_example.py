"""ragas' context recall on the embedded model, against an exact label, on the example's turns.

    python benchmarks/recall_on_example.py      # every committed check's runs (about 20 s)

Replays the dialogues of every check in ``example_project/recorded.py`` (seeds N to N+2,
each variant of the bot) from the committed response cache, with no model call, and takes
the follow-ups and first turns whose answer key states a figure. Such a key is in the
retrieved paragraphs exactly when each of its figures is: that is the label. Context recall
scores 1 when the judge finds every statement of the key in the paragraphs; a judge that
can tell scores 1 on the labelled-yes turns and less on the others (balanced accuracy).
The bot that retrieves one paragraph (``top_k`` 1) gives the turns whose key is missing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from unittest import mock

from pytest_ragdive.engine.text.english import numbers
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
sys.path.insert(0, str(EXAMPLE))


def main() -> int:
    from ragbot import RagBot
    from recorded import CHECKS, UNSEEN, VARIANTS, replayed

    client = LLMClient(ResponseCache(EXAMPLE / UNSEEN, "none"))
    seen: dict[tuple[str, str, str], tuple[bool, float]] = {}
    for check in CHECKS:
        with mock.patch.dict(os.environ, VARIANTS[check.variant]):  # the bot reads its knobs
            bot = RagBot(client=client)
        for seed in range(check.seed, check.seed + 3):
            # named: not scored by default on this model
            dialogues = replayed(bot, client, seed, metrics=("context_recall",))
            for turn in (t for d in dialogues for t in d.turns):
                judged = turn.judgements.get("context_recall")
                figures = numbers(turn.generated.ground_truth)
                if judged is None or judged.score is None or not figures:
                    continue
                contexts = " ".join(turn.answer.contexts)
                held = all(f in numbers(contexts) for f in figures)
                key = (turn.generated.ground_truth, contexts, turn.generated.rag_input)
                seen[key] = (held, judged.score)
    cases = list(seen.values())
    yes = [score for held, score in cases if held]
    no = [score for held, score in cases if not held]
    hit = sum(s >= 0.999 for s in yes) / max(len(yes), 1)
    miss = sum(s < 0.999 for s in no) / max(len(no), 1)
    print(f"{len(cases)} distinct turns whose answer key states a figure: {len(yes)} with every "
          f"figure in the retrieved paragraphs, {len(no)} without")
    print(f"context recall 1.0 on {sum(s >= 0.999 for s in yes)} of {len(yes)} of the first and "
          f"{sum(s >= 0.999 for s in no)} of {len(no)} of the second")
    print(f"balanced accuracy (score 1 = found): {(hit + miss) / 2:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
