"""The gate's operating characteristic on the examples: how often a session exits non-zero.

    python benchmarks/gate.py            # every committed session, both rules (about 10 min)
    python benchmarks/gate.py --rules permutation --variants accepted --examples clinic
    python benchmarks/gate.py --record reworded 100 --paired   # a new check, live (20-40 min)
    python benchmarks/gate.py --record "history none" 100 --example clinic
    python benchmarks/gate.py --sizing [__ragdive__/test_bot]   # documents a change needs
    python benchmarks/gate.py --markdown benchmarks/results/gate.md --fill README.md

``--markdown PATH`` also writes the table printed, under its command, date and machine, and
``--fill DOC ...`` puts it into each DOC's ``<!-- example-gate-table -->`` block
(``tests/test_docs.py`` checks that the README's block is the file's table).

Each session is ``pytest -m ragdive`` in a copy of an example (CityGuide, ``example_project/``,
or the clinic, ``example_clinic/``, listed in ``example_project/recorded.py``) at one seed the
committed bands were not recorded with, replayed from the committed response cache (no
model call: a miss is an error, reported as "not recorded"), once per verdict rule. An
unpaired check is judged against the committed bands (seeds 0-2); a paired one against bands
recorded from the accepted bot's runs at its own seeds, as a check at the default seed is.
The accepted bot should pass; the broken variants (no history, the first question only, one
retrieved paragraph) should fail, each through a named metric. Wilson 95% intervals.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
sys.path.insert(0, str(EXAMPLE))

from recorded import BANDS, EXAMPLES, UNSEEN, VARIANTS, Check, Example


@dataclass(frozen=True)
class Session:
    example: str
    variant: str
    seed: int
    select: str | None
    paired: bool
    rule: str
    exit_code: int
    worse: tuple[str, ...]  # the metrics that failed the session
    status: str
    runs: float  # candidate runs per document, on average
    recorded: bool


def _pytest(example: Example, cwd: Path, seed: int, env: dict[str, str], *args: str,
            mode: str = "none") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "ragdive", "-p", "no:xdist",
         f"--ragdive-record-mode={mode}", f"--ragdive-cache-dir={example.folder / UNSEEN}",
         f"--ragdive-seed={seed}", *args],
        cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, check=False)


def copy(example: Example, tmp: Path) -> Path:
    """A copy of ``example``'s folder in ``tmp`` beside one of CityGuide's, whose bot every
    example imports; no response cache (the session reads the committed one)."""
    ignore = shutil.ignore_patterns(".ragdive", "__pycache__")
    for folder in {EXAMPLE, example.folder}:
        shutil.copytree(folder, tmp / folder.name, ignore=ignore)
    return tmp / example.folder.name


def replay(example: Example, check: Check, rule: str, mode: str = "none") -> Session:
    """One session of ``check`` under ``rule``, in a copy of ``example`` (a paired check
    first records its bands there from the accepted bot's runs at the check's seeds).
    ``mode="new"`` makes it live: what the committed cache lacks is asked of the models and
    recorded there."""
    with tempfile.TemporaryDirectory() as tmp:
        project = copy(example, Path(tmp))
        if check.paired:
            _pytest(example, project, check.seed, {}, "--ragdive-update", mode=mode)
        out = Path(tmp) / "run.json"
        done = _pytest(example, project, check.seed, VARIANTS[check.variant],
                       f"--ragdive-verdict={rule}", f"--ragdive-json={out}",
                       *(("-k", check.select) if check.select else ()), mode=mode)
        if mode != "none":
            print(done.stdout[-6000:], file=sys.stderr)
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
    return Session(example.name, check.variant, check.seed, check.select, check.paired, rule,
                   done.returncode,
                   tuple(sorted(worse)), status, sum(runs) / len(runs) if runs else 0.0,
                   recorded)


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def table(sessions: list[Session]) -> str:
    lines = [("| example | variant | documents | baseline | rule | sessions that fail [95% CI] | "
              "through | inconclusive | candidate runs per document | seeds |"),
             "|---|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(s.example, s.variant, s.select or "", s.paired, s.rule) for s in sessions},
                  key=lambda k: (list(EXAMPLES).index(k[0]), list(VARIANTS).index(k[1]), *k[2:]))
    for key in keys:
        name, variant, select, paired, rule = key
        mine = [s for s in sessions if s.recorded
                and (s.example, s.variant, s.select or "", s.paired, s.rule) == key]
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
            f"| {name} | {variant} | {select or 'all'} | "
            f"{'at the seeds: paired' if paired else 'seeds 0-2: unpaired'} | {rule} | "
            f"{len(failed)} of {len(mine)} "
            f"[{100 * lo:.0f}%, {100 * hi:.0f}%] | {named or '-'} | "
            f"{inconclusive if rule == 'permutation' else '-'} | {runs:.2f} | "
            f"{', '.join(_seed(s) for s in mine)} |")
    missing = [f"{s.example} {s.variant} {s.seed}" for s in sessions if not s.recorded]
    if missing:
        lines.append(f"\nnot recorded (left out): {', '.join(sorted(set(missing)))}")
    return "\n".join(lines)


def _seed(session: Session) -> str:
    """A session's seed, ✗ when it failed."""
    return f"{session.seed}{'✗' if session.exit_code else ''}"


def sizing(folder: Path, changes: tuple[float, ...] = (0.1, 0.2, 0.3), level: float = 0.01
           ) -> str:
    """Per metric, the within-document spread of the baseline runs in ``folder``'s item band
    files and the documents that detect each change 80% of the time (as many baseline runs
    as the files hold, 1 or 3 candidate runs each), at Holm's first threshold over 5
    metrics."""
    from pytest_ragdive.plugin import power

    runs: dict[str, list[np.ndarray]] = {}
    for band in sorted(folder.glob("*[[]*].json")):
        for metric, entry in json.loads(band.read_text())["metrics"].items():
            runs.setdefault(metric, []).append(np.asarray(entry["runs"], dtype=float))
    lines = ["| metric | run-to-run SD | " + " | ".join(
        f"change {c}: documents, 1 / 3 candidate runs" for c in changes) + " |",
        "|---|---|" + "---|" * len(changes)]
    for metric, groups in sorted(runs.items()):
        sd, r = power.pooled_sd(groups), round(float(np.median([g.size for g in groups])))
        cells = [" / ".join(str(power.documents_for(c, sd, 1 / r + 1 / k, level,
                                                    math.comb(r + k, k)) or "-")
                            for k in (1, 3)) for c in changes]
        lines.append(f"| {metric} | {sd:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


#: the docs' blocks that quote the table: <!-- NAME --> ... <!-- /NAME -->
BLOCK = "example-gate-table"


def caption(argv: list[str]) -> str:
    """The command, date and machine of a table, said once above it."""
    shown, skip = [], False
    for arg in argv:  # where the table goes is not how it was measured
        if arg in ("--markdown", "--fill"):
            skip = True
        elif not (skip and not arg.startswith("-")):
            shown.append(arg)
            skip = False
    command = shlex.join(["python", "benchmarks/gate.py", *shown])
    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (f"`{command}` · {datetime.date.today().isoformat()} · {os.cpu_count()} cores "
            f"({platform.machine()}), Python {platform.python_version()}{load}")


def publish(text: str, markdown: Path | None, fill: list[Path]) -> None:
    """Write the table to ``markdown`` and into the ``BLOCK`` of each file of ``fill``
    (``tests/test_docs.py`` checks that the blocks and the file agree)."""
    if markdown:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(text + "\n", encoding="utf-8")
    pattern = re.compile(rf"(<!-- {BLOCK} -->\n).*?(<!-- /{BLOCK} -->)", re.DOTALL)
    for doc in fill:
        source = doc.read_text(encoding="utf-8")
        if not pattern.search(source):
            raise SystemExit(f"{doc} has no <!-- {BLOCK} --> ... <!-- /{BLOCK} --> block")
        doc.write_text(pattern.sub(lambda m: m[1] + text + "\n" + m[2], source, count=1),
                       encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rules", nargs="+", default=["permutation", "band"],
                        choices=["permutation", "band"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--examples", nargs="+", default=list(EXAMPLES), choices=list(EXAMPLES))
    parser.add_argument("--record", nargs=2, metavar=("VARIANT", "SEED"),
                        help="hold a new check live on all documents of --example (then list "
                             "it in example_project/recorded.py)")
    parser.add_argument("--example", default="cityguide", choices=list(EXAMPLES),
                        help="with --record: the example")
    parser.add_argument("--paired", action="store_true",
                        help="with --record: against bands of the accepted bot at its seeds")
    parser.add_argument("--sizing", nargs="?", const=BANDS, type=Path, metavar="FOLDER",
                        help="print the documents a change needs, from the spread of the "
                             "item band files in FOLDER (default: the example's)")
    parser.add_argument("--markdown", type=Path, metavar="PATH",
                        help="also write the table printed, under its command, date and "
                             "machine, to PATH (e.g. benchmarks/results/gate.md)")
    parser.add_argument("--fill", type=Path, nargs="+", default=[], metavar="DOC",
                        help=f"also put it into DOC's <!-- {BLOCK} --> block (README.md)")
    args = parser.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    if args.sizing:
        text = sizing(args.sizing)
        print(text)
        publish(f"{caption(argv)}\n\n{text}", args.markdown, args.fill)
        return 0
    if args.record:
        variant, seed = args.record
        if variant not in VARIANTS:
            parser.error(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
        session = replay(EXAMPLES[args.example],
                         Check(variant, int(seed), None, "", None, args.paired),
                         "permutation", mode="new")
        print(f"{args.example} {variant} seed {seed}: exit {session.exit_code}, {session.status}, "
              f"worse: {', '.join(session.worse) or '-'}, {session.runs:.2f} runs per document")
        return 0
    start = time.perf_counter()
    sessions = []
    checks = [(EXAMPLES[name], check) for name in args.examples
              for check in EXAMPLES[name].checks if check.variant in args.variants]
    for example, check in checks:
        for rule in args.rules:
            session = replay(example, check, rule)
            sessions.append(session)
            note = "" if session.recorded else " (not recorded)"
            print(f"{example.name} {check.variant} seed {check.seed} {check.select or 'all'}"
                  f"{' paired' if check.paired else ''} {rule}: exit "
                  f"{session.exit_code} {'/'.join(session.worse)}{note}",
                  file=sys.stderr, flush=True)
    if not sessions:
        print("no committed check to replay for these variants (example_project/recorded.py)")
        return 1
    text = table(sessions)
    print(text)
    print(f"\n{len(sessions)} replays in {time.perf_counter() - start:.0f} s")
    publish(f"{caption(argv)}\n\n{text}", args.markdown, args.fill)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
