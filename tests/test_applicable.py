"""Metrics an item's runs cannot score are not failures (issue 62): a bot that returns no
contexts has the context metrics left out of its bands, with one note (unless they are named
in ``metrics``); a document that runs out of facts is scored on the turns it held."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import PROJECT_FIXTURES, scripted_project

from pytest_ragdive import Document, Judges, RagAnswer, run_dialogue
from pytest_ragdive.llm.scripted import scripted

CONTEXT_METRICS = ["faithfulness", "context_precision", "context_recall"]

#: a generator as a model writes: about the document of one fact (the tram's), its follow-up
#: asks turn 1's question again, which the validator rejects every time
GENERATOR = """
from pytest_ragdive.llm.scripted_replies import generic, source_of

def next_question(messages):
    if "tram" in source_of(messages):
        first = generic("FirstQuestion")(messages)["question"]
        return {"standalone_question": first, "rag_input": "And the tram?",
                "ground_truth": "The topic.", "question_type": "follow_up"}
    return generic("NextQuestion")(messages)
"""
_script: dict = {}
exec(GENERATOR, _script)


#: a hosted judge (a fake/ model: no judge profile, so all six metrics are scored) and a bot
#: whose contexts the CONTEXTS environment variable chooses: none, on every turn, on turn 1
CONFTEST = '''
import os
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted
''' + GENERATOR + '''
JUDGE = scripted({"NextQuestion": next_question}, name="hosted")

class Bot:
    def answer(self, question, history):
        given = {"none": [], "every": ["a fact"], "first": [] if history else ["a fact"]}
        return ragdive.RagAnswer(answer=f"{question} -> a fact",
                                 contexts=given[os.environ.get("CONTEXTS", "none")])

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="ferry", text="The ferry leaves the Old Quay every hour. A "
                     "crossing costs two marks. Bicycles travel free on every crossing."),
    ragdive.Document(id=DOC_ID, text=DOC_TEXT),
])
''' + PROJECT_FIXTURES

TEST = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=2{metrics})
def test_bot(ragdive_dialogue):
    pass
'''
BEACON = ("beacon", "The beacon on the hill was lit in 1890. It burns oil every night.")
TRAM = ("tram", "The tram runs every ten minutes from the station.")


def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, contexts: str,
            document: tuple[str, str] = BEACON, metrics: str = "") -> pytest.Pytester:
    monkeypatch.setenv("CONTEXTS", contexts)
    conftest = CONFTEST.replace("DOC_ID", repr(document[0])).replace("DOC_TEXT", repr(document[1]))
    return scripted_project(pytester, conftest, TEST.format(metrics=metrics))


def band(project: pytest.Pytester, name: str) -> dict:
    return json.loads((project.path / "__ragdive__" / "test_bot" / f"{name}.json").read_text())


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_a_hosted_bot_without_contexts_records_its_bands_and_passes_its_check(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str],
) -> None:
    bare = project(pytester, monkeypatch, "none")
    update = bare.runpytest("-m", "ragdive", "--ragdive-update", *workers)
    assert update.ret == pytest.ExitCode.OK, update.stdout.str()
    for name in ("test_bot[ferry]", "test_bot[beacon]", "test_bot.aggregate"):
        recorded = band(bare, name)
        assert sorted(recorded["metrics"]) == ["context_retention", "correctness",
                                               "forgetfulness"]
        assert recorded["produced_by"]["metrics"] == ["correctness", "forgetfulness",
                                                      "context_retention"]
    # one note for the test function, saying why and how to get them
    update.stdout.fnmatch_lines([
        "note: faithfulness, context_precision, context_recall not scored: the bot returned "
        "no contexts on any turn of test_bot.py::test_bot (2 documents); return the retrieved "
        "texts in RagAnswer(contexts=[...]) to score them (docs/adapters.md)"])
    check = bare.runpytest("-m", "ragdive", "--ragdive-record-mode=none", *workers)
    assert check.ret == pytest.ExitCode.OK, check.stdout.str()
    check.stdout.fnmatch_lines(["test_bot.py::test_bot  (2 documents): passed"])


def test_a_context_metric_named_in_the_marker_still_fails_with_the_fix(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    named = project(pytester, monkeypatch, "none",
                    metrics=', metrics=["correctness", "faithfulness"]')
    result = named.runpytest("-m", "ragdive", "--ragdive-update")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*faithfulness: 2 of 2 turns could not be scored*the RAG returned no contexts. The bot "
        "returned no contexts on 2 of 2 turns: return the retrieved texts in "
        "RagAnswer(contexts=[[]...[]]) to score it (docs/adapters.md)*"])
    assert not (named.path / "__ragdive__").exists()


def test_contexts_on_some_turns_only_or_no_more_fail_as_before(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    some = project(pytester, monkeypatch, "first")
    result = some.runpytest("-m", "ragdive", "--ragdive-update")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*faithfulness: 1 of 2 turns could not be scored*no contexts "
                                 "on 1 of 2 turns: return the retrieved texts*"])
    assert "not scored: the bot returned no contexts on any turn" not in result.stdout.str()
    # a bot recorded with contexts that stops returning them fails its check, naming the fix
    monkeypatch.setenv("CONTEXTS", "every")
    some.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    assert "faithfulness" in band(some, "test_bot[ferry]")["metrics"]
    monkeypatch.setenv("CONTEXTS", "none")
    check = some.runpytest("-m", "ragdive")
    check.assert_outcomes(failed=2)
    check.stdout.fnmatch_lines(["*context_recall: 2 of 2 turns could not be scored*return the "
                                "retrieved texts in RagAnswer*"])


def test_a_project_with_a_one_fact_document_records_and_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    short = project(pytester, monkeypatch, "every", document=TRAM)
    update = short.runpytest("-m", "ragdive", "--ragdive-update")
    update.assert_outcomes(passed=2)
    update.stdout.fnmatch_lines([
        "note: short: test_bot.py::test_bot[[]tram[]] held 1 of 2 turns (its document ran "
        "out of facts)"])
    tram, ferry = band(short, "test_bot[tram]"), band(short, "test_bot[ferry]")
    assert tram["produced_by"]["turns_held"] == 1 and "turns_held" not in ferry["produced_by"]
    # one turn has nothing to follow up on: the multi-turn metrics are the other document's
    assert sorted(tram["metrics"]) == sorted(["correctness", *CONTEXT_METRICS])
    assert tram["metrics"]["correctness"]["seeds"] == [0, 1]
    assert len(ferry["metrics"]) == 6
    aggregate = band(short, "test_bot.aggregate")
    assert len(aggregate["metrics"]) == 6 and "turns_held" not in aggregate["produced_by"]
    # a metric one document could not score is the others' mean, as a check's mean is
    assert aggregate["metrics"]["forgetfulness"]["runs"] == ferry["metrics"]["forgetfulness"][
        "runs"]
    check = short.runpytest("-m", "ragdive", "--ragdive-record-mode=none")
    assert check.ret == pytest.ExitCode.OK, check.stdout.str()
    check.stdout.fnmatch_lines(["test_bot.py::test_bot  (2 documents): passed"])


def test_without_hold_short_a_dialogue_that_runs_out_of_facts_fails_saying_why(
    tmp_path: Path,
) -> None:
    class Bot:
        def answer(self, question: str, history: list) -> RagAnswer:
            return RagAnswer(answer="Every ten minutes.", contexts=["a fact"])

    judges = Judges(scripted({"NextQuestion": _script["next_question"]}))
    tram = Document(id=TRAM[0], text=TRAM[1])
    failed = run_dialogue(tram, Bot(), turns=3, judges=judges, cache_dir=tmp_path)
    assert len(failed.turns) == 1 and failed.scores == {}
    assert failed.ended_early == "its document ran out of facts"
    assert "Nothing of 'tram' is left to ask about" in failed.errors["generation"]
    held = run_dialogue(tram, Bot(), turns=3, judges=judges, cache_dir=tmp_path,
                        hold_short=True)
    assert len(held.turns) == 1 and held.errors == {}
    assert held.ended_early == "its document ran out of facts"
    assert sorted(held.scores) == sorted(["correctness", *CONTEXT_METRICS])
