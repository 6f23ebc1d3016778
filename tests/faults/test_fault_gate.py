"""Faults at the gate: a dialogue that failed behind a test body, band files that cannot be
trusted, an update that is interrupted. Each must fail clearly and lose nothing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import PROJECT_CONFTEST, PROJECT_FIXTURES

from pytest_ragdive.plugin.run_record import RunRecord

README_BODY = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=2)
def test_bot(ragdive_dialogue):
    assert ragdive_dialogue.scores["correctness"] >= 0.6
'''


def ragdive(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    # an interrupted run under test must not interrupt this one
    return project.runpytest("-m", "ragdive", *args, no_reraise_ctrlc=True)


def test_the_adapters_error_is_shown_not_the_bodys_key_error(project: pytest.Pytester,
                                                              monkeypatch) -> None:
    project.makepyfile(test_bot=README_BODY)
    monkeypatch.setenv("BOT_MODE", "raise")
    result = ragdive(project, "--ragdive-update")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*the conversation could not be evaluated:*",
                                 "*turn 1: the RAG adapter raised RuntimeError: index offline*"])
    assert "KeyError" not in result.stdout.str()


def recorded(project: pytest.Pytester) -> Path:
    ragdive(project, "--ragdive-update").assert_outcomes(passed=2)
    return project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json"


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda band: band["metrics"].pop("correctness"), "no band for correctness"),
        (lambda band: band["metrics"]["correctness"].update(min=math.nan, max=math.nan),
         "correctness: min nan and max nan are not 0 <= min <= max <= 1"),
        (lambda band: band["metrics"]["forgetfulness"].update(min=0.9, max=0.1),
         "forgetfulness: min 0.9 and max 0.1 are not 0 <= min <= max <= 1"),
        (lambda band: band["metrics"]["faithfulness"].update(min=1.5, max=2.0),
         "faithfulness: min 1.5 and max 2.0"),
        (lambda band: band.pop("produced_by"), "no 'produced_by'"),
        (lambda band: band["metrics"]["correctness"].pop("runs"),
         "correctness: 'runs' is not a list of the baseline's scores in ?0, 1?"),
        (lambda band: band["metrics"]["correctness"].update(runs=[math.nan, math.nan]),
         "correctness: 'runs' is not a list"),
        (lambda band: band["metrics"]["correctness"].update(runs=[0.0, 0.0]),
         "correctness: min * and max * are not those of its runs"),
    ],
    ids=["metric removed", "nan", "min above max", "outside 0-1", "no produced_by", "no runs",
         "nan runs", "runs not the band's"],
)
def test_a_damaged_band_fails_its_item_and_is_kept(
    project: pytest.Pytester, monkeypatch, damage, message: str
) -> None:
    path = recorded(project)
    band = json.loads(path.read_text())
    damage(band)
    path.write_text(json.dumps(band))  # json writes NaN as NaN, as a careless edit would
    before = path.read_bytes()
    monkeypatch.setenv("BOT_MODE", "forgetful")  # a regression the band must not let pass
    result = ragdive(project, "--ragdive-verdict=band")
    result.assert_outcomes(failed=2)  # beta regressed; alpha's band is unusable
    result.stdout.fnmatch_lines(["*_ test_bot?alpha? _*", f"the baseline *{message}*"])
    assert "During handling" not in result.stdout.str()
    assert path.read_bytes() == before


def test_a_band_without_its_runs_fails_under_the_default_verdict_too(
    project: pytest.Pytester, monkeypatch
) -> None:
    path = recorded(project)
    band = json.loads(path.read_text())
    for stats in band["metrics"].values():
        stats["runs"] = []  # the permutation verdict reads the runs, not min and max
    path.write_text(json.dumps(band))
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = ragdive(project)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*_ test_bot?alpha? _*", "the baseline *'runs' is not a list*"])


def test_an_aggregate_band_over_other_documents_is_named_not_compared(
        project: pytest.Pytester) -> None:
    aggregate = recorded(project).parent / "test_bot.aggregate.json"
    band = json.loads(aggregate.read_text())
    band["produced_by"]["documents"] = 3  # as if a document was removed since
    aggregate.write_text(json.dumps(band))
    result = ragdive(project, "--ragdive-verdict=band")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED: test_bot.py::test_bot: the aggregate band *"
                                 "was recorded over 3 documents, this run has 2; record it "
                                 "again with --ragdive-update"])
    assert "left its aggregate band" not in result.stdout.str()


INTERRUPT_ON_BETA = '''

def pytest_runtest_call(item):
    if item.name.endswith("[beta]"):
        raise KeyboardInterrupt  # Ctrl-C while the second item runs
'''


def test_an_interrupted_update_writes_no_band(project: pytest.Pytester, monkeypatch) -> None:
    folder = recorded(project).parent
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    monkeypatch.setenv("BOT_MODE", "forgetful")  # an update would change every band
    project.makeconftest(PROJECT_CONFTEST + INTERRUPT_ON_BETA)
    result = ragdive(project, "--ragdive-update")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*the update was interrupted: no band was written*"])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # no temp files either

    project.makeconftest(PROJECT_CONFTEST)
    ragdive(project, "--ragdive-update").assert_outcomes(passed=2)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} != before


FAIL_ON_BETA = '''

def pytest_runtest_call(item):
    if item.name.endswith("[beta]"):
        raise RuntimeError("beta's adapter is down")
'''


def test_an_update_with_a_failed_item_writes_none_of_its_tests_bands(
    project: pytest.Pytester, monkeypatch
) -> None:
    folder = recorded(project).parent
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    monkeypatch.setenv("BOT_MODE", "forgetful")  # alpha's band would change
    project.makeconftest(PROJECT_CONFTEST + FAIL_ON_BETA)
    result = ragdive(project, "--ragdive-update")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_bot.py::test_bot: no band written, because "
                                 "test_bot.py::test_bot[[]beta[]] could not be recorded*"])
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


@pytest.mark.parametrize("damage", [
    lambda band: "{ not json",
    lambda band: json.dumps({**band, "metrics": {m: {**s, "runs": []}
                                                 for m, s in band["metrics"].items()}}),
], ids=["not json", "no runs"])
@pytest.mark.parametrize(("args", "items"), [
    (["--ragdive-verdict=band"], 2), (["--ragdive-verdict=permutation"], 2),
    (["-k", "alpha"], 1)], ids=["band rule", "permutation verdict", "some documents"])
def test_a_corrupt_aggregate_band_is_named_not_called_a_regression(
        project: pytest.Pytester, damage, args: list[str], items: int) -> None:
    aggregate = recorded(project).parent / "test_bot.aggregate.json"
    aggregate.write_text(damage(json.loads(aggregate.read_text())))
    before = aggregate.read_text()
    result = ragdive(project, *args)
    # under every rule, and when only some documents ran (issue 53): the test's verdict
    # fails on the file the permutation verdict does not read
    result.assert_outcomes(passed=items, failed=1)
    result.stdout.fnmatch_lines([("FAILED: test_bot.py::test_bot: the baseline "
                                  "*test_bot.aggregate.json is not a valid band file*"
                                  "--ragdive-update*")])
    assert "left its aggregate band" not in result.stdout.str()
    assert aggregate.read_text() == before


#: a judge that turns every judgement against a bot in mode "wrong" (correctness 1.0 -> 0.0,
#: forgetfulness 0.0 -> 1.0, context retention 1.0 -> 0.0), and the bot
AGAINST = """

import re

_judged_fairly = yes

def yes(messages):
    prompt = messages[-1]["content"]
    reply = re.split("eply(?: to check)?: ", prompt)  # the judged reply, not the validator's
    if len(reply) > 1 and "(all wrong)" in reply[-1]:
        return 0.9 if "contradict something" in prompt else 0.1
    return _judged_fairly(messages)

JUDGE = scripted({"YesNo": yes}, name="judge")

class WrongBot(Bot):
    def answer(self, question, history):
        if os.environ.get("BOT_MODE") == "wrong":
            return ragdive.RagAnswer(answer=f"{question} -> (all wrong)", contexts=["a fact"])
        return super().answer(question, history)
"""
TWO_TURNS = """
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2)
def test_bot(ragdive_dialogue):
    pass
"""


def against(project: pytest.Pytester, body: str) -> pytest.Pytester:
    """The project with :data:`AGAINST`'s judge and bot, every metric scored."""
    project.makeconftest(PROJECT_CONFTEST + AGAINST
                         + PROJECT_FIXTURES.replace("Bot()", "WrongBot()"))
    project.makepyfile(test_bot=body)
    return project


@pytest.mark.parametrize("args", [[], ["-k", "alpha"], ["-n", "2"]],
                         ids=["two documents", "one document", "two documents, xdist"])
def test_a_bot_wrong_everywhere_fails_a_suite_of_one_or_two_documents(
        project: pytest.Pytester, monkeypatch, args: list[str]) -> None:
    against(project, TWO_TURNS)
    update = ragdive(project, "--ragdive-update")
    update.assert_outcomes(passed=2)
    unchanged = ragdive(project, "--ragdive-seed=100", *args)  # unseen seeds: new dialogues
    assert unchanged.ret == pytest.ExitCode.OK
    for output in (update, unchanged):
        assert "cannot fail" not in output.stdout.str()
    monkeypatch.setenv("BOT_MODE", "wrong")
    result = ragdive(project, "--ragdive-json=run.json", *args)
    # issue 53: 2 documents × 3 runs paired by seed reach 1/64 at best, not 0.05 / 4; one
    # document's 3 + 3 runs reach 1/20 at best
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (test,) = RunRecord.model_validate_json((project.path / "run.json").read_text()).tests
    verdicts = {v.metric: v.verdict for v in test.verdicts}
    assert verdicts["correctness"] == verdicts["forgetfulness"] == "worse", verdicts
    assert test.failed


ONE_DOCUMENT = """
ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="alpha", text="Alpha is a tower built in 1901.")])
"""


def test_a_test_that_cannot_reach_its_threshold_says_so_and_fails_when_every_run_leaves(
        project: pytest.Pytester, monkeypatch) -> None:
    # one document of one baseline run: 8 candidate runs reach p = 1/9 at best
    against(project, TWO_TURNS.replace(
        "turns=2", 'turns=2, runs=1, metrics=["correctness", "forgetfulness"]'))
    project.makeconftest(project.path.joinpath("conftest.py").read_text() + ONE_DOCUMENT)
    says = "*this test cannot fail: add documents or runs, or choose ragdive_verdict = band*"
    update = ragdive(project, "--ragdive-update")
    update.assert_outcomes(passed=1)
    update.stdout.fnmatch_lines([says])  # when the bands are recorded
    unchanged = ragdive(project, "--ragdive-seed=100")
    assert unchanged.ret == pytest.ExitCode.OK
    unchanged.stdout.fnmatch_lines([says])  # and at every check
    monkeypatch.setenv("BOT_MODE", "wrong")
    result = ragdive(project)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*correctness*worse*every run of every document is outside its band, on the worse side*",
        says, "FAILED test_bot.py::test_bot - worse than the baseline: *correctness*"])
