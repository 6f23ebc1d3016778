"""The plugin as users run it: pytester projects with a scripted judge."""

from __future__ import annotations

import json

import pytest
from conftest import PROJECT_CONFTEST


def ragdive(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("-m", "ragdive", *args)


def test_improvement_passes_with_a_note_and_can_be_made_to_fail(project, monkeypatch):
    monkeypatch.setenv("BOT_MODE", "forgetful")
    ragdive(project, "--ragdive-update").assert_outcomes(passed=2)
    monkeypatch.setenv("BOT_MODE", "good")
    better = ragdive(project, "--junitxml=report.xml")
    better.assert_outcomes(passed=3)  # two items and the test's verdict
    report = (project.path / "report.xml").read_text()
    assert '<property name="ragdive.forgetfulness" value="0.0"' in report
    better.stdout.fnmatch_lines(["*2 item(s) scored better than their band*--ragdive-update*"])
    assert better.ret == 0

    project.makeini("[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n"
                    "ragdive_fail_on_improvement = true\n")
    strict = ragdive(project)
    strict.assert_outcomes(failed=2, passed=1)
    strict.stdout.fnmatch_lines(["*rose above their baseline band*"])


def test_aggregate_outside_its_band_fails_the_session(project, monkeypatch):
    ragdive(project, "--ragdive-update").assert_outcomes(passed=2)
    folder = project.path / "__ragdive__" / "test_bot"
    for item in ("test_bot[alpha].json", "test_bot[beta].json"):  # items: anything goes
        band = json.loads((folder / item).read_text())
        for stats in band["metrics"].values():
            runs = len(stats["runs"])
            stats.update(min=0.0, max=1.0, runs=[0.0] * (runs - 1) + [1.0])
        (folder / item).write_text(json.dumps(band))
    path = folder / "test_bot.aggregate.json"
    band = json.loads(path.read_text())
    correctness = band["metrics"]["correctness"]  # the mean is 1.0: better
    correctness.update(min=0.5, max=0.5, runs=[0.5] * len(correctness["runs"]))
    path.write_text(json.dumps(band))

    monkeypatch.setenv("BOT_MODE", "forgetful")  # context_retention falls from 1.0
    result = ragdive(project, "--ragdive-verdict=band")
    result.assert_outcomes(passed=2, failed=1)  # every item is inside its own band
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*test_bot.py::test_bot  (2 documents): regressed*",
        "*context_retention  mean 0.000*<< worse",
        "*FAILED: test_bot.py::test_bot: its mean over its documents left its aggregate band*",
    ])
    assert "correctness        mean 1.000   band [0.500, 0.500]  >> better" in result.stdout.str()

    subset = ragdive(project, "-k", "alpha", "--ragdive-verdict=band")
    subset.assert_outcomes(passed=1)  # not every document ran: no aggregate verdict
    assert subset.ret == 0
    subset.stdout.fnmatch_lines(["*aggregate band not checked: only some documents*"])


def test_removed_document_is_reported_then_removed_on_update(project):
    ragdive(project, "--ragdive-update").assert_outcomes(passed=2)
    folder = project.path / "__ragdive__" / "test_bot"
    project.makeconftest(PROJECT_CONFTEST.replace(
        '    ragdive.Document(id="beta", text="Beta is a bridge opened in 1950."),\n', ""))

    checked = ragdive(project)
    checked.assert_outcomes(passed=2)  # alpha and the test's verdict
    checked.stdout.fnmatch_lines(["*1 baseline file(s) unused (run --ragdive-update to remove)*",
                                  "*test_bot?beta?.json"])
    assert (folder / "test_bot[beta].json").exists()

    ragdive(project, "--ragdive-update").stdout.fnmatch_lines(["*1 baseline file(s) removed*"])
    assert sorted(p.name for p in folder.iterdir()) == ["test_bot.aggregate.json",
                                                        "test_bot[alpha].json"]


def test_stale_and_corrupt_baselines_fail_clearly_and_are_kept(project):
    ragdive(project, "--ragdive-update").assert_outcomes(passed=2)
    alpha = project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json"
    alpha.write_text("{ not json")

    stale = ragdive(project, "--ragdive-turns", "3")
    stale.assert_outcomes(failed=2)
    stale.stdout.fnmatch_lines([
        "*test_bot[[]alpha[]].json is not a valid band file*--ragdive-update*",
        "*was recorded for other settings (turns: 2 -> 3); it is stale*",
    ])
    assert alpha.read_text() == "{ not json"


def test_a_band_scored_by_other_prompts_is_stale(project):
    """A band records the digest of the package's prompts and judges; after an upgrade
    that changed them, its numbers measured something else."""
    ragdive(project, "--ragdive-update").assert_outcomes(passed=2)
    alpha = project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json"
    doc = json.loads(alpha.read_text())
    recorded = doc["produced_by"]["prompts"]
    assert recorded.startswith("sha256 ")
    doc["produced_by"]["prompts"] = "sha256 000000000000"  # as an older version wrote it
    alpha.write_text(json.dumps(doc))

    stale = ragdive(project)
    stale.assert_outcomes(failed=1, passed=2)  # the other item, and the verdict over it
    stale.stdout.fnmatch_lines([
        f"*recorded for other settings (prompts: 'sha256 000000000000' -> '{recorded}'); it is "
        "stale. Record it again with:", "*--ragdive-update*"])


def test_unknown_marker_option_is_a_collection_error(pytester):
    pytester.makepyfile("""
        import pytest_ragdive as ragdive

        @ragdive.conversation(turns=2, persona="chatty")
        def test_bot(ragdive_dialogue):
            pass
    """)
    result = pytester.runpytest("-p", "no:langsmith_plugin")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*unknown option(s) persona; valid options: turns, role, metrics, max_regenerations, "
        "validation, validator_checks, runs, documents*"])


def test_bad_marker_value_is_a_collection_error(pytester):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.ragdive(turns=0)
        def test_bot(ragdive_dialogue):
            pass
    """)
    result = pytester.runpytest("-p", "no:langsmith_plugin")
    result.stdout.fnmatch_lines(["*turns=0 is not an integer >= 1*"])
    assert result.ret != 0


def test_other_tests_never_import_litellm_or_ragas(pytester):
    pytester.makepyfile(test_mixed="""
        import sys
        import pytest_ragdive as ragdive

        @ragdive.conversation(turns=2)
        def test_bot():
            pass

        def test_plain():
            heavy = {"litellm", "ragas", "instructor", "jinja2"} & set(sys.modules)
            assert heavy == set()
    """)
    # a fresh interpreter: this process has imported them for the other tests
    result = pytester.runpytest_subprocess("-p", "no:langsmith_plugin", "-m", "not ragdive")
    result.assert_outcomes(passed=1, deselected=1)


def test_missing_adapter_and_judges_are_usage_errors(pytester):
    pytester.makepyfile("""
        import pytest_ragdive as ragdive

        @ragdive.conversation(documents=[ragdive.Document(id="a", text="A.")])
        def test_bot():
            pass
    """)
    result = pytester.runpytest("-p", "no:langsmith_plugin")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*has no RAG system to talk to. Define the fixture*"])


def test_documents_from_marker_glob_and_ini(pytester):
    pytester.makeconftest(PROJECT_CONFTEST.split("ragdive_document =")[0])
    (pytester.path / "kb").mkdir()
    (pytester.path / "kb" / "Tram Lines.md").write_text("Line 4 runs every 8 minutes.")
    (pytester.path / "kb" / "ferry.txt").write_text("The ferry leaves at 7.")
    pytester.makepyfile(test_kb="""
        import pytest_ragdive as ragdive

        @ragdive.conversation(turns=1, documents="kb/*.md")
        def test_marker(ragdive_document):
            assert ragdive_document.text.startswith("Line 4")

        @ragdive.conversation(turns=1)
        def test_ini(ragdive_document):
            pass
    """)
    pytester.makeini("[pytest]\nragdive_documents = kb/*\n")
    result = pytester.runpytest("-p", "no:langsmith_plugin", "--collect-only", "-q")
    result.stdout.fnmatch_lines([
        "test_kb.py::test_marker[[]Tram-Lines[]]",
        "test_kb.py::test_ini[[]Tram-Lines[]]",
        "test_kb.py::test_ini[[]ferry[]]",
    ])


def test_one_turn_conversations_leave_out_multi_turn_metrics(pytester):
    pytester.makeconftest(PROJECT_CONFTEST)
    pytester.makepyfile(test_one="""
        import pytest_ragdive as ragdive

        @ragdive.conversation(turns=1, runs=1)
        def test_default(ragdive_dialogue):
            assert "forgetfulness" not in ragdive_dialogue.scores
            assert ragdive_dialogue.scores["correctness"] == 1.0

        @ragdive.conversation(turns=1, metrics=["forgetfulness"])
        def test_asked(ragdive_dialogue):
            pass
    """)
    result = pytester.runpytest("-p", "no:langsmith_plugin", "--ragdive-update",
                                           "-p", "no:cacheprovider")
    # a setting that cannot work stops the run at collection, naming the test
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_asked*forgetfulness need at least 2 turns*"])
    pytester.makepyfile(test_one=pytester.path.joinpath("test_one.py").read_text().split(
        "\n@ragdive.conversation(turns=1, metrics")[0])
    fixed = pytester.runpytest("-p", "no:langsmith_plugin", "--ragdive-update",
                                          "-p", "no:cacheprovider")
    fixed.assert_outcomes(passed=2)  # one per document


def test_progress_counts_dialogues_calls_and_time_at_v_and_is_quiet_at_q(project):
    verbose = ragdive(project, "--ragdive-update", "-v")
    verbose.assert_outcomes(passed=2)
    verbose.stdout.fnmatch_lines([
        "*ragdive 0/? dialogues · alpha (run 1/2): turn 1/2 generate · * model calls · 0:0?*",
        "*ragdive ?/4 dialogues · * (run ?/2): done · * model calls · ?:??",
    ])
    assert "left" in verbose.stdout.str()  # an estimate once some work is done
    # a check holds one run, and confirmation runs (as many as the test needs to be able to
    # decide: plugin/reach.py) only where it looks worse
    checked = ragdive(project, "-v")
    checked.stdout.fnmatch_lines(["*ragdive 0/? dialogues · alpha (run 1, up to ?): turn 1/2 *"])
    quiet = ragdive(project, "--ragdive-update", "-q")
    assert "ragdive 1/" not in quiet.stdout.str()
