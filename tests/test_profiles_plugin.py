"""Judge profiles in a pytest run: the ini file's profiles judge it, bands record them, a
recalibration makes bands stale, a bad profile file stops the run before anything runs,
and a run that holds no conversation never loads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragdive.calibration.files import dumps, judges_digest
from pytest_ragdive.engine.base.profile import Judgement, Profile

ALPHA = Path("__ragdive__") / "test_bot" / "test_bot[alpha].json"
CHANCE = Judgement(informative=False, balanced_accuracy=0.55, interval=(0.4, 0.7),
                      auc=0.535, cases=40, measured="the held-out split")


def profile(threshold: float = 0.5, digest: str | None = None) -> Profile:
    return Profile(judges=digest or judges_digest(), calibrated="2026-12-07, a test",
                   judgements={"context_retention": CHANCE,
                               "correctness": Judgement(informative=True, threshold=threshold)})


def run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("-p", "no:xdist", *args)


def test_the_profile_file_judges_the_run_and_its_bands_record_it(
    project: pytest.Pytester
) -> None:
    (project.path / "profiles.json").write_text(dumps({"fake/judge": profile()}))
    project.makeini("[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n"
                    "ragdive_profiles = profiles.json\n")
    update = run(project, "--ragdive-update")
    update.assert_outcomes(passed=2)
    update.stdout.fnmatch_lines([
        ("*note: context_retention not scored: fake/judge judged it at or near chance on "
         "labelled cases (its judge profile: context_retention balanced accuracy 0.550 "
         "[[]0.40, 0.70[]], AUC 0.535 on 40 cases); name it in ragdive_metrics*"),
        (f"*note: judge fake/judge scored with its profile from profiles.json (calibrated "
         f"2026-12-07, a test; bands record it as {profile().record()})*")])
    band = json.loads((project.path / ALPHA).read_text())
    assert band["produced_by"]["profiles"] == {"fake/judge": profile().record()}
    assert "context_retention" not in band["metrics"]
    run(project).assert_outcomes(passed=3)  # the two items and the test's verdict

    # calibrated again, with another threshold: the bands were scored with another profile
    (project.path / "profiles.json").write_text(dumps({"fake/judge": profile(0.6)}))
    stale = run(project)
    stale.assert_outcomes(failed=2)
    stale.stdout.fnmatch_lines([
        (f"*recorded for other settings (profiles: {{'fake/judge': '{profile().record()}'}} -> "
         f"{{'fake/judge': '{profile(0.6).record()}'}}); it is stale. Record it again with:"),
        "*pytest 'test_bot.py::test_bot' --ragdive-update"])


def test_without_a_profile_the_summary_says_the_judge_is_uncalibrated(
    project: pytest.Pytester
) -> None:
    result = run(project, "--ragdive-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        ("*note: judge fake/judge is uncalibrated: every check asked, every threshold at the "
         "plain reading (docs/judges.md). Calibrate it with: python -m pytest_ragdive calibrate "
         "--model fake/judge --out ragdive-profiles.json, then set ragdive_profiles = "
         "ragdive-profiles.json in the ini file")])
    band = json.loads((project.path / ALPHA).read_text())
    assert band["produced_by"]["profiles"]["fake/judge"].startswith("uncalibrated sha256 ")
    # a band from before profiles was scored at the embedded model's thresholds: stale here
    del band["produced_by"]["profiles"]
    (project.path / ALPHA).write_text(json.dumps(band))
    stale = run(project)
    stale.assert_outcomes(failed=1, passed=2)
    stale.stdout.fnmatch_lines([("*(profiles: {'fake/judge': 'uncalibrated sha256 *'} -> "
                                 "{'fake/judge': 'uncalibrated sha256 *'}); it is stale*")])


@pytest.mark.parametrize(("content", "message"), [
    (None, "ini ragdive_profiles: the judge profile file profiles.json cannot be read"),
    ("{", "ini ragdive_profiles: profiles.json is not a judge profile file: Invalid JSON"),
    (dumps({"fake/judge": profile(1.0)}).replace("1.0", "2.0"),
     "profiles.fake/judge.judgements.correctness.threshold: Input should be less than"),
    (dumps({"fake/judge": profile(digest="sha256 000000000000")}),
     ("the judge profile of fake/judge in profiles.json is stale: it was calibrated with other "
      "judge prompts (sha256 000000000000 -> sha256 ")),
], ids=["missing", "not json", "bad field", "stale"])
def test_a_bad_profile_file_stops_the_run_and_changes_nothing(
    project: pytest.Pytester, content: str | None, message: str
) -> None:
    if content is not None:
        (project.path / "profiles.json").write_text(content)
    project.makeini("[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n"
                    "ragdive_profiles = profiles.json\n")
    result = run(project, "--ragdive-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "calibrate --model" in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert not (project.path / "__ragdive__").exists()
    assert not (project.path / ".ragdive").exists()
    # a run with no conversation test never reads it
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    run(project, "test_plain.py").assert_outcomes(passed=1)


def test_a_run_without_conversations_loads_no_profile_module(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
import sys

def pytest_sessionfinish(session):
    print("\\nloaded:", " ".join(sorted(m for m in sys.modules if "profile" in m
                                        or "calibrat" in m or m.endswith(".cases"))))
""")
    pytester.makepyfile(test_mixed="""
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2)
def test_bot():
    pass

def test_plain():
    pass
""")
    pytester.makeini("[pytest]\nragdive_profiles = missing.json\n")
    result = pytester.runpytest_subprocess("-p", "no:langsmith_plugin", "-p", "no:cacheprovider",
                                           "-m", "not ragdive", "-s")
    result.assert_outcomes(passed=1, deselected=1)
    loaded = next(line for line in result.outlines if line.startswith("loaded:"))
    assert loaded.split()[1:] == []
