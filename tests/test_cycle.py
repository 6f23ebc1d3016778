import pytest

from pytest_ragdive.plugin.run_record import RunRecord


@pytest.mark.parametrize("update_args", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_full_cycle(project, update_args, monkeypatch):
    """Missing band, update (also by two xdist workers, whose results the controller
    writes), check, regression. Each xdist run starts two workers that import litellm
    and ragas afresh, so only the update runs under xdist."""

    def run(*args: str) -> pytest.RunResult:
        return project.runpytest("-m", "ragdive", *args)

    missing = run()
    missing.assert_outcomes(failed=2)
    missing.stdout.fnmatch_lines(["*no baseline band at*",
                                  "*pytest 'test_bot.py::test_bot' --ragdive-update*"])

    recorded = run("--ragdive-update", "--ragdive-json=run.json", *update_args)
    recorded.assert_outcomes(passed=2)
    # the JSON report has every item's dialogue, sent by the workers under xdist
    (test,) = RunRecord.model_validate_json((project.path / "run.json").read_text()).tests
    assert [(i.document_id, i.outcome, len(i.dialogue.turns)) for i in test.items] == [
        ("alpha", "passed", 2), ("beta", "passed", 2)]
    folder = project.path / "__ragdive__" / "test_bot"
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_bot.aggregate.json", "test_bot[alpha].json", "test_bot[beta].json"]

    run().assert_outcomes(passed=3)  # two items and the test's verdict

    monkeypatch.setenv("BOT_MODE", "forgetful")
    regressed = run("--ragdive-verdict=band")  # the paper's rule: each item judged alone
    regressed.assert_outcomes(failed=3)  # both items, and their mean left its aggregate band
    out = regressed.stdout.str()
    assert "forgetfulness = 1.000, band [0.000, 0.000] (worse)" in out
    assert ("turn 2 ('And the second fact about it?'): the reply does not answer what the user "
            "meant (P(yes) 0.10, 0.90 for the answer key)") in out
    assert regressed.ret == 1
