#!/usr/bin/env python3
"""Benchmark of pytest-ragdive, run by hand (not a test):

    python benchmarks/bench.py            # everything, about 16 minutes on 2 cores
    python benchmarks/bench.py --quick    # one run per configuration, about 7 minutes
    python benchmarks/bench.py --only startup|concurrency|tokens|what-if
    python benchmarks/bench.py --what-if  # also: the proposed fixes, simulated (+5 minutes)
    python benchmarks/bench.py --tiny --what-if  # every section once, tiny: does it run?

It writes a throw-away pytest project into a temp dir (a conftest with the scripted fake
model of ``pytest_ragdive.llm.scripted`` answering after a fixed latency, an adapter that
sleeps a fixed latency, N documents, one ``@ragdive.conversation(turns=T)`` test) and
times real ``python -m pytest -m ragdive`` subprocesses on it, each with a fresh
``--ragdive-cache-dir`` (every model call is a miss and waits its latency) and
``--ragdive-update --ragdive-runs 1`` (no baseline needed: each item holds one dialogue
and records its band). See benchmarks/README.md for what each column means.

This file is the command line and the sections; the parts are in ``scheduling/``:
``workload`` (the generated project and the configurations), ``runner`` (the timed pytest
sessions), ``probe`` (the instrumented in-process dialogues), ``simulation`` (the engine's
structure, the ideal schedule, the tokens' fit) and ``tables`` (the report).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from scheduling import tables, workload
from scheduling.probe import probe, run_probe
from scheduling.runner import load, measure, measure_all, plugin_import_ms, time_startup
from scheduling.simulation import smallest_limit, structure


def section_concurrency(root: Path, repeats: int, sizes: workload.Sizes) -> str:
    """20 documents x 5 turns at C=16, 1 and 1000, after the in-process probe."""
    base = sizes.base
    shape = structure(base.turns, base.contexts)
    print(f"\n== concurrency (load {load()}) ==", flush=True)
    print(f"probing the engine in-process ({base.documents} documents, {base.turns} turns, "
          f"{base.contexts} contexts, C={base.concurrency}) ...", flush=True)
    p = run_probe(base)
    lines = tables.probe_lines(base, shape, p)
    for line in lines:
        print(line, flush=True)
    measured = [measure(root, cfg, repeats) for cfg in sizes.concurrency]
    return "\n".join(lines + tables.concurrency_report(base, shape, p, measured, repeats))


def section_what_if(root: Path, repeats: int, sizes: workload.Sizes) -> str:
    """The C=16 configuration with the proposed changes simulated from the conftest."""
    base = sizes.base
    critical = structure(base.turns, base.contexts).critical_path(
        base.model_latency, base.adapter_latency)
    needed = smallest_limit(base, 2 * critical)
    print(f"\n== what if (load {load()}) ==", flush=True)
    measured = measure_all(root, workload.what_if(needed, sizes), repeats)
    return tables.what_if_report(measured, critical, needed, repeats)


def section_tokens(root: Path, repeats: int, sizes: workload.Sizes) -> str:
    """Tokens per dialogue for 1, 3, 5 and 7 turns."""
    print(f"\n== tokens (load {load()}) ==", flush=True)
    measured = [measure(root, cfg, repeats) for cfg in sizes.tokens]
    return tables.tokens_report(measured)


def section_startup(root: Path, repeats: int, sizes: workload.Sizes) -> str:
    """The plugin's start-up cost in a project of trivial tests (200)."""
    print(f"\n== start-up (load {load()}) ==", flush=True)
    modules, tests = sizes.startup
    times = time_startup(workload.make_startup_project(root, modules, tests), repeats,
                         modules * tests)
    return tables.startup_report(times, plugin_import_ms(repeats), repeats, sizes.startup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--only", choices=("startup", "concurrency", "tokens", "what-if"))
    parser.add_argument("--what-if", action="store_true",
                        help="also run the C=16 case with the proposed fixes simulated")
    parser.add_argument("--keep", action="store_true", help="keep the generated projects")
    parser.add_argument("--tiny", action="store_true",
                        help="each section once on 2 documents x 2 turns: whether it runs")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(*json.loads(args.probe))))
        return
    root = Path(tempfile.mkdtemp(prefix="ragdive-bench-"))
    print(f"projects in {root}; {os.cpu_count()} cores; python {sys.version.split()[0]}; "
          f"load {load()}", flush=True)
    sizes = workload.TINY if args.tiny else workload.FULL
    few = args.quick or args.tiny
    sections = {
        "startup": lambda: section_startup(root, 1 if args.tiny else 5 if few else 11, sizes),
        "concurrency": lambda: section_concurrency(root, 1 if few else 3, sizes),
        "tokens": lambda: section_tokens(root, 1, sizes),
        "what-if": lambda: section_what_if(root, 1 if few else 3, sizes),
    }
    reports = []
    try:
        for name, run in sections.items():
            if args.only == name or (args.only is None and name != "what-if") or (
                    name == "what-if" and args.what_if):
                reports.append(f"## {name}\n\n{run()}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("\n\n" + "\n\n".join(reports) + f"\n\n(load at the end {load()})")


if __name__ == "__main__":
    main()
