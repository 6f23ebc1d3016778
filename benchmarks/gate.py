"""The gate's operating characteristic on the example: how often a session exits non-zero.

    python benchmarks/gate.py            # every committed session, both rules (about 10 min)
    python benchmarks/gate.py --rules permutation --variants accepted

Each session is ``pytest -m ragdive`` in ``example_project/`` at one seed the bands were not
recorded with, replayed from the committed response cache of its variant (no model call: a
miss is an error, reported as "not recorded"), once per verdict rule. The accepted bot
should pass; the broken variants (no history, the first question only, one retrieved
paragraph) should fail, each through a named metric. Wilson 95% intervals.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"

#: every variant's sessions share one response cache: at one seed, their first turns are the
#: same requests
CACHE = ".ragdive/unseen"
#: the three documents the suite talked about before it grew to six (2026-12-02): their
#: checks replay with ``-k`` selecting them
FIRST_THREE = "bike-share or harbour-ferry or tram-network"
#: variant -> (environment of the bot, {documents selected (None: all): the seeds recorded in
#: CACHE}); a check at seed N also holds N+1, N+2, ... where it drew confirmation runs or held
#: a run again, so recorded seeds are 10 apart
VARIANTS: dict[str, tuple[dict[str, str], dict[str | None, tuple[int, ...]]]] = {
    # the six-document suite (2026-12-02); the three-document one's checks, the first three
    # documents of it; the six-document kb's are in git at fa0ed79 (benchmarks/README.md)
    "accepted": ({}, {None: (100,), FIRST_THREE: (100, 110)}),
    "history none": ({"RAGBOT_HISTORY": "none"}, {None: (100,), FIRST_THREE: (100, 110)}),
    "history first": ({"RAGBOT_HISTORY": "first"}, {None: ()}),
    "top_k 1": ({"RAGBOT_TOP_K": "1"}, {None: ()}),
}


@dataclass(frozen=True)
class Session:
    variant: str
    seed: int
    select: str | None
    rule: str
    exit_code: int
    worse: tuple[str, ...]  # the metrics that failed the session
    status: str
    runs: float  # candidate runs per document, on average
    recorded: bool


def replay(variant: str, seed: int, select: str | None, rule: str) -> Session:
    env, _ = VARIANTS[variant]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "ragdive", "-p", "no:xdist",
             "--ragdive-record-mode=none", f"--ragdive-cache-dir={CACHE}",
             f"--ragdive-seed={seed}", f"--ragdive-verdict={rule}", f"--ragdive-json={out}",
             *(("-k", select) if select else ())],
            cwd=EXAMPLE, env={**os.environ, **env}, capture_output=True, text=True, check=False)
        record = json.loads(out.read_text()) if out.exists() else {"tests": []}
    recorded = "no recorded response" not in done.stdout
    worse: set[str] = set()
    status, runs = "", []
    for test in record["tests"]:
        status = test["status"]
        worse |= {v["metric"] for v in test["verdicts"] if v["verdict"] == "worse"}
        if rule == "band":
            worse |= {m["name"] for m in test["metrics"] if m["verdict"] == "worse"}
            worse |= {m["name"] for i in test["items"] for m in i["metrics"]
                      if m["verdict"] == "worse"}
        runs += [i["runs"] for i in test["items"]]
    return Session(variant, seed, select, rule, done.returncode, tuple(sorted(worse)), status,
                   sum(runs) / len(runs) if runs else 0.0, recorded)


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def table(sessions: list[Session]) -> str:
    lines = ["| variant | documents | rule | sessions that fail [95% CI] | through | "
             "inconclusive | candidate runs per document | seeds |",
             "|---|---|---|---|---|---|---|---|"]
    keys = sorted({(s.variant, s.select or "", s.rule) for s in sessions},
                  key=lambda k: (list(VARIANTS).index(k[0]), k[1], k[2]))
    for variant, select, rule in keys:
        mine = [s for s in sessions
                if (s.variant, s.select or "", s.rule) == (variant, select, rule) and s.recorded]
        failed = [s for s in mine if s.exit_code != 0]
        lo, hi = wilson(len(failed), len(mine))
        through: dict[str, int] = {}
        for s in failed:
            for metric in s.worse:
                through[metric] = through.get(metric, 0) + 1
        named = ", ".join(f"{m} {n}" for m, n in sorted(through.items(), key=lambda x: -x[1]))
        inconclusive = sum(s.status == "inconclusive" for s in mine)
        runs = sum(s.runs for s in mine) / len(mine) if mine else 0.0
        lines.append(
            f"| {variant} | {select or 'all'} | {rule} | {len(failed)} of {len(mine)} "
            f"[{100 * lo:.0f}%, {100 * hi:.0f}%] | {named or '-'} | "
            f"{inconclusive if rule == 'permutation' else '-'} | {runs:.2f} | "
            f"{', '.join(str(s.seed) + ('✗' if s.exit_code else '') for s in mine)} |")
    missing = [f"{s.variant} {s.seed}" for s in sessions if not s.recorded]
    if missing:
        lines.append(f"\nnot recorded (left out): {', '.join(sorted(set(missing)))}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rules", nargs="+", default=["permutation", "band"],
                        choices=["permutation", "band"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    sessions = []
    for variant in args.variants:
        for select, seeds in VARIANTS[variant][1].items():
            for seed, rule in ((seed, rule) for seed in seeds for rule in args.rules):
                session = replay(variant, seed, select, rule)
                sessions.append(session)
                note = "" if session.recorded else " (not recorded)"
                print(f"{variant} seed {seed} {select or 'all'} {rule}: exit {session.exit_code} "
                      f"{'/'.join(session.worse)}{note}", file=sys.stderr, flush=True)
    if not sessions:
        print("no committed session to replay: VARIANTS lists no recorded seed")
        return 1
    print(table(sessions))
    print(f"\n{len(sessions)} replays in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
