"""The variance-aware verdict against the min-max band, on a scripted judge of known error.

    python benchmarks/gate_simulation.py                    # 76 s on 2 busy cores
    python benchmarks/gate_simulation.py --sessions 500     # quicker, wider intervals
    python benchmarks/gate_simulation.py --docs 1,2         # the suites of 1 and 2 documents

The model: D documents, R baseline runs of T turns each. Every follow-up turn (turns 2..T)
of an accepted bot is good with probability g0, of a broken one with probability g1. Two
judges score each follow-up, each right with probability q and wrong independently of the
other: forgetfulness is the share of follow-ups judged forgotten, context_retention the share
judged retained. A dialogue's score is that share over its T - 1 follow-ups. The candidate
draws k runs per document.

Rules compared, each over both metrics:

* new: ``pytest_ragdive.plugin.verdict.decide`` (stratified permutation test, Holm over the
  two metrics at --alpha, or every run of every document outside its band where no p can
  reach its threshold); the session is flagged when a metric is "worse".
* confirm: ``ragdive_confirm_scope = document``. Every document's
  first candidate run that leaves that document's band on the worse side (on any metric)
  draws 2 more runs with new seeds, or as many more as the plugin draws for the test to
  reach alpha / 2 (``reach.candidate_runs``: 4 with one document); then ``decide`` on every
  run drawn (1 or 3 per document, 1 or 5 with one).
* confirm-test: the plugin's default (``ragdive_confirm_scope = test``). When some
  document's first run leaves its
  band on the worse side, every document draws those runs.
* paired: the default at the default seed. The candidate's runs take the baseline's seeds
  (run j at baseline run j's seed, the runs past the baseline's at new seeds), confirmed as
  above, and ``decide`` tests the pairs where their number can reach alpha / 2.
* band: flagged when the first candidate run of any document leaves that document's min..max
  band of the R baseline runs on the worse side, on any metric.

Seeds differ in difficulty (``--seed-sd``): a (document, seed) shifts the chance of a good
follow-up by a normal draw on the logit scale, shared by both bots at that seed (the seed
draws the first question and the facts). Unpaired candidate runs take new seeds. At a seed,
a changed bot's conversation is drawn afresh: the harmless change ``g1 = g0`` is the false
alarm of the paired rule (an unchanged bot replays its baseline and cannot fail).

False-alarm rate: g1 = g0 (nothing changed). Power: g1 below g0 (``--broken``; 0.8, 0.6 and
0.45 unless given). Wilson 95% intervals.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from pytest_ragdive.plugin import reach
from pytest_ragdive.plugin.verdict import MetricVerdict, decide

SHAPES = ((3, 3, 1), (3, 3, 2), (3, 3, 3), (6, 3, 1), (6, 3, 2), (10, 3, 1), (10, 5, 2))
CONFIRMED = ((3, 3), (6, 3), (10, 3), (10, 5))  # D, R: k = 1, then confirmed
SMALL = ((1, 3), (2, 3), (1, 1))  # suites of one and two documents (issue 53), last
BROKEN = (0.8, 0.6, 0.45)  # the broken bots' good follow-ups, unless --broken says
SIMULATED = ("forgetfulness", "context_retention")


@dataclass(frozen=True)
class Job:
    rule: str  # "new" (its band counted on the same data), "confirm", "confirm-test" or "paired"
    docs: int
    runs: int
    k: int
    g1: float
    sessions: int
    seed: int
    q: float
    g0: float
    turns: int
    alpha: float
    seed_sd: float


@dataclass(frozen=True)
class Counts:
    job: Job
    flagged: int
    inconclusive: int  # sessions whose final decision has an inconclusive metric
    band_flagged: int
    candidate_runs: float  # per document, summed over all sessions


def dialogues(rng: np.random.Generator, job: Job, good: float, offsets: np.ndarray
              ) -> np.ndarray:
    """Scores, shape (metric, document, run): forgetfulness then context_retention, at
    seeds whose difficulty ``offsets`` (document, run) shifts ``good`` on the logit scale."""
    docs, runs = offsets.shape
    shape = (docs, runs, job.turns - 1)
    chance = 1 / (1 + np.exp(-(math.log(good / (1 - good)) + offsets)))
    truly_good = rng.random(shape) < chance[..., None]
    forgotten = ~truly_good ^ (rng.random(shape) >= job.q)
    retained = truly_good ^ (rng.random(shape) >= job.q)
    return np.stack([forgotten.mean(axis=-1), retained.mean(axis=-1)])


def by_metric(scores: np.ndarray) -> dict[str, dict[str, list[float]]]:
    return {metric: {f"doc{d}": list(row) for d, row in enumerate(scores[i])}
            for i, metric in enumerate(SIMULATED)}


def worse(verdicts: list[MetricVerdict]) -> bool:
    return any(v.verdict == "worse" for v in verdicts)


def undecided(verdicts: list[MetricVerdict]) -> bool:
    """Some verdict is inconclusive: more candidate runs would decide."""
    return any(v.verdict == "inconclusive" for v in verdicts)


def leaves_band(baseline: np.ndarray, first_run: np.ndarray) -> np.ndarray:
    """Per document: the first candidate run leaves its min..max band on the worse side."""
    return (first_run[0] > baseline[0].max(axis=1)) | (first_run[1] < baseline[1].min(axis=1))


def band_leaves(baseline: np.ndarray, first_run: np.ndarray) -> bool:
    """The band rule: some document's first candidate run leaves its band, worse."""
    return bool(leaves_band(baseline, first_run).any())


def confirmed(job: Job) -> int:
    """The candidate runs per document once confirmed, as the plugin draws them."""
    return reach.candidate_runs(job.docs, job.runs, len(SIMULATED), job.alpha, 2)


def simulate(job: Job) -> Counts:
    rng = np.random.default_rng(job.seed)
    flagged = inconclusive = band_flagged = 0
    candidate_runs = 0.0
    for _ in range(job.sessions):
        seeds = rng.normal(0.0, job.seed_sd, (job.docs, job.runs))
        baseline = dialogues(rng, job, job.g0, seeds)
        paired = job.rule == "paired"
        most = confirmed(job)
        # paired: run j at baseline run j's seed, the runs past the baseline's at new seeds
        unseen = rng.normal(0.0, job.seed_sd,
                            (job.docs, max(most - job.runs, 0) if paired else most))
        candidate = dialogues(rng, job, job.g1, np.concatenate([seeds[:, :most], unseen], axis=1)
                              if paired else unseen)
        base = by_metric(baseline)
        if job.rule != "new":
            leaves = leaves_band(baseline, candidate[:, :, 0])
            if job.rule == "confirm-test":
                leaves[:] = leaves.any()
            drawn = {m: {f"doc{d}": list(candidate[i, d, :most if leaves[d] else 1])
                         for d in range(job.docs)} for i, m in enumerate(SIMULATED)}
            # run j of every document has seed j: the baseline's own when paired
            runs_seeds = {m: {doc: list(range(len(r)) if paired else
                                        range(job.runs, job.runs + len(r)))
                              for doc, r in by_doc.items()} for m, by_doc in drawn.items()}
            base_seeds = {m: {doc: list(range(job.runs)) for doc in by_doc}
                          for m, by_doc in base.items()}
            verdicts = decide(base, drawn, alpha=job.alpha, seeds=(base_seeds, runs_seeds))
            used = int(sum(most if left else 1 for left in leaves)) / job.docs
        else:
            verdicts = decide(base, by_metric(candidate[:, :, :job.k]), alpha=job.alpha)
            used = job.k
        inconclusive += undecided(verdicts)
        flagged += worse(verdicts)
        band_flagged += band_leaves(baseline, candidate[:, :, 0])
        candidate_runs += used
    return Counts(job, flagged, inconclusive, band_flagged, candidate_runs)


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(hits: int, n: int, interval: bool = False) -> str:
    text = f"{100 * hits / n:.1f}%"
    if interval:
        lo, hi = wilson(hits, n)
        text += f" [{100 * lo:.1f}, {100 * hi:.1f}]"
    return text


def jobs(args: argparse.Namespace) -> list[Job]:
    common = dict(sessions=args.sessions, q=args.q, g0=args.g0, turns=args.turns,
                  alpha=args.alpha, seed_sd=args.seed_sd)
    out = []
    rules = ("confirm", "confirm-test", "paired")
    designs = ([("new", d, r, k) for d, r, k in SHAPES]
               + [(rule, d, r, 1) for rule in rules for d, r in CONFIRMED]
               + [("new", d, r, 1) for d, r in SMALL]
               + [(rule, d, r, 1) for rule in rules for d, r in SMALL])
    for i, (rule, d, r, k) in enumerate(designs):  # a design's seeds whatever --docs keeps
        if args.docs and d not in args.docs:
            continue
        for j, g1 in enumerate((args.g0, *args.broken)):
            out.append(Job(rule, d, r, k, g1, seed=args.seed * 1000 + 10 * i + j, **common))
    return out


def table(results: list[Counts], g0: float, broken: tuple[float, ...]) -> str:
    rows: dict[tuple[str, int, int, int], dict[float, Counts]] = {}
    for c in results:
        rows.setdefault((c.job.rule, c.job.docs, c.job.runs, c.job.k), {})[c.job.g1] = c
    head = ("| rule | D × R × k | false alarm [95% CI] | inconclusive, unchanged | "
            + " | ".join(f"power g1={g}" for g in broken)
            + " | mean k, unchanged | band false alarm [95% CI] | band power "
            + " / ".join(str(g) for g in broken) + " |")
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for (rule, d, r, k), by_g in rows.items():
        null, n = by_g[g0], by_g[g0].job.sessions
        shape = (f"{d} × {r} × {k}" if rule == "new"
                 else f"{d} × {r} × 1 or {confirmed(by_g[g0].job)}")
        band = (rate(null.band_flagged, n, True),
                " / ".join(rate(by_g[g].band_flagged, n) for g in broken))
        lines.append(
            f"| {rule} | {shape} | {rate(null.flagged, n, True)} | {rate(null.inconclusive, n)} | "
            + " | ".join(rate(by_g[g].flagged, n) for g in broken)
            + f" | {null.candidate_runs / n:.2f} | "
            + (f"{band[0]} | {band[1]} |" if rule == "new" else "— | — |"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=2000, help="per configuration")
    parser.add_argument("--q", type=float, default=0.88, help="judge accuracy")
    parser.add_argument("--g0", type=float, default=0.95, help="accepted bot's good follow-ups")
    parser.add_argument("--turns", type=int, default=5, help="turns per dialogue (T)")
    parser.add_argument("--broken", type=lambda text: tuple(map(float, text.split(","))),
                        default=BROKEN, help="the broken bots' good follow-ups, e.g. 0.6,0.45")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seed-sd", type=float, default=0.0,
                        help="how much seeds differ in difficulty (logit scale)")
    parser.add_argument("--docs", type=lambda text: tuple(map(int, text.split(","))),
                        default=(), help="only the designs of these numbers of documents, "
                        "e.g. 1,2,3")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    todo = jobs(args)
    todo.sort(key=lambda j: -j.docs * j.k)  # the slowest first, for an even spread
    with ProcessPoolExecutor(args.workers) as pool:
        done = {c.job: c for c in pool.map(simulate, todo)}
    results = [done[j] for j in jobs(args)]
    print(f"q = {args.q}, g0 = {args.g0}, T = {args.turns} turns, seed sd {args.seed_sd}, "
          f"alpha = {args.alpha} "
          f"(Holm over {len(SIMULATED)} metrics), {args.sessions} sessions per cell\n")
    print(table(results, args.g0, args.broken))
    print(f"\n{time.perf_counter() - start:.0f} s on {args.workers} workers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
