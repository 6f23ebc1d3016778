"""Running the benchmark's pytest sessions as subprocesses and timing them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

from .workload import Config, make_project

#: Plugins that only slow start-up here; none of them takes part in a ragdive run.
#: (ragdive registers its xdist hooks only when xdist is loaded; one process needs none.)
PLUGINS_OFF = [
    "-p", "no:langsmith_plugin", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
    "-p", "no:benchmark", "-p", "no:syrupy", "-p", "no:anyio", "-p", "no:xdist",
    "-p", "no:xdist.looponfail",
]

SESSION = re.compile(r" in ([\d.]+)s")
OUTCOME = re.compile(r"(\d+) (passed|failed)")
SUMMARY = re.compile(
    r"dialogues (\d+), turns (\d+), validator rejections (\d+) .*model calls (\d+), "
    r"cache hits (\d+), tokens (\d+) in / (\d+) out")


@dataclass
class Run:
    """One pytest session: its times and the plugin's summary line."""

    process: float
    session: float
    dialogues: int
    turns: int
    rejections: int
    calls: int
    hits: int
    tokens_in: int
    tokens_out: int


def run_pytest(project: Path, cfg: Config, cache: Path) -> Run:
    """One pytest run; every item must pass."""
    command = [sys.executable, "-m", "pytest", "-m", "ragdive", "-q", *PLUGINS_OFF,
               "--ragdive-update", "--ragdive-runs", "1", "--ragdive-cache-dir", str(cache),
               "--ragdive-concurrency", str(cfg.concurrency)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    process = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    session = SESSION.search(lines[-1]) if lines else None
    outcomes = {kind: int(n) for n, kind in OUTCOME.findall(lines[-1] if lines else "")}
    summary = next((m for m in map(SUMMARY.search, lines) if m), None)
    complete = done.returncode == 0 and outcomes == {"passed": cfg.documents}
    if session is None or summary is None or not complete:
        raise SystemExit(
            f"pytest failed for {cfg}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    d, t, r, c, h, ti, to = map(int, summary.groups())
    if h:  # the cache is fresh: a hit means two requests were equal and one never waited
        raise SystemExit(f"{h} cache hits with a fresh cache for {cfg}: the script repeats "
                         f"requests (see first_question/next_question in COMMON)")
    return Run(process, float(session.group(1)), d, t, r, c, h, ti, to)


def load() -> str:
    """The load averages over 1, 5 and 15 minutes."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


@dataclass
class Measured:
    """The runs of one configuration, and their medians."""

    cfg: Config
    runs: list[Run] = field(default_factory=list)

    @property
    def session(self) -> float:
        return median([r.session for r in self.runs])

    @property
    def process(self) -> float:
        return median([r.process for r in self.runs])


def measure(root: Path, cfg: Config, repeats: int) -> Measured:
    return measure_all(root, [cfg], repeats)[0]


def measure_all(root: Path, configs: Sequence[Config], repeats: int) -> list[Measured]:
    """``repeats`` runs of each config, interleaved: load drifts hit all configs alike."""
    results = [Measured(cfg) for cfg in configs]
    for i in range(repeats):
        for result in results:
            cfg = result.cfg
            project = make_project(root, cfg)
            cache = project / f"cache-{cfg.concurrency}-{i}-{time.monotonic_ns()}"
            run = run_pytest(project, cfg, cache)
            shutil.rmtree(cache, ignore_errors=True)
            result.runs.append(run)
            print(f"  {cfg.label}: run {i + 1}/{repeats}: process {run.process:.2f}s, "
                  f"session {run.session:.2f}s, {run.calls} calls, {run.hits} cache hits "
                  f"(load {load()})", flush=True)
    return results


def time_startup(project: Path, repeats: int, tests: int = 200) -> dict[str, list[float]]:
    """Seconds of ``repeats`` runs of each arm: pytest with and without the plugin, in the
    default environment and lean (the other installed plugins switched off too), on a
    project of ``tests`` trivial tests."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    lean = [*command, *PLUGINS_OFF]
    arms = {
        "with ragdive": command, "-p no:ragdive": [*command, "-p", "no:ragdive"],
        "lean, with ragdive": lean, "lean, -p no:ragdive": [*lean, "-p", "no:ragdive"],
    }
    times: dict[str, list[float]] = {name: [] for name in arms}
    for argv in arms.values():  # warm the file system cache
        subprocess.run(argv, cwd=project, capture_output=True, check=True)
    for i in range(repeats):
        # each pair back to back, alternating which goes first, so that load drifts
        # hit both arms alike; the difference is taken pair by pair
        for pair in (list(arms)[:2], list(arms)[2:]):
            for name in (pair if i % 2 == 0 else pair[::-1]):
                start = time.perf_counter()
                done = subprocess.run(arms[name], cwd=project, capture_output=True, text=True,
                                      check=False)
                times[name].append(time.perf_counter() - start)
                if done.returncode != 0 or f"{tests} passed" not in done.stdout:
                    raise SystemExit(f"start-up run failed:\n{done.stdout[-2000:]}")
    return times


PLUGIN_IMPORTS = ("import pytest, _pytest.config; import pytest_ragdive.plugin, "
                  "pytest_ragdive.plugin.session")


def plugin_import_ms(repeats: int) -> list[float]:
    """The plugin's own import cost after pytest's, without the noise of whole pytest runs
    (``python -X importtime``), once per repeat."""
    imports = []
    for _ in range(repeats):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", PLUGIN_IMPORTS],
                              capture_output=True, text=True, check=True)
        total = 0
        for line in done.stderr.splitlines():
            parts = [part.strip() for part in line.split("|")]
            if len(parts) == 3 and parts[2] in ("pytest_ragdive", "pytest_ragdive.plugin.hooks",
                                                "pytest_ragdive.plugin.session"):
                total += int(parts[1])
        imports.append(total / 1000)
    return imports
