"""Band files that no collected test owns any more (a removed document, a deleted or renamed
test module) are reported as unused, as syrupy reports unused snapshots, and removed by
``--ragdive-update``; with or without xdist."""

from __future__ import annotations

import pytest
from conftest import PROJECT_CONFTEST, PROJECT_TEST

WORKERS = pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])


@WORKERS
def test_a_removed_documents_band_is_listed_then_removed(project, workers) -> None:
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    folder = project.path / "__ragdive__" / "test_bot"
    project.makeconftest(PROJECT_CONFTEST.replace(
        '    ragdive.Document(id="beta", text="Beta is a bridge opened in 1950."),\n', ""))

    checked = project.runpytest("-m", "ragdive", "--ragdive-markdown=summary.md", *workers)
    assert checked.ret == 0  # an unused file is news, not a failure
    checked.stdout.fnmatch_lines(["*1 baseline file(s) unused (run --ragdive-update to remove)*",
                                  "*test_bot?beta?.json"])
    summary = (project.path / "summary.md").read_text()
    assert "1 band file(s) no test owns, unused (`--ragdive-update` removes them)" in summary
    assert "test_bot[beta].json" in summary and (folder / "test_bot[beta].json").exists()

    project.runpytest("-m", "ragdive", "--ragdive-update", *workers).stdout.fnmatch_lines(
        ["*1 baseline file(s) removed*"])
    assert sorted(p.name for p in folder.iterdir()) == ["test_bot.aggregate.json",
                                                        "test_bot[alpha].json"]


@WORKERS
def test_the_bands_of_a_deleted_test_module_are_listed_then_removed(project, workers) -> None:
    project.makepyfile(test_old=PROJECT_TEST)
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=4)
    old = project.path / "__ragdive__" / "test_old"
    assert len(list(old.glob("*.json"))) == 3
    (project.path / "test_old.py").unlink()

    checked = project.runpytest("-m", "ragdive", *workers)
    checked.stdout.fnmatch_lines(["*3 baseline file(s) unused (run --ragdive-update to remove)*"])
    assert old.is_dir()

    project.runpytest("-m", "ragdive", "--ragdive-update", *workers).stdout.fnmatch_lines(
        ["*3 baseline file(s) removed*"])
    assert not old.exists()  # the emptied folder goes too
    assert len(list((project.path / "__ragdive__" / "test_bot").glob("*.json"))) == 3


def test_a_run_of_one_module_keeps_the_bands_of_the_others(project) -> None:
    project.makepyfile(test_other=PROJECT_TEST)
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=4)
    result = project.runpytest("-m", "ragdive", "--ragdive-update", "test_bot.py")
    result.assert_outcomes(passed=2)
    assert "baseline file(s)" not in result.stdout.str()
    assert len(list((project.path / "__ragdive__" / "test_other").glob("*.json"))) == 3
