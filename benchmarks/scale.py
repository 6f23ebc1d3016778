#!/usr/bin/env python3
"""How the plugin behaves as a suite grows: 20 to 200 documents x 5 turns (not a test).

    python benchmarks/scale.py                    # 20, 50, 100, 200 documents, C = 32
    python benchmarks/scale.py --documents 20 50  # quicker
    python benchmarks/scale.py --tiny             # 2 documents x 2 turns: does it run?

Each size is one real ``python -m pytest -m ragdive`` subprocess on the scheduling
benchmark's generated project (``scheduling/workload.py``: the scripted model answering
after 0.2 s, an adapter answering after 0.05 s, every call a cache miss) with
``--ragdive-update --ragdive-runs 1 --ragdive-json --ragdive-report``. Reported: the
session's wall time against ``ideal@C`` (the best schedule under the limit of calls in
flight, ``scheduling/simulation.py``), the process's peak memory (``ru_maxrss``), and the
sizes of the JSON record and the HTML report; then how each grows from the smallest size.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scheduling import workload
from scheduling.runner import PLUGINS_OFF
from scheduling.simulation import ideal_makespan


def run(root: Path, documents: int, concurrency: int,
        base: workload.Config = workload.BASE) -> dict[str, float]:
    cfg = replace(base, label=f"{documents} documents", documents=documents,
                  concurrency=concurrency)
    project = workload.make_project(root, cfg)
    command = [sys.executable, "-m", "pytest", "-m", "ragdive", "-q", *PLUGINS_OFF,
               "--ragdive-update", "--ragdive-runs", "1",
               "--ragdive-cache-dir", str(project / f"cache-{time.monotonic_ns()}"),
               "--ragdive-concurrency", str(concurrency),
               "--ragdive-json=run.json", "--ragdive-report=report.html"]
    log = project / "pytest.log"
    start = time.perf_counter()
    with log.open("w") as out:
        child = subprocess.Popen(command, cwd=project, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)  # the child's own peak memory
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"pytest failed at {documents} documents:\n{log.read_text()[-3000:]}")
    peak = usage.ru_maxrss / 1024
    return {"documents": documents, "wall": wall, "ideal": ideal_makespan(cfg),
            "peak_mb": peak, "json_mb": (project / "run.json").stat().st_size / 2**20,
            "html_mb": (project / "report.html").stat().st_size / 2**20}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, nargs="+", default=[20, 50, 100, 200])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--tiny", action="store_true",
                        help="2 documents x 2 turns (bench.py --tiny's): whether it runs")
    args = parser.parse_args(argv)
    base = workload.TINY.base if args.tiny else workload.BASE
    if args.tiny:
        args.documents = [base.documents]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.documents:
            rows.append(run(Path(tmp) / f"d{n}", n, args.concurrency, base))
            print(f"{n} documents: {rows[-1]}", file=sys.stderr, flush=True)
    base = rows[0]
    print(f"| documents | wall s | ideal@{args.concurrency} s | wall / ideal | peak memory MB | "
          f"JSON record MB | HTML report MB | growth vs {base['documents']}: wall / memory / "
          f"JSON / HTML |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        k = r["documents"] / base["documents"]
        growth = " / ".join(f"{r[key] / base[key]:.1f}×" for key in
                            ("wall", "peak_mb", "json_mb", "html_mb"))
        print(f"| {r['documents']} | {r['wall']:.1f} | {r['ideal']:.1f} | "
              f"{r['wall'] / r['ideal']:.2f} | {r['peak_mb']:.0f} | {r['json_mb']:.2f} | "
              f"{r['html_mb']:.2f} | {growth} (documents {k:g}×) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
