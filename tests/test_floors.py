"""Floors and ceilings as users meet them: an absolute bound on a test function's mean over
its documents, in the marker or the ini file, that fails the test's verdict whatever the
baseline says, and shows beside it in the summary, JUnit, Markdown and HTML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from conftest import PROJECT_INI

from pytest_ragdive.engine.base.settings import SettingError, check, parse
from pytest_ragdive.plugin import merge
from pytest_ragdive.plugin.aggregate import held
from pytest_ragdive.plugin.records import ItemResult
from pytest_ragdive.plugin.run_record import RunRecord

#: three turns with a bot that forgets from turn 3: every document's context_retention and
#: forgetfulness are 0.5, correctness 1.0
TEST = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=3, runs=2, metrics=["correctness", "context_retention",
                                                "forgetfulness"]{limits})
def test_bot(ragdive_dialogue):
    pass
'''
FAILING = ', floors={"context_retention": 0.9}'


def with_limits(project: pytest.Pytester, limits: str, ini: str = "") -> None:
    project.makepyfile(test_bot=TEST.format(limits=limits))
    project.makeini(PROJECT_INI + ini)


@pytest.fixture
def floored(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The project's bands recorded with a floor above the mean: the update says so, and
    writes the bands all the same."""
    monkeypatch.setenv("BOT_MODE", "forgets late")
    with_limits(project, FAILING)
    result = project.runpytest("-m", "ragdive", "--ragdive-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*context_retention  mean 0.500   band [[]0.500, 0.500[]]   floor 0.9: below (on "
        "update: the bands are recorded all the same)*",
        "recorded, not failed (an update): test_bot.py::test_bot: context_retention mean 0.5 "
        "below its floor 0.9; a check will fail"])
    assert (project.path / "__ragdive__" / "test_bot" / "test_bot.aggregate.json").is_file()
    return project


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_a_floor_above_the_mean_fails_the_test_whatever_the_baseline(floored, workers) -> None:
    result = floored.runpytest("-m", "ragdive", "--junitxml=junit.xml", "--ragdive-json=run.json",
                                "--ragdive-markdown=summary.md", "--ragdive-report=report.html",
                                *workers)
    result.assert_outcomes(passed=2, failed=1)  # the items pass; the test's verdict fails
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "test_bot.py::test_bot  (2 documents): passed, context_retention below its floor",
        "*context_retention  mean 0.500   band [[]0.500, 0.500[]]   floor 0.9: below (fails the "
        "test)   not worse: *",
        "FAILED: test_bot.py::test_bot: context_retention mean 0.5 below its floor 0.9",
        "FAILED test_bot.py::test_bot - context_retention mean 0.5 below its floor 0.9",
    ])
    cases = {c.get("name"): c for c in ET.parse(floored.path / "junit.xml").iter("testcase")}
    failure = cases["test_bot"].find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("context_retention mean 0.5 below its floor 0.9")
    assert "permutation verdict: passed" in failure.get("message", "")
    properties = {p.get("name"): p.get("value") for p in cases["test_bot"].iter("property")}
    assert properties["ragdive.verdict"] == "passed"  # the baseline's, beside the floor's
    assert properties["ragdive.floor.context_retention"] == (
        "context_retention mean 0.5 below its floor 0.9")
    (test,) = RunRecord.model_validate_json((floored.path / "run.json").read_text()).tests
    assert test.status == "passed" and test.failed
    assert [(m.metric, m.kind, m.bound, m.mean, m.outcome) for m in test.limits] == [
        ("context_retention", "floor", 0.9, 0.5, "below")]
    markdown = (floored.path / "summary.md").read_text()
    assert markdown.startswith("### ❌ ragdive: 1 of 1 test(s) failed")
    assert "| ❌ context_retention below its floor (baseline: passed) |" in markdown
    assert "- ❌ context_retention mean 0.5 below its floor 0.9" in markdown
    html = (floored.path / "report.html").read_text()
    assert "Floors and ceilings: absolute bounds on the mean over its documents" in html
    assert ('<span class="b worse">below</span> context_retention mean 0.5 below its floor 0.9'
            in html)
    # a merge of shard records decides the floors as the session did
    assert merge.main([str(floored.path / "run.json")]) == 1


def test_a_floor_met_and_a_ceiling_missed_and_no_stale_band(floored) -> None:
    # a floor or ceiling is not what a band was recorded with: changing it stales nothing
    with_limits(floored, ', floors={"context_retention": 0.5, "correctness": 0.8}')
    met = floored.runpytest("-m", "ragdive", "--ragdive-record-mode=none")
    met.assert_outcomes(passed=3)
    met.stdout.fnmatch_lines([
        "test_bot.py::test_bot  (2 documents): passed",
        "*context_retention  mean 0.500   band [[]0.500, 0.500[]]   floor 0.5: met   not worse*",
        "*correctness        mean 1.000   band [[]1.000, 1.000[]]   floor 0.8: met   not worse*",
    ])
    with_limits(floored, ', ceilings={"forgetfulness": 0.25}')
    above = floored.runpytest("-m", "ragdive", "--ragdive-record-mode=none")
    assert above.ret == pytest.ExitCode.TESTS_FAILED
    above.stdout.fnmatch_lines([
        "FAILED test_bot.py::test_bot - forgetfulness mean 0.5 above its ceiling 0.25"])


def test_ini_floors_apply_to_the_tests_that_score_them_and_the_marker_overrides(
    floored,
) -> None:
    ini = "ragdive_floors = context_retention:0.9, faithfulness: 0.7\n"
    with_limits(floored, "", ini)  # faithfulness is not scored here: not held
    ini_only = floored.runpytest("-m", "ragdive", "--ragdive-record-mode=none")
    ini_only.stdout.fnmatch_lines([
        "FAILED test_bot.py::test_bot - context_retention mean 0.5 below its floor 0.9"])
    assert "faithfulness" not in ini_only.stdout.str()
    with_limits(floored, ', floors={"context_retention": 0.4}', ini)
    overridden = floored.runpytest("-m", "ragdive", "--ragdive-record-mode=none")
    overridden.assert_outcomes(passed=3)
    overridden.stdout.fnmatch_lines(["*context_retention  mean 0.500 * floor 0.4: met*"])


@pytest.mark.parametrize(("limits", "ini", "message"), [
    (', floors={"bleu": 0.5}', "", "floors: unknown metric 'bleu'; choose from correctness"),
    (', floors={"correctness": 1.5}', "", "floors: correctness=1.5 is not a number in [0, 1]"),
    (', floors={"forgetfulness": 0.2}', "", "floors: forgetfulness is lower-is-better, so it "
     "takes a ceiling, not a floor: give it in ceilings, e.g. ceilings={'forgetfulness': 0.2}"),
    (', floors={"faithfulness": 0.7}', "", "test_bot.py::test_bot[alpha]: ragdive.conversation:"
     " floors: faithfulness is not scored by this test (it scores correctness, "
     "forgetfulness, context_retention); add it to metrics=, or remove its floor"),
    ("", "ragdive_floors = correctness 0.8\n", "ini ragdive_floors: floors = 'correctness "
     "0.8': 'correctness' is not metric:value; write pairs such as correctness:0.8"),
    ("", "ragdive_ceilings = correctness:0.8\n", "ini ragdive_ceilings: ceilings: correctness "
     "is higher-is-better, so it takes a floor"),
], ids=["unknown", "above-1", "lower-is-better", "not-scored", "ini-malformed", "ini-ceiling"])
def test_a_bad_floor_is_a_usage_error_naming_the_cause_and_the_fix(
    project, limits, ini, message,
) -> None:
    with_limits(project, limits, ini)
    result = project.runpytest("-m", "ragdive", "--ragdive-update")
    # the marker's own values fail its module's import (a collection error, as every
    # marker option's); the ini's, and a metric the test does not score, the start
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED)
    assert message in result.stderr.str() + result.stdout.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert "passed" not in result.stdout.str()  # no dialogue was held


def test_a_floor_without_a_score_fails_and_says_why() -> None:
    result = ItemResult(floors={"context_recall": 0.5, "correctness": 0.8})
    (unscored, met) = held({"correctness": 0.8}, result, enforced=True)
    assert unscored.failed and unscored.outcome == "not scored"
    assert unscored.describe().startswith("context_recall has a floor of 0.5 but no document "
                                          "scored it")
    assert met.met and not met.failed
    assert met.describe() == "correctness mean 0.8 meets its floor 0.8"
    # compared as band files hold values: a mean that rounds to its floor meets it
    (rounded,) = held({"correctness": 0.79996}, ItemResult(floors={"correctness": 0.8}),
                      enforced=True)
    assert rounded.met
    # on an update it is reported, and fails nothing
    (on_update,) = held({"forgetfulness": 0.3}, ItemResult(ceilings={"forgetfulness": 0.2}),
                        enforced=False)
    assert not on_update.met and not on_update.failed and on_update.outcome == "above"
    assert json.loads(on_update.model_dump_json())["kind"] == "ceiling"


def test_the_ini_form_and_the_marker_form_agree() -> None:
    assert parse("floors", "correctness : 0.8,faithfulness=0.7\ncontext_recall:1", "ini") == {
        "correctness": 0.8, "faithfulness": 0.7, "context_recall": 1.0}
    assert check("floors", {"correctness": 1}, "marker") == {"correctness": 1.0}
    assert check("ceilings", {}, "marker") == {}
    for text, cause in [("correctness:0.8 correctness:0.7", "gives correctness twice"),
                        ("correctness:high", "correctness:high is not a number"),
                        ("correctness:-0.1", "is not a number in [0, 1]")]:
        with pytest.raises(SettingError, match=cause.replace("[", r"\[").replace("]", r"\]")):
            parse("floors", text, "ini ragdive_floors")
    for value in (["correctness"], {"correctness": True}, {"correctness": float("nan")}):
        with pytest.raises(SettingError, match="floors"):
            check("floors", value, "marker")
