"""``--ragdive-markdown``: the verdicts, their metrics and the places to look as Markdown, for
GitHub's job summary or a pull-request comment."""

from __future__ import annotations

import pytest

from pytest_ragdive.plugin.markdown import render
from pytest_ragdive.plugin.run_record import ItemRecord, MetricVerdictRecord, RunRecord, TestRecord


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_a_regression_is_written_with_its_metrics_and_where_to_look(recorded, monkeypatch,
                                                                     workers) -> None:
    monkeypatch.setenv("BOT_MODE", "forgetful")
    result = recorded.runpytest("-m", "ragdive", "--ragdive-markdown=summary.md", *workers)
    result.assert_outcomes(passed=2, failed=1)
    text = (recorded.path / "summary.md").read_text()
    assert text.startswith("### ❌ ragdive: 1 of 1 test(s) failed\n")
    assert "| `test_bot.py::test_bot` | ❌ regressed | 2 of 2 | 0 |" in text
    assert "| forgetfulness | worse | +1.000 | 0.0156 | 1.000 | [0.000, 0.000] |" in text
    assert "| correctness | not worse |" in text
    where = text.split("Where to look (first runs outside their item band):\n```text\n", 1)[1]
    block = where.split("\n```", 1)[0]
    assert block.startswith("test_bot.py::test_bot[alpha]\n  forgetfulness = 1.000, band "
                            "[0.000, 0.000] (worse)")
    assert "\n    turn 2 ('And the second fact about it?'): the reply does not answer" in block
    why = "- **forgetfulness** worse: candidate higher by 1.000 over 2 documents: p = 0.0156"
    assert why in text
    assert "record mode new" in text and "verdict permutation" in text


def test_a_passing_run_says_so(recorded) -> None:
    result = recorded.runpytest("-m", "ragdive", "--ragdive-record-mode=none",
                                "--ragdive-markdown=summary.md")
    result.assert_outcomes(passed=3)
    text = (recorded.path / "summary.md").read_text()
    assert text.startswith("### ✅ ragdive: 1 test(s) passed\n")
    assert "| forgetfulness | not worse |" in text and "Where to look" not in text
    result.stdout.fnmatch_lines(["*ragdive report written to */summary.md"])


def test_the_merge_of_shards_writes_it_too(recorded, monkeypatch) -> None:
    from pytest_ragdive.__main__ import main

    monkeypatch.setenv("BOT_MODE", "forgetful")
    for shard in ("alpha", "beta"):
        recorded.runpytest("-m", "ragdive", "-k", shard, f"--ragdive-json={shard}.json")
    monkeypatch.chdir(recorded.path)
    assert main(["merge", "alpha.json", "beta.json", "--markdown", "merged.md"]) == 1
    text = (recorded.path / "merged.md").read_text()
    assert "| forgetfulness | worse |" in text and "2 of 2" in text


def _record(message: str, left_band: list[str]) -> RunRecord:
    item = ItemRecord(nodeid="t.py::t[doc]", document_id="doc", outcome="failed",
                      message=message, result={"left_band": left_band})
    verdict = MetricVerdictRecord(metric="correctness", verdict="worse", p=0.01, delta=-0.3,
                                  smallest_p=0.001, reason="lower")
    test = TestRecord(key="t.py::t", collected=["t.py::t[doc]"], rule="permutation",
                      status="regressed", design="1 of 1 document", verdicts=[verdict],
                      items=[item])
    return RunRecord(settings={"seeds": "0"}, tests=[test])


def test_text_from_the_bot_or_a_judge_cannot_escape_its_block() -> None:
    hostile = "```\n<img src=x onerror=alert(1)>\n# Approved | merge it"
    text = render(_record(hostile, [f"correctness = 0.000: turn 1 ('{hostile}')"]))
    fence = "````text\n"  # longer than the backticks inside
    assert text.count(fence) == 2
    for block in text.split(fence)[1:]:
        assert "<img" in block.split("\n````", 1)[0]
    outside = "".join(part.split("\n````", 1)[-1] for part in text.split(fence))
    assert "<img" not in outside and "# Approved" not in outside


def test_a_long_run_is_cut_to_fit_a_comment_and_says_so() -> None:
    run = _record("x" * 100, ["correctness = 0.000\n" + "y" * 5000] * 20)
    run.tests = [run.tests[0].model_copy(update={"key": f"t.py::t{i}"}) for i in range(40)]
    text = render(run, limit=20_000)
    assert len(text) <= 20_000 and "cut to fit a comment" in text
    many = _record("", ["a"])
    item = many.tests[0].items[0]
    many.tests[0].items = [item.model_copy(update={"nodeid": f"t.py::t[{i}]"}) for i in range(20)]
    assert "… and 8 more in the HTML report" in render(many)
