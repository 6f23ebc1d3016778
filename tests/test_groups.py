"""Conversations about a group of documents: document_fixture(..., group=2), groups files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_FIXTURES, PROJECT_INI

from pytest_ragdive.engine.base.models import (
    Document,
    DocumentGroup,
    GeneratedTurn,
    RagAnswer,
    Turn,
)
from pytest_ragdive.engine.documents.groups import by_shared_words
from pytest_ragdive.engine.generation.facts import next_fact, next_facts
from pytest_ragdive.engine.roles.mistaken import figures
from pytest_ragdive.engine.roles.registry import role
from pytest_ragdive.engine.validation.validator import exact_verdict

BIKE = ("CityCycle has 1,150 bicycles at 96 stations. Bicycles may be taken on the harbour "
        "ferry free of charge. An annual CityCycle membership costs 60 marks.")
FERRY = ("The Tern ferry crosses the harbour in 14 minutes. The Tern carries 300 passengers "
         "and 60 bicycles. A single crossing costs 3 marks.")
MUSEUM = ("The City Museum opened in 1901, a short crossing from the Tern pier. It shows "
          "4,000 paintings. Entry to the museum costs 8 marks.")
TEXTS = {"bike": BIKE, "ferry": FERRY, "museum": MUSEUM}

CONFTEST = f'''
import os
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted
from pytest_ragdive.llm.scripted_replies import generic, source_names

TEXTS = {TEXTS!r}

def first(messages):
    """Turn 1 about CityCycle's bicycles where the group has CityCycle; WRONG_SOURCE names the
    ferry as its source on the first attempt ("once") or on every attempt ("always")."""
    if "bike" not in source_names(messages):
        return generic("GroupFirstQuestion")(messages)
    retried = "A reviewer rejected" in messages[-1]["content"]
    wrong = os.environ.get("WRONG_SOURCE") == "always" or (
        os.environ.get("WRONG_SOURCE") == "once" and not retried)
    return {{"question": "What is the topic of CityCycle: how many bicycles does it have?",
            "source": "ferry" if wrong else "bike",
            "evidence": "CityCycle has 1,150 bicycles at 96 stations.",
            "ground_truth": "It has 1,150 bicycles."}}

JUDGE = scripted({{"GroupFirstQuestion": first}}, name="judge")

class Bot:
    def answer(self, question, history):
        return ragdive.RagAnswer(answer=f"{{question}} -> a fact", contexts=["a fact"])
{PROJECT_FIXTURES}
DOCUMENTS = [ragdive.Document(id=k, text=v) for k, v in TEXTS.items()]
ragdive_document = ragdive.document_fixture(DOCUMENTS, group=GROUP)
'''

TEST = '''
from pathlib import Path
import pytest_ragdive as ragdive

@ragdive.conversation(turns=4, runs=2, metrics=["correctness", "context_recall", "forgetfulness"])
def test_bot(ragdive_dialogue):
    Path(f"{ragdive_dialogue.document_id}.json").write_text(ragdive_dialogue.model_dump_json())
'''


def conftest(group: str = "2") -> str:
    return CONFTEST.replace("group=GROUP", f"group={group}")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("WRONG_SOURCE", raising=False)
    pytester.makeconftest(conftest())
    pytester.makepyfile(test_bot=TEST)
    pytester.makeini(PROJECT_INI)
    return pytester


def dialogue(project: pytest.Pytester, group_id: str) -> dict:
    return json.loads((project.path / f"{group_id}.json").read_text())


def quoted(turn: dict) -> list[tuple[str, str]]:
    """(document, sentence) of each sentence a turn's evidence quotes."""
    generated = turn["generated"]
    return list(zip(generated["source"].split("+"), generated["evidence"].split("\n"),
                    strict=True))


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_a_group_item_moves_between_its_documents_each_turn_quoting_its_own(
    project: pytest.Pytester, xdist: list[str]
) -> None:
    result = project.runpytest("-m", "ragdive", "--ragdive-update", "-v", *xdist)
    result.assert_outcomes(passed=2)
    # each document with the one it shares the most distinctive words with
    for node in ("test_bot.py::test_bot[bike+ferry]", "test_bot.py::test_bot[ferry+museum]"):
        assert node in result.stdout.str()
    folder = project.path / "__ragdive__" / "test_bot"
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_bot.aggregate.json", "test_bot[bike+ferry].json", "test_bot[ferry+museum].json"]
    for group_id in ("bike+ferry", "ferry+museum"):
        turns = dialogue(project, group_id)["turns"]
        members = group_id.split("+")
        assert len(turns) == 4
        for turn in turns:
            for name, sentence in quoted(turn):
                assert name in members and sentence in TEXTS[name]
        # the first follow-up moves to the document turn 1 did not ask about
        assert {turns[0]["generated"]["source"], turns[1]["generated"]["source"]} == set(members)
        assert not any(t["rejections"] for t in turns)


def test_a_turn_that_names_the_wrong_document_is_rejected_saying_so(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WRONG_SOURCE", "once")
    project.runpytest("-m", "ragdive", "--ragdive-update", "-k", "bike").assert_outcomes(
        passed=1)
    first = dialogue(project, "bike+ferry")["turns"][0]
    assert first["generated"]["source"] == "bike"
    [rejected] = first["rejections"]
    assert rejected["turn"]["source"] == "ferry"
    assert rejected["validation"]["categories"] == ["ground_truth"]
    assert rejected["validation"]["feedback"] == (
        'the evidence is copied from "bike", not from "ferry" that source names; name the '
        "source text the evidence is copied from")

    monkeypatch.setenv("WRONG_SOURCE", "always")
    failed = project.runpytest("-m", "ragdive", "--ragdive-update", "-k", "bike",
                               "--ragdive-record-mode=all")  # not the replies recorded above
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*generation: turn 1: the validator rejected all 4 attempts*"
                                 "the evidence is copied from \"bike\", not from \"ferry\"*"])


def test_bands_and_verdicts_are_kept_per_group(project: pytest.Pytester) -> None:
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    checked = project.runpytest("-m", "ragdive")
    checked.assert_outcomes(passed=3)  # two groups and the test's verdict over them
    checked.stdout.fnmatch_lines(["*test_bot.py::test_bot  (2 documents)*"])
    # one group's band recorded for other settings fails that group only
    band_file = project.path / "__ragdive__" / "test_bot" / "test_bot[ferry+museum].json"
    band = json.loads(band_file.read_text())
    band["produced_by"]["turns"] = 3
    band_file.write_text(json.dumps(band))
    stale = project.runpytest("-m", "ragdive", "-v")
    stale.assert_outcomes(passed=2, failed=1)
    stale.stdout.fnmatch_lines(["*test_bot[[]bike+ferry[]] PASSED*"])
    stale.stdout.fnmatch_lines(["*test_bot[[]ferry+museum[]] FAILED*"])
    stale.stdout.fnmatch_lines(["*test_bot[[]ferry+museum[]].json was recorded for other "
                                "settings (turns: 3 -> 4)*"])
    # other groups are other items: the old groups' bands are unused
    (project.path / "groups.txt").write_text("# a group a line\nbike + museum\n")
    project.makeconftest(conftest('"groups.txt"'))
    regrouped = project.runpytest("-m", "ragdive", "--collect-only", "-q")
    regrouped.stdout.fnmatch_lines(["test_bot.py::test_bot[[]bike+museum[]]"])
    unused = project.runpytest("-m", "ragdive")
    unused.stdout.fnmatch_lines(["*2 baseline file(s) unused*"])


@pytest.mark.parametrize(("fixture", "marker", "ini", "message"), [
    ("group=1", "", "", "group=1 is not a number of documents >= 2, or the path of a groups "
     "file; give group=2 to pair documents, a file that lists the groups, or leave group out"),
    ("group=4", "", "", "group=4 needs at least 4 documents, and there are 3 (bike, ferry, "
     "museum); lower group or add documents"),
    ('group="missing.txt"', "", "", "missing.txt' not found; group takes a number of "
     "documents (group=2) or the path of a file listing the groups"),
    ('group="groups.txt"', "", "", "groups.txt:2: no document 'ferri' among the test's (bike, "
     "ferry, museum); a group names document ids"),
    (None, "group=2", "", "group=2 groups the documents of documents= or of the ini "
     "ragdive_documents, and this test has neither; give documents= too, or group a "
     "document_fixture: ragdive.document_fixture('kb/*.md', group=2)"),
    (None, "group=0", "", "group=0 is not a number of documents >= 2"),
    (None, "", "ragdive_documents = kb/*.md\nragdive_document_group = 1",
     "ini ragdive_document_group: group='1' is not a number of documents >= 2"),
])
def test_a_group_that_cannot_work_is_an_error_naming_the_fix(
    project: pytest.Pytester, fixture: str | None, marker: str, ini: str, message: str
) -> None:
    (project.path / "groups.txt").write_text("bike ferry\nferri museum\n")
    (project.path / "kb").mkdir()
    (project.path / "kb" / "bike.md").write_text(BIKE)
    (project.path / "kb" / "ferry.md").write_text(FERRY)
    head = conftest().split("ragdive_document =")[0]
    project.makeconftest(head if fixture is None else conftest(fixture.split("=", 1)[1]))
    project.makepyfile(test_bot=TEST.replace("runs=2", f"runs=2, {marker}" if marker else
                                             "runs=2"))
    project.makeini(PROJECT_INI + ini)
    result = project.runpytest("-m", "ragdive", "--ragdive-update")
    assert result.ret != 0
    assert message in " ".join((result.stdout.str() + result.stderr.str()).split())


def test_a_group_starts_from_an_opener_of_any_of_its_documents(project: pytest.Pytester) -> None:
    (project.path / "openers.jsonl").write_text(
        '{"message": "whats the topic, does the ferry take bikes too?", "document": "ferry"}\n')
    project.makepyfile(test_bot=TEST.replace("runs=2", 'runs=1, openers="openers.jsonl"'))
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    for group_id in ("bike+ferry", "ferry+museum"):
        first = dialogue(project, group_id)["turns"][0]["generated"]
        assert first["rag_input"] == "whats the topic, does the ferry take bikes too?"
        assert first["source"] in group_id.split("+")


def test_groups_come_from_the_marker_and_the_ini_file(project: pytest.Pytester) -> None:
    (project.path / "kb").mkdir()
    for name, text in TEXTS.items():
        (project.path / "kb" / f"{name}.md").write_text(text)
    (project.path / "groups.txt").write_text("museum,bike\n")
    project.makeconftest(conftest().split("ragdive_document =")[0])
    project.makepyfile(test_bot='''
import pytest_ragdive as ragdive

@ragdive.conversation(documents="kb/*.md", group="groups.txt")
def test_file(ragdive_document):
    assert [d.id for d in ragdive_document.documents] == ["museum", "bike"]

@ragdive.conversation()
def test_ini(ragdive_document):
    pass
''')
    project.makeini(PROJECT_INI +
                    "ragdive_documents = kb/*.md\nragdive_document_group = 2\n")
    result = project.runpytest("-m", "ragdive", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_bot.py::test_file[[]museum+bike[]]",
                                 "test_bot.py::test_ini[[]bike+ferry[]]",
                                 "test_bot.py::test_ini[[]ferry+museum[]]"])


def test_the_rule_groups_each_document_with_its_nearest_in_every_process() -> None:
    kb = Path(__file__).resolve().parents[1] / "example_project" / "kb"
    code = ("import pytest_ragdive as r; from pytest_ragdive.engine.documents.groups import "
            f"by_shared_words as g; d = r.load_documents({str(kb)!r}); "
            "print([x.id for x in g(d, 2)], [x.id for x in g(d, 3)])")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2", "3")}
    assert len(outputs) == 1  # a set's order never decides a group
    pairs = [g.id for g in by_shared_words(
        [Document(id=k, text=v) for k, v in TEXTS.items()], 2)]
    assert pairs == ["bike+ferry", "ferry+museum"]
    assert outputs.pop().split("] [")[0] == (
        "['bike-share+car-club', 'city-museum+library-system', 'harbour-ferry+river-ferry', "
        "'library-system+recycling-rules', 'regional-buses+tram-network'")


def turn(source: str, evidence: str, ground_truth: str = "A fact.",
         question_type: str = "initial") -> Turn:
    return Turn(index=1, answer=RagAnswer(answer=ground_truth), generated=GeneratedTurn(
        rag_input="And that?", standalone_question=f"What about {evidence}?",
        ground_truth=ground_truth, question_type=question_type, evidence=evidence,
        source=source))


PAIR = DocumentGroup(documents=[Document(id="bike", text=BIKE), Document(id="ferry", text=FERRY)])


def test_a_follow_up_moves_to_the_document_not_asked_about_then_may_use_both() -> None:
    history = [turn("bike", "CityCycle has 1,150 bicycles at 96 stations.")]
    assert {next_facts(PAIR, history, seed).sources for seed in range(20)} == {("ferry",)}
    history.append(turn("ferry", "The Tern carries 300 passengers and 60 bicycles."))
    drawn = [next_facts(PAIR, history, seed) for seed in range(40)]
    crossing = [a for a in drawn if a.sources == ("bike", "ferry")]
    assert 10 < len(crossing) < 30  # about half, by seed
    for asked in crossing:  # a fact of each, neither asked before
        assert asked.facts[0] in BIKE and asked.facts[1] in FERRY
        assert not {"CityCycle has 1,150", "The Tern carries"} & {f[:16] for f in asked.facts}
    # a false premise states one fact; a group of one draws as a document always did
    assert all(len(next_facts(PAIR, history, s, eligible=figures).sources) == 1
               for s in range(40))
    alone = DocumentGroup(documents=[PAIR.documents[1]])
    assert all(next_facts(alone, history[1:], s).facts == (next_fact(alone.documents[0],
                                                                      history[1:], s),)
               for s in range(20))


@pytest.mark.parametrize(("candidate", "reason"), [
    (turn("", "CityCycle has 1,150 bicycles at 96 stations."),
     "source '' is none of the source texts; name the one the evidence is copied from: "
     '"bike" or "ferry"'),
    (turn("bike", "The Tern carries 300 passengers and 60 bicycles."),
     'the evidence is copied from "ferry", not from "bike" that source names'),
    (turn("bike", "CityCycle has 1,150 bicycles at 96 stations.", "It has 300 bicycles."),
     "ground_truth states 300, which the quoted sentence of the source text does not"),
    (turn("bike+ferry", "An annual CityCycle membership costs 60 marks.\nA single crossing "
          "costs 3 marks.", "A single crossing costs 3 marks.", "cross_document"),
     'ground_truth uses nothing of the fact of "bike"'),
    (turn("bike+ferry", "An annual CityCycle membership costs 60 marks.\nA single crossing "
          "costs 3 marks.", "A membership is 60 marks, a crossing 300.", "cross_document"),
     "ground_truth states 300, which neither fact states"),
])
def test_the_exact_checks_tie_a_turn_to_the_documents_it_names(candidate: Turn,
                                                                reason: str) -> None:
    verdict = exact_verdict(candidate.generated, PAIR, [], role=role("precise"))
    assert not verdict.valid and verdict.categories == ["ground_truth"]
    assert reason in verdict.feedback
    both = candidate.generated.model_copy(update={
        "ground_truth": "A membership is 60 marks and a crossing 3 marks."})
    if both.question_type == "cross_document":
        assert exact_verdict(both, PAIR, [], role=role("precise")).valid


def test_a_group_has_prompts_of_its_own_and_one_documents_bands_stay_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.resources
    import shutil

    from pytest_ragdive.plugin.gate import prompts_digest

    metrics = ("correctness", "forgetfulness")
    prompts_digest.cache_clear()
    one, group = prompts_digest("precise", metrics), prompts_digest("precise", metrics, True)
    assert group != one
    # a group prompt edited: the groups' bands go stale, a single document's do not
    edited = tmp_path / "prompts"
    shutil.copytree(str(importlib.resources.files("pytest_ragdive.prompts")), edited)
    (edited / "group" / "generator.j2").write_text("another prompt\n")
    monkeypatch.setattr(importlib.resources, "files", lambda package: edited)
    prompts_digest.cache_clear()
    try:
        assert prompts_digest("precise", metrics) == one
        assert prompts_digest("precise", metrics, True) not in (one, group)
    finally:
        prompts_digest.cache_clear()


def test_a_turn_of_a_group_is_about_the_documents_its_evidence_is_from() -> None:
    from pytest_ragdive.engine.evaluation.evaluator import subject_of

    pair = DocumentGroup(documents=[
        Document(id="bike", text="# Brenmouth Bike-Share\n\nText."),
        Document(id="ferry", text="# Brenmouth Harbour Ferry\n\nText.")])
    asked = turn("bike+ferry", "A.\nB.", "A and B.", "cross_document")
    assert subject_of(asked, pair) == "Brenmouth Bike-Share and Brenmouth Harbour Ferry"
    one = asked.model_copy(update={"generated": asked.generated.model_copy(
        update={"source": "ferry"})})
    assert subject_of(one, pair) == "Brenmouth Harbour Ferry"
