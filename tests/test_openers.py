"""Dialogues that start from real users' first messages (ragdive_openers)."""

from __future__ import annotations

import json

import pytest
from conftest import PROJECT_CONFTEST

OPENERS = [{"message": "hi, whats the topic of alpha??", "document": "alpha"},
           {"message": "what is this topic", "document": None}]

TEST = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=1, openers="openers.jsonl")
def test_bot(ragdive_dialogue):
    first = ragdive_dialogue.turns[0].generated
    print(f"\\nOPENED {ragdive_dialogue.document_id}: {first.rag_input!r} / "
          f"{first.standalone_question!r}")
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(PROJECT_CONFTEST)
    pytester.makepyfile(test_bot=TEST)
    pytester.makeini("[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n")
    write(pytester, OPENERS)
    return pytester


def write(pytester: pytest.Pytester, lines: list[dict]) -> None:
    pytester.path.joinpath("openers.jsonl").write_text(
        "\n".join(json.dumps({k: v for k, v in line.items() if v is not None})
                  for line in lines) + "\n")


def test_each_dialogue_starts_from_its_documents_opener_or_a_general_one(project) -> None:
    result = project.runpytest("-m", "ragdive", "--ragdive-update", "-s")
    result.assert_outcomes(passed=2)
    # the message goes to the bot as the user wrote it; the generator, shown it, wrote the
    # stand-alone question (the scripted one writes "In full: " and the message it was shown)
    result.stdout.fnmatch_lines([
        "*OPENED alpha: 'hi, whats the topic of alpha??' / "
        "'In full: hi, whats the topic of alpha??'*",
        "*OPENED beta: 'what is this topic' / 'In full: what is this topic'*"])
    # the band says what it was recorded with
    band = json.loads((project.path / "__ragdive__" / "test_bot" / "test_bot[alpha].json")
                      .read_text())
    assert band["produced_by"]["openers"].startswith("2 messages, sha256 ")
    # other openers make other conversations: the band no longer fits
    write(project, [*OPENERS, {"message": "and the topic of beta?", "document": "beta"}])
    changed = project.runpytest("-m", "ragdive")
    changed.stdout.fnmatch_lines(["*openers: '2 messages, sha256 *' -> '3 messages, sha256 *'*"])


def test_an_opener_the_document_cannot_answer_ends_its_dialogue_saying_so(project) -> None:
    project.makeconftest(PROJECT_CONFTEST.replace(
        'JUDGE = scripted({"YesNo": yes}, name="judge")',
        'JUDGE = scripted({"YesNo": yes, "OpenerKey": lambda m: {"standalone_question": "",'
        ' "evidence": "", "ground_truth": ""}}, name="judge")'))
    result = project.runpytest("-m", "ragdive", "--ragdive-update", "-k", "alpha")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*turn 1: the opening message 'hi, whats the topic of alpha??' could not be answered "
        "from document 'alpha'*give it the \"document\" it concerns in the openers file*"])


@pytest.mark.parametrize(("lines", "message"), [
    ('{"message": "hi"}\nnot json\n', "openers.jsonl:2: not an opener"),
    ('{"text": "hi"}\n', "openers.jsonl:1: not an opener"),
    ('{"message": "  "}\n', "openers.jsonl:1: the message is empty"),
    ('{"message": "hi", "document": "gamma"}\n',
     "openers name documents that are not among the test's: 'gamma' (documents: alpha, beta)"),
])
def test_a_bad_openers_file_stops_the_collection_naming_the_line(
    project, lines: str, message: str
) -> None:
    project.path.joinpath("openers.jsonl").write_text(lines)
    result = project.runpytest("-m", "ragdive", "--ragdive-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_missing_openers_file_in_the_ini_names_the_setting(project) -> None:
    project.makepyfile(test_bot=TEST.replace(', openers="openers.jsonl"', ""))
    project.makeini("[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n"
                    "ragdive_openers = logs/first.jsonl\n")
    result = project.runpytest("-m", "ragdive")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini ragdive_openers: openers file *logs/first.jsonl* not found*"])
