import pytest

MODES = {"in-process": [], "xdist": ["-n", "2"]}


@pytest.fixture(params=sorted(MODES))
def xdist(request: pytest.FixtureRequest) -> list[str]:
    return MODES[request.param]


def test_full_cycle(project, xdist, monkeypatch):
    def run(*args: str) -> pytest.RunResult:
        return project.runpytest("-m", "ragdive", *xdist, *args)

    if not xdist:  # every xdist run starts two workers: there, record and regress only
        missing = run()
        missing.assert_outcomes(failed=2)
        missing.stdout.fnmatch_lines(["*no baseline band at*",
                                      "*pytest 'test_bot.py::test_bot' --ragdive-update*"])

    recorded = run("--ragdive-update")
    recorded.assert_outcomes(passed=2)
    folder = project.path / "__ragdive__" / "test_bot"
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_bot.aggregate.json", "test_bot[alpha].json", "test_bot[beta].json"]

    if not xdist:
        run().assert_outcomes(passed=2)

    monkeypatch.setenv("BOT_MODE", "forgetful")
    regressed = run()
    regressed.assert_outcomes(failed=2)
    out = regressed.stdout.str()
    assert "forgetfulness = 1.000, band [0.000, 0.000] (worse)" in out
    assert ("turn 2 ('And the second fact about it?'): the reply does not answer what the user "
            "meant (P(yes) 0.10)") in out
    assert regressed.ret == 1
