"""Where the time of the README's main job goes, stage by stage, on the embedded model.

    python benchmarks/embedded.py                        # the example suite, live
    python benchmarks/embedded.py -- -k bike-share       # more pytest arguments after --

Runs ``pytest example_project -m ragdive`` in this process with a fresh response cache (every
call reaches the model; the bands are checked as in the main job), then prints per stage:
calls, prompt tokens, how many of them came from a stored prefix state instead of being
evaluated, completion tokens and seconds on the model; then the wall time, the thread count,
for how many tokens the grammar had to filter the whole vocabulary, and how many replies are
the committed recording's (``example_project/.ragdive/cache``) bit for bit.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

from pytest_ragdive.llm.embedded import runtime
from pytest_ragdive.llm.embedded.prefixes import CallStats

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
sys.path.insert(0, str(EXAMPLE))

from recorded import documents

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


def table(calls: list[CallStats], dialogues: int) -> str:
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0.0, 0.0])
    for stats in calls:
        row = rows[stage_of(stats)]
        for i, value in enumerate((1, stats.prompt_tokens, stats.reused_tokens,
                                   stats.completion_tokens, stats.seconds,
                                   stats.prefill_seconds)):
            row[i] += value
    total = [sum(r[i] for r in rows.values()) for i in range(6)]
    lines = ["| stage | calls | prompt tokens | reused | evaluated | completion tokens | seconds "
             "| prefill tok/s | decode tok/s |", "|---|---|---|---|---|---|---|---|---|"]
    for name, (n, prompt, reused, completion, seconds, prefill) in [
            *sorted(rows.items(), key=lambda item: -item[1][4]), ("total", total)]:
        lines.append(f"| {name} | {n:.0f} | {prompt:,.0f} | {reused:,.0f} | "
                     f"{prompt - reused:,.0f} | {completion:,.0f} | {seconds:.0f} | "
                     f"{(prompt - reused) / max(prefill, 1e-9):.0f} | "
                     f"{completion / max(seconds - prefill, 1e-9):.1f} |")
    _, prompt, reused, *_ = total
    lines.append(f"\nprompt tokens evaluated per dialogue: {(prompt - reused) / dialogues:,.0f} "
                 f"of {prompt / dialogues:,.0f}")
    return "\n".join(lines)


def compare(cache: Path, recording: Path) -> str:
    """How many replies in ``cache`` are the recording's reply for the same request."""
    same, differ, new = 0, 0, 0
    for entry in cache.rglob("*.json"):
        recorded = recording / entry.parent.name / entry.name
        if not recorded.exists():
            new += 1
        elif json.loads(entry.read_text())["response"] == json.loads(
                recorded.read_text())["response"]:
            same += 1
        else:
            differ += 1
    return (f"replies the same as the committed recording's: {same}; different: {differ}; "
            f"requests it does not hold: {new}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    load = runtime.load()
    with tempfile.TemporaryDirectory(prefix="ragdive-bench-") as cache:
        start = time.perf_counter()
        status = pytest.main([str(EXAMPLE), "-m", "ragdive", "-q",
                              f"--ragdive-cache-dir={cache}", *args.pytest_args])
        wall = time.perf_counter() - start
        same = compare(Path(cache), EXAMPLE / ".ragdive" / "cache")
    calls = runtime.call_log()
    dialogues = len(documents())
    sampling = runtime._sampling
    print(f"\n{table(calls, dialogues)}")
    print(f"\nwall {wall / 60:.1f} min for the suite (+{load:.0f} s model load), pytest exit "
          f"{int(status)}; llama.cpp threads {runtime._threads()} (see runtime._threads); "
          f"tokens for which the grammar filtered the whole vocabulary: "
          f"{sampling.filtered if sampling else 0}; {same}")
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
