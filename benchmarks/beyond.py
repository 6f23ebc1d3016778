"""What the example's conversations beyond one document and one cooperative user hold.

    python benchmarks/beyond.py                    # replay example_project/beyond (seconds)
    python benchmarks/beyond.py --record-mode new  # live: what the cache lacks (about an hour)

Runs ``pytest beyond -m ragdive --ragdive-update`` in ``example_project`` against the committed
cache ``.ragdive/beyond`` (a replay needs no model; a miss is an error), reads the session's
JSON record and prints per test: dialogues held, the validator's rejections by category, and
what the test is about: the turns that use a second document of a group and the dialogues
that asked about each of their documents; openers used as they were written or reported as
unanswerable; premise turns and how many replies corrected them; vague turns and how many
replies asked which one was meant; return turns of the switching user against the others.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from statistics import fmean

from pytest_ragdive.engine.base.models import Dialogue, Turn
from pytest_ragdive.plugin.run_record import RunRecord

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def record(mode: str) -> RunRecord:
    """The session record of the beyond suite, replayed (or recorded, with ``mode`` new)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "beyond.json"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "beyond", "-m", "ragdive", "-p", "no:xdist",
             "--ragdive-update", f"--ragdive-record-mode={mode}",
             "--ragdive-cache-dir=.ragdive/beyond", f"--ragdive-json={out}", "-q"],
            cwd=EXAMPLE, capture_output=True, text=True, check=False)
        if not out.exists():
            sys.exit(f"pytest wrote no record (exit {done.returncode}):\n{done.stdout[-3000:]}")
        return RunRecord.model_validate_json(out.read_text())


def mean(values: list[float]) -> str:
    return f"{fmean(values):.2f} over {len(values)}" if values else "none"


def scored(turns: list[Turn], metric: str) -> list[float]:
    return [s for t in turns if (j := t.judgements.get(metric)) and (s := j.score) is not None]


def about(test: str, dialogues: list[Dialogue]) -> list[str]:
    """The figures of what ``test`` is about."""
    turns = [t for d in dialogues for t in d.turns]
    if test == "test_across_documents":
        other = sum(bool(set(t.generated.source.split("+")) - {d.turns[0].generated.source})
                    for d in dialogues for t in d.turns)
        return [f"turns about a document turn 1 was not about: {other} of {len(turns)}",
                f"cross-document turns (evidence from both): "
                f"{sum(t.generated.question_type == 'cross_document' for t in turns)} of {len(turns)}",
                f"dialogues that asked about each of their documents: "
                f"{sum(len({s for t in d.turns for s in t.generated.source.split('+')}) >= 2 for d in dialogues)}"
                f" of {len(dialogues)}"]
    if test == "test_from_real_first_messages":
        openers = {json.loads(line)["message"]
                   for line in (EXAMPLE / "beyond" / "openers.jsonl").read_text().splitlines()}
        return [f"turn 1 is a real opener as written: "
                f"{sum(bool(d.turns) and d.turns[0].generated.rag_input in openers for d in dialogues)}"
                f" of {len(dialogues)}",
                f"reported as unanswerable from the document: "
                f"{sum('opening message' in d.errors.get('dialogue', '') for d in dialogues)}"]
    if test == "test_mistaken_user":
        premised = [t for t in turns if t.generated.premise]
        return [f"turns stating a false premise: {len(premised)} of {len(turns)}",
                f"premise_corrected: {mean(scored(premised, 'premise_corrected'))} turns"]
    if test == "test_vague_user":
        vague = [t for t in turns if t.generated.readings]
        return [f"vague turns (several readings): {len(vague)} of {len(turns)}",
                f"clarified: {mean(scored(vague, 'clarified'))} turns"]
    if test == "test_switching_user":
        by_shift = {shift: [t for t in turns if t.generated.topic_shift == shift]
                    for shift in ("", "switch", "return")}
        return [f"{shift or 'first'} turns: {len(these)}; correctness "
                f"{mean(scored(these, 'correctness'))}, forgetfulness "
                f"{mean(scored(these, 'forgetfulness'))}" for shift, these in by_shift.items()]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record-mode", default="none", choices=("none", "new"))
    args = parser.parse_args(argv)
    run = record(args.record_mode)
    for test in run.tests:
        name = test.key.split("::")[-1]
        dialogues = [i.dialogue for i in test.items if i.dialogue is not None]
        attempts = sum(len(t.rejections) + 1 for d in dialogues for t in d.turns)
        categories = Counter(c for d in dialogues for t in d.turns for r in t.rejections
                             for c in r.validation.categories)
        held = sum(not d.errors.get("dialogue") for d in dialogues)
        rejected = attempts - sum(len(d.turns) for d in dialogues)
        # a run not held had every attempt at one turn rejected: 5 with the example's ini
        # (ragdive_max_regenerations = 4); its other turns' attempts are not in the record
        again = sum("not held" in line for i in test.items for line in i.result.unscored)
        print(f"\n{name}: {held} of {len(dialogues)} dialogues held, "
              f"{sum(len(d.turns) for d in dialogues)} turns; runs not held and held again with "
              f"the next seed (every attempt at a turn rejected): {again}")
        print(f"  rejected attempts in the dialogues held: {rejected} of {attempts} "
              f"({rejected / max(attempts, 1):.0%}; and the {again * 5}+ of the runs not held)"
              f"; by category: {', '.join(f'{c} {n}' for c, n in categories.most_common()) or 'none'}")
        for line in about(name, dialogues):
            print(f"  {line}")
        for d in dialogues:
            if d.errors.get("dialogue"):
                print(f"  {d.document_id}: {d.errors['dialogue'][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
