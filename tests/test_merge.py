"""CI shards merged into one verdict: ``python -m pytest_ragdive merge`` decides over every
shard's items exactly as the unsharded run does, and refuses records that are not one run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ragdive.plugin.run_record import RunRecord

BODY = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=3, metrics=["correctness", "forgetfulness"])
def test_bot(ragdive_dialogue):
    pass
'''


def merge(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_ragdive", "merge", *args], cwd=folder,
                          capture_output=True, text=True, check=False, timeout=300)


def decided(path: Path) -> list[tuple]:
    """What a record decided, without times: per test its verdicts, per item its outcome
    and scores against its band."""
    out = []
    for test in RunRecord.model_validate_json(path.read_text()).tests:
        out.append((test.key, test.status, test.design,
                    [(v.metric, v.verdict, v.p) for v in test.verdicts],
                    [m.model_dump() for m in test.metrics],
                    [(i.nodeid, i.outcome, [m.model_dump() for m in i.metrics], i.runs)
                     for i in test.items]))
    return out


@pytest.fixture
def shards(project: pytest.Pytester) -> pytest.Pytester:
    project.makepyfile(test_bot=BODY)
    return project


def test_two_shards_merged_decide_as_the_whole_run(shards, monkeypatch) -> None:
    shards.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    monkeypatch.setenv("BOT_MODE", "forgetful")
    whole = shards.runpytest("-m", "ragdive", "--ragdive-json=whole.json")
    alone = [shards.runpytest("-m", "ragdive", "-k", doc, f"--ragdive-json={doc}.json")
             for doc in ("alpha", "beta")]
    # a document alone decides too (issue 53: its runs are tested unpaired), on the runs a
    # run of both draws
    assert whole.ret == 1 and [a.ret for a in alone] == [1, 1]
    merged = merge(shards.path, "alpha.json", "beta.json", "--json", "merged.json",
                   "--report", "merged.html")
    assert merged.returncode == 1, merged.stderr
    assert "worse than its baseline by more than run-to-run variation explains" in merged.stdout
    assert decided(shards.path / "merged.json") == decided(shards.path / "whole.json")
    assert "Permutation verdict: regressed" in (shards.path / "merged.html").read_text()


BETA_SETUP_FAILS = '''

def pytest_runtest_setup(item):
    if item.name.endswith("[beta]"):
        raise RuntimeError("beta's fixture broke")
'''


def test_a_shard_whose_item_failed_before_its_dialogue_merges_as_the_whole_run(
        shards) -> None:
    from conftest import PROJECT_CONFTEST

    shards.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    shards.makeconftest(PROJECT_CONFTEST + BETA_SETUP_FAILS)
    whole = shards.runpytest("-m", "ragdive", "--ragdive-json=whole.json")
    assert whole.parseoutcomes()["errors"] == 1
    for doc in ("alpha", "beta"):
        shards.runpytest("-m", "ragdive", "-k", doc, f"--ragdive-json={doc}.json")
    merged = merge(shards.path, "alpha.json", "beta.json", "--json", "merged.json")
    assert merged.returncode == 1, merged.stderr
    assert "Traceback" not in merged.stderr
    assert decided(shards.path / "merged.json") == decided(shards.path / "whole.json")


def test_an_update_across_shards_gets_its_aggregate_band_from_the_merge(shards) -> None:
    shards.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    folder = shards.path / "__ragdive__" / "test_bot"
    whole = {p.name: p.read_text() for p in folder.iterdir()}
    for path in folder.iterdir():
        path.unlink()
    for doc in ("alpha", "beta"):
        shards.runpytest("-m", "ragdive", "--ragdive-update", "-k", doc,
                         f"--ragdive-json={doc}.json").assert_outcomes(passed=1)
    assert not (folder / "test_bot.aggregate.json").exists()  # no shard saw every document
    assert merge(shards.path, "alpha.json", "beta.json").returncode == 0
    assert {p.name: p.read_text() for p in folder.iterdir()} == whole


def test_records_of_different_runs_are_refused_with_the_reason(shards) -> None:
    shards.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    shards.runpytest("-m", "ragdive", "-k", "alpha", "--ragdive-json=a.json")
    shards.runpytest("-m", "ragdive", "-k", "beta", "--ragdive-verdict=band",
                     "--ragdive-json=b.json")
    refused = merge(shards.path, "a.json", "b.json")
    assert refused.returncode == 2
    assert "different settings (verdict: 'permutation' and 'band')" in refused.stderr
    twice = merge(shards.path, "a.json", "a.json")
    assert twice.returncode == 2 and "is in two records" in twice.stderr
    (shards.path / "junk.json").write_text("{ not json")
    junk = merge(shards.path, "a.json", "junk.json")
    assert junk.returncode == 2 and "junk.json is not a ragdive record" in junk.stderr
