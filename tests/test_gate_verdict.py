"""The permutation verdict as users meet it: a test function's own outcome, which fails the
session on a clear regression, shows item bands without failing on them, says
"inconclusive" when the runs cannot decide, and draws confirmation runs only when needed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from conftest import BODY

from pytest_ragdive.plugin.run_record import RunRecord


def test_an_unchanged_bot_replays_its_first_run_and_passes(recorded) -> None:
    result = recorded.runpytest("-m", "ragdive", "--ragdive-record-mode=none",
                                "--ragdive-json=run.json")
    result.assert_outcomes(passed=3)  # two items and the test's verdict
    result.stdout.fnmatch_lines(["*test_bot.py::test_bot  (2 documents): passed*",
                                 "*model calls 0,*"])
    (test,) = RunRecord.model_validate_json((recorded.path / "run.json").read_text()).tests
    assert (test.rule, test.status) == ("permutation", "passed")
    assert [i.runs for i in test.items] == [1, 1]  # inside every band: no confirmation


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_a_clear_regression_fails_the_test_through_its_metric(recorded, monkeypatch,
                                                               workers) -> None:
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = recorded.runpytest("-m", "ragdive", "--junitxml=junit.xml",
                                "--ragdive-json=run.json", "--ragdive-report=report.html",
                                *workers)
    result.assert_outcomes(passed=2, failed=1)  # the items pass; the test's verdict fails
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*forgetfulness*worse*candidate higher by 1.000 over 2 documents: p = 0.0156*",
        "*where to look*",
        "*test_bot[[]alpha[]]*",
        "*forgetfulness = 1.000, band [[]0.000, 0.000[]] (worse)*",
        "*turn 2 ('And the second fact about it?'): the reply does not answer what the user*",
        "FAILED test_bot.py::test_bot - worse than the baseline: forgetfulness",
    ])
    (test,) = RunRecord.model_validate_json((recorded.path / "run.json").read_text()).tests
    assert test.status == "regressed" and test.failed
    assert {v.metric: v.verdict for v in test.verdicts} == {
        "correctness": "not worse", "forgetfulness": "worse"}
    assert [i.runs for i in test.items] == [3, 3]  # each first run left its band: confirmed
    # where the bot is weak, merged over the items (from the workers under -n 2)
    assert test.by_turn["forgetfulness"] == {"2": (1.0, 6)}
    cases = {c.get("name"): c for c in ET.parse(recorded.path / "junit.xml").iter("testcase")}
    assert cases["test_bot"].find("failure") is not None
    assert cases["test_bot[alpha]"].find("failure") is None
    properties = {p.get("name"): p.get("value") for p in cases["test_bot"].iter("property")}
    assert properties["ragdive.verdict.forgetfulness"] == "worse"
    html = (recorded.path / "report.html").read_text()
    assert "Permutation verdict: regressed" in html
    assert '<th>forgetfulness</th><td><span class="b worse">worse</span></td>' in html
    assert "6 dialogues, 12 turns" in html  # confirmation runs counted


def test_a_subset_of_documents_is_judged_on_its_own(recorded, monkeypatch) -> None:
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = recorded.runpytest("-m", "ragdive", "-k", "alpha", "--ragdive-json=run.json")
    # one document's 3 pairs cannot reach 5%; the same runs unpaired decide (issue 53)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*permutation verdict: 1 of 2 documents, * candidate runs each*",
                                 "FAILED test_bot.py::test_bot - worse than the baseline: *"])
    (test,) = RunRecord.model_validate_json((recorded.path / "run.json").read_text()).tests
    (item,) = test.items
    assert item.runs > 1  # confirmed as a run of both documents would be
    assert {v.metric: v.verdict for v in test.verdicts}["forgetfulness"] == "worse"
    assert "paired by seed" not in result.stdout.str()


def test_runs_that_cannot_decide_say_inconclusive_and_pass(recorded, monkeypatch) -> None:
    _tolerant_band(recorded)  # alpha's run stays in its band: not every run left its band
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = recorded.runpytest("-m", "ragdive", "--ragdive-confirm-runs=0")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        ("*forgetfulness*inconclusive: 2 documents × 3 baseline runs × 1 candidate run cannot "
         "reach p ≤ 0.0500 on these scores (smallest possible p *): add documents or runs*"),
        "*this test cannot fail: add documents or runs, or choose ragdive_verdict = band*",
        "*outside its band (shown, not failed): test_bot.py::test_bot[[]beta[]]*",
        "inconclusive (not failed): test_bot.py::test_bot*",
    ])


def test_the_band_rule_fails_each_item_that_leaves_its_band(recorded, monkeypatch) -> None:
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = recorded.runpytest("-m", "ragdive", "--ragdive-verdict=band")
    result.assert_outcomes(failed=3)  # both items, and the mean left its aggregate band
    result.stdout.fnmatch_lines(["*scores left their baseline band:*"])


def test_runs_at_the_baseline_seeds_are_paired_and_unseen_seeds_are_not(recorded,
                                                                       monkeypatch) -> None:
    band = json.loads((recorded.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json")
                      .read_text())
    assert band["metrics"]["forgetfulness"]["seeds"] == [0, 1, 2]
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = recorded.runpytest("-m", "ragdive", "--ragdive-seed=50")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([  # no baseline run at seeds 50-52: runs against runs
        "*forgetfulness*worse*candidate higher by 1.000 over 2 documents: p = 0.0025 ≤ Holm*"])
    assert "paired by seed" not in result.stdout.str()


def test_a_band_file_whose_seeds_do_not_match_its_runs_is_named_with_the_fix(recorded) -> None:
    path = recorded.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json"
    band = json.loads(path.read_text())
    band["metrics"]["correctness"]["seeds"] = [0, 1]
    path.write_text(json.dumps(band))
    result = recorded.runpytest("-m", "ragdive", "--ragdive-record-mode=none")
    result.stdout.fnmatch_lines(["*test_bot[[]alpha[]].json is not a valid band file "
                                 "(correctness: 'seeds' is not one whole number per run)*"
                                 "--ragdive-update*"])
    assert result.ret != 0
    assert json.loads(path.read_text()) == band  # the file is left as it was


def test_band_files_without_runs_fail_their_items_and_say_why(recorded) -> None:
    for path in (recorded.path / "__ragdive__" / "test_bot").glob("test_bot[[]*.json"):
        band = json.loads(path.read_text())
        for stats in band["metrics"].values():
            stats.pop("runs")
            stats.pop("seeds")  # as a band file of an early version has neither
        path.write_text(json.dumps(band))
    result = recorded.runpytest("-m", "ragdive")
    result.assert_outcomes(failed=2)  # the verdict reads the runs: without them, no gate
    result.stdout.fnmatch_lines(["*is not a valid band file (correctness: 'runs' is not a list "
                                 "of the baseline's scores in ?0, 1?). Restore it from version "
                                 "control, or record it again with --ragdive-update*"])


def test_where_the_bot_is_weak_is_named_per_turn(project, monkeypatch) -> None:
    project.makepyfile(test_bot=BODY.replace("turns=2", "turns=3"))
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    monkeypatch.setenv("BOT_MODE", "forgets late")  # keeps turn 1 in mind at turn 2, not at 3
    result = project.runpytest("-m", "ragdive", "--ragdive-json=run.json",
                               "--ragdive-report=report.html")
    result.stdout.fnmatch_lines(["*where the bot is weak: forgetfulness is weakest at turn 3: "
                                 "1.00 over 6 turns, 0.00 over the other 6*"])
    (test,) = RunRecord.model_validate_json((project.path / "run.json").read_text()).tests
    by_turn = test.by_turn["forgetfulness"]
    assert by_turn == {"2": (0.0, 6), "3": (1.0, 6)}  # 2 documents x 3 runs (confirmed)
    assert set(test.by_type["correctness"]) == {"initial", "follow_up"}
    assert "Where the bot is weak" in (project.path / "report.html").read_text()


GARBLING_BOT = '''
import itertools
_dialogues = itertools.count(1)

class Session:
    def __init__(self, n):
        self.n = n

    def answer(self, question, history):
        memory = "(no memory)" if history else "(fresh start)"
        garbled = " (garble)" if self.n == 3 else ""  # the third dialogue held: a confirmation
        return ragdive.RagAnswer(answer=f"{question} -> fact {memory}{garbled}",
                                 contexts=["a fact"])

class Bot:
    def start(self):
        return Session(next(_dialogues))

    def answer(self, question, history):
        raise AssertionError("answered through start()")

def judged(messages):
    prompt = messages[-1]["content"]
    if "(garble)" in prompt and "Reply to check" in prompt:
        return "maybe"  # the correctness judge cannot read that reply: not a verdict
    return yes(messages)

JUDGE = scripted({"YesNo": judged}, name="judge")
'''


#: a conftest tail: in the STUCK-th dialogue held, the generator asks turn 1 again and again
STUCK_GENERATOR = """
import itertools
from pytest_ragdive.llm.scripted_replies import generic
_dialogues = itertools.count(1)

class Session:
    def __init__(self, n):
        self.n = n

    def answer(self, question, history):
        tag = " (stuck)" if self.n == STUCK else ""
        return ragdive.RagAnswer(answer=f"{question} -> fact (MEMORY){tag}",
                                 contexts=["a fact"])

class Bot:
    def start(self):
        return Session(next(_dialogues))

def next_question(messages):
    if "(stuck)" in messages[-1]["content"]:  # turn 1's question again: always rejected
        first = generic("FirstQuestion")(messages)["question"]
        return {"standalone_question": first, "rag_input": "And the topic?",
                "ground_truth": "The topic.", "question_type": "follow_up"}
    return generic("NextQuestion")(messages)

JUDGE = scripted({"YesNo": yes, "NextQuestion": next_question}, name="judge")
"""


def test_a_confirmation_run_a_judge_cannot_score_is_left_out_and_said(recorded) -> None:
    from conftest import PROJECT_CONFTEST

    recorded.makeconftest(PROJECT_CONFTEST + GARBLING_BOT)
    result = recorded.runpytest("-m", "ragdive", "-p", "no:xdist")
    result.assert_outcomes(passed=2, failed=1)  # the items pass; the verdict still decides
    result.stdout.fnmatch_lines([
        "    not scored, left out of its band or verdict: test_bot.py::test_bot[[]*[]]",
        "      run ?: correctness: * could not be scored*answered a yes/no question with "
        "'maybe'*",
        "FAILED: test_bot.py::test_bot: worse than its baseline*"])


def test_a_baseline_run_a_judge_cannot_score_is_left_out_of_its_band_and_said(project) -> None:
    from conftest import PROJECT_CONFTEST

    project.makepyfile(test_bot=BODY)
    project.makeconftest(PROJECT_CONFTEST + GARBLING_BOT)  # the third dialogue garbles
    result = project.runpytest("-m", "ragdive", "--ragdive-update", "-p", "no:xdist")
    result.assert_outcomes(passed=2)  # 3 runs each: one unscored run leaves two
    result.stdout.fnmatch_lines([
        "    not scored, left out of its band or verdict: test_bot.py::test_bot[[]*[]]",
        "      run ?: correctness: * could not be scored*'maybe'*"])
    runs = sorted(len(json.loads(p.read_text())["metrics"]["correctness"]["runs"])
                  for p in (project.path / "__ragdive__" / "test_bot").glob("test_bot[[]*.json"))
    assert runs == [2, 3]
    # a metric no run could score has no band: the item fails, naming it
    project.makeconftest(PROJECT_CONFTEST + GARBLING_BOT.replace("self.n == 3", "True"))
    failed = project.runpytest("-m", "ragdive", "--ragdive-update", "-p", "no:xdist")
    failed.assert_outcomes(failed=2)
    failed.stdout.fnmatch_lines(["*the conversation could not be evaluated:*",
                                 "*correctness: * could not be scored*"])


def test_a_turn_the_judge_cannot_score_in_the_first_run_is_left_out_and_said(recorded) -> None:
    from conftest import PROJECT_CONFTEST

    # the first dialogue started (alpha's) garbles: the correctness judge cannot read it
    recorded.makeconftest(PROJECT_CONFTEST + GARBLING_BOT.replace("self.n == 3", "self.n == 1"))
    result = recorded.runpytest("-m", "ragdive", "-p", "no:xdist", "--ragdive-confirm-runs=0")
    result.stdout.fnmatch_lines([
        "    not scored, left out of its band or verdict: test_bot.py::test_bot[[]alpha[]]",
        "      run 1: correctness: * could not be scored*'maybe'*"])
    # missing evidence, not evidence: alpha's item stands on its other metric
    assert "test_bot.py::test_bot[alpha] PASSED" in recorded.runpytest(
        "-m", "ragdive", "-p", "no:xdist", "--ragdive-confirm-runs=0", "-v").stdout.str()


def test_a_bot_that_leaves_the_judge_nothing_to_score_fails_its_item(project) -> None:
    from conftest import PROJECT_CONFTEST

    project.makepyfile(test_bot=BODY.replace('["correctness", "forgetfulness"]',
                                             '["faithfulness"]'))
    project.makeconftest(PROJECT_CONFTEST.replace('contexts=["a fact"]', "contexts=[]"))
    result = project.runpytest("-m", "ragdive", "--ragdive-update", "-p", "no:xdist")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*the conversation could not be evaluated:*",
                                 "*faithfulness: * the RAG returned no contexts*"])


def test_a_confirmation_run_the_generator_cannot_hold_is_left_out_and_said(recorded) -> None:
    from conftest import PROJECT_CONFTEST

    # a bot without memory leaves its bands, so each document draws confirmation runs; in the
    # third dialogue held (a confirmation run) the generator asks turn 1 again and again
    stuck = STUCK_GENERATOR.replace("STUCK", "3").replace("MEMORY", "no memory")
    recorded.makeconftest(PROJECT_CONFTEST + stuck)
    result = recorded.runpytest("-m", "ragdive", "-p", "no:xdist", "-v",
                                "--ragdive-report=report.html")
    # missing evidence, not a failed item; the verdict decides on the runs that were held
    result.stdout.fnmatch_lines([
        "test_bot.py::test_bot[[]alpha[]] PASSED*", "test_bot.py::test_bot[[]beta[]] PASSED*",
        "    not scored, left out of its band or verdict: test_bot.py::test_bot[[]*[]]",
        "      run ?: not held: turn 2: the validator rejected all * attempts*asks again*"])
    # and the report says it on the item
    report = (recorded.path / "report.html").read_text()
    assert "Not scored, left out of its band or verdict:" in report and "not held: turn 2" in report


def test_a_first_run_the_generator_cannot_hold_is_held_again_with_the_next_seed(
    recorded,
) -> None:
    from conftest import PROJECT_CONFTEST

    # the first dialogue held (alpha's) gets follow-ups that ask turn 1 again and again
    stuck = STUCK_GENERATOR.replace("STUCK", "1").replace("MEMORY", "recalls {len(history)}")
    recorded.makeconftest(PROJECT_CONFTEST + stuck)
    result = recorded.runpytest("-m", "ragdive", "-p", "no:xdist", "-v")
    # the test's own harness failed, not the bot: alpha is held again and decided on that
    result.stdout.fnmatch_lines([
        "test_bot.py::test_bot[[]alpha[]] PASSED*",
        "test_bot.py::test_bot  (2 documents): passed",
        "    not scored, left out of its band or verdict: test_bot.py::test_bot[[]alpha[]]",
        "      run 2: not held: turn 2: the validator rejected all * attempts*asks again*"])
    assert result.ret == pytest.ExitCode.OK


def test_an_update_whose_runs_all_fail_to_hold_holds_the_conversation_again(
    project: pytest.Pytester,
) -> None:
    from conftest import PROJECT_CONFTEST

    # one run per item, and alpha's (the first dialogue held) asks turn 1 again and again:
    # without holding it again, the test would get no band at all
    stuck = STUCK_GENERATOR.replace("STUCK", "1").replace("MEMORY", "recalls {len(history)}")
    project.makeconftest(PROJECT_CONFTEST + stuck)
    project.makepyfile(test_bot=BODY.replace("runs=3", "runs=1"))
    update = project.runpytest("-m", "ragdive", "-p", "no:xdist", "--ragdive-update")
    update.assert_outcomes(passed=2)
    band = json.loads((project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json")
                      .read_text())
    assert band["metrics"]["correctness"]["seeds"] == [1]  # seed 0 was not held
    # a check at the default seed fails at seed 0 the same way, holds seed 1 again, and
    # replays the band's run
    check = project.runpytest("-m", "ragdive", "-p", "no:xdist", "--ragdive-record-mode=none")
    check.stdout.fnmatch_lines(["test_bot.py::test_bot  (2 documents): passed",
                                "*model calls 0,*"])
    assert check.ret == pytest.ExitCode.OK


def test_an_update_holds_a_run_that_failed_to_hold_again_so_its_band_has_every_run(
    project: pytest.Pytester,
) -> None:
    from conftest import PROJECT_CONFTEST

    # alpha's second run (the second dialogue started) asks turn 1 again and again
    stuck = STUCK_GENERATOR.replace("STUCK", "2").replace("MEMORY", "recalls {len(history)}")
    project.makeconftest(PROJECT_CONFTEST + stuck)
    project.makepyfile(test_bot=BODY)
    project.runpytest("-m", "ragdive", "-p", "no:xdist", "--ragdive-update").assert_outcomes(
        passed=2)
    band = json.loads((project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json")
                      .read_text())
    assert band["metrics"]["correctness"]["seeds"] == [0, 2, 3]  # seed 1 was not held


def test_a_first_run_with_a_metric_the_judge_could_not_score_still_draws_confirmation(
    recorded,
) -> None:
    from conftest import PROJECT_CONFTEST

    # alpha's first run: correctness unreadable, forgetfulness out of its band (no memory)
    recorded.makeconftest(PROJECT_CONFTEST + GARBLING_BOT.replace("self.n == 3", "self.n == 1"))
    recorded.runpytest("-m", "ragdive", "-p", "no:xdist", "--ragdive-json=run.json")
    (test,) = RunRecord.model_validate_json((recorded.path / "run.json").read_text()).tests
    runs = {item.document_id: item.runs for item in test.items}
    assert runs == {"alpha": 3, "beta": 3}


def _tolerant_band(project: pytest.Pytester) -> None:
    """alpha's forgetfulness band as if one of its baseline runs had forgotten: a forgetful
    first run stays inside it, beta's leaves its band."""
    path = project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json"
    band = json.loads(path.read_text())
    band["metrics"]["forgetfulness"].update(min=0.0, max=1.0, runs=[0.0, 0.0, 1.0],
                                            mean=0.3333)
    path.write_text(json.dumps(band))


@pytest.mark.parametrize(("scope", "runs"), [("document", [1, 3]), ("test", [3, 3])])
def test_the_confirmation_scope_says_which_documents_draw_more_runs(
        recorded, monkeypatch, scope, runs) -> None:
    _tolerant_band(recorded)
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = recorded.runpytest("-m", "ragdive", "--ragdive-json=run.json",
                                f"--ragdive-confirm-scope={scope}")
    (test,) = RunRecord.model_validate_json((recorded.path / "run.json").read_text()).tests
    # alpha's first run stays in its band; with scope "test", beta's leaving its band
    # confirms alpha too. Either way the unpaired test decides (1 + 3 pairs cannot reach
    # 0.05: issue 53) on beta's runs
    assert [i.runs for i in test.items] == runs
    assert {v.metric: v.verdict for v in test.verdicts}["forgetfulness"] == "worse"
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_the_default_test_wide_confirmation_over_workers_confirms_per_document_and_says_so(
        recorded, monkeypatch) -> None:
    _tolerant_band(recorded)
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = recorded.runpytest("-m", "ragdive", "-n", "2", "--ragdive-json=run.json")
    result.stdout.fnmatch_lines(["*--dist load spreads a test's documents over workers: each "
                                 "dialogue ran alone and each document confirmed on its own;*"])
    (test,) = RunRecord.model_validate_json((recorded.path / "run.json").read_text()).tests
    assert [i.runs for i in test.items] == [1, 3]
