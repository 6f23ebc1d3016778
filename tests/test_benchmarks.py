"""The hand-run scheduling benchmarks still run: each once on a tiny size (2 documents x 2
turns, ``--tiny``), so that a change to the plugin that breaks one shows here, not at the
next measurement (issue 53: both failed every dialogue, and no test saw it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.first  # about a minute on 2 cores: the two run side by side
def test_bench_and_scale_run_on_a_tiny_size(tmp_path: Path) -> None:
    commands = {"bench.py": ["--tiny", "--what-if"], "scale.py": ["--tiny"]}
    running = {name: subprocess.Popen([sys.executable, str(BENCHMARKS / name), *args],
                                      cwd=tmp_path, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
                for name, args in commands.items()}
    out = {name: child.communicate(timeout=600)[0] for name, child in running.items()}
    for name, child in running.items():
        assert child.returncode == 0, f"{name} --tiny failed:\n{out[name][-4000:]}"
    # every section reported (bench.py stops on a failed item and on a cache hit: a
    # request repeated across documents would not wait its latency)
    for section in ("startup", "concurrency", "tokens", "what-if"):
        assert f"## {section}\n" in out["bench.py"]
    assert "\n| 2 | " in out["scale.py"]  # the row of 2 documents


def _run(name: str, *args: str, **env: str) -> str:
    done = subprocess.run([sys.executable, str(BENCHMARKS / name), *args], check=False,
                          capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert done.returncode == 0, f"{name} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
    return done.stdout


def test_the_replaying_benchmarks_read_the_committed_recordings() -> None:
    """``generated_turns.py`` and ``beyond.py`` replay the example's caches (a miss is an error):
    both broke once when the plugin's records changed and no test ran them."""
    out = _run("generated_turns.py")
    follow_ups = int(re.search(r"single out .*: \d+ of (\d+)", out)[1])
    placed = [int(n) for n in re.findall(r"^  (?:ranks it first|retrieves it below another "
                                         r"document|does not retrieve it): (\d+) of", out, re.MULTILINE)]
    assert len(placed) == 3 and sum(placed) == follow_ups > 0
    assert re.search(r"validator rejection rate: \d+ of \d+ attempts", out)
    out = _run("beyond.py")
    assert re.search(r"^test_\w+: \d+ of \d+ dialogues held, \d+ turns", out, re.MULTILINE), out[-2000:]
