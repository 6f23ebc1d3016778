"""A role a user adds in a conftest (the ``pytest_ragdive_roles`` hook), end to end: it
drives the dialogue, its exact check rejects an attempt, its metric is scored and banded."""

from __future__ import annotations

import json

import pytest
from conftest import PROJECT_FIXTURES, scripted_project

from pytest_ragdive.engine.base.models import Dialogue

CONFTEST = '''
import re
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted
from pytest_ragdive.llm.scripted_replies import generic

PERSONA = "You are a curious user who wants to know why things are as they are."

def next_question(messages):
    """A follow-up that asks why only once the role's check asked for it."""
    prompt = messages[-1]["content"]
    assert PERSONA in prompt, "the generator plays the role's persona"
    question = generic("NextQuestion")(messages)
    if "ask why" in prompt:  # the role's feedback on the rejected attempt
        question["rag_input"] = "Why is that so about it?"
    return question

def yes(messages):
    """The role's judge: yes when the reply gives a reason; every other judge: yes."""
    prompt = messages[-1]["content"]
    if not prompt.startswith("Curiosity check."):
        return 0.9
    return 0.9 if "because" in prompt.rsplit("Reply:", 1)[-1] else 0.1

JUDGE = scripted({"YesNo": yes, "NextQuestion": next_question}, name="judge")

class Curious(ragdive.Role):
    def exact_checks(self, candidate, group, history):
        asks = "why" in candidate.rag_input.lower()
        return {"asks_why": None if asks else "rag_input must ask why"}

CURIOUS = Curious(
    "curious", description=PERSONA, categories={"asks_why": "question_not_consistent"},
    metric=ragdive.RoleMetric(
        "explained",
        ragdive.BinaryJudge("Does the reply say why?", "the reply explains",
                            "the reply gives no reason", True, 0.5),
        no_turn="no turn asked why",
        template="Curiosity check.\\nQuestion: {{ question }}\\nReply: {{ answer | line }}\\n"
                 "{{ ask }} Answer yes or no.",
    ),
)

def pytest_ragdive_roles():
    return [CURIOUS]

class Bot:
    def answer(self, question, history):
        if question.startswith("Why"):
            return ragdive.RagAnswer(answer="It is so because the ferry says so.",
                                     contexts=["The ferry is blue."])
        return ragdive.RagAnswer(answer="The ferry is blue.", contexts=["The ferry is blue."])

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="ferry", text="The Tern ferry is blue. It sails every hour. "
                     "Tickets cost 6 euros. It first sailed in 1987."),
])
''' + PROJECT_FIXTURES

TEST = '''
from pathlib import Path
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=1, role="curious", metrics=["correctness", "explained"])
def test_bot(ragdive_dialogue):
    Path("dialogue.json").write_text(ragdive_dialogue.model_dump_json())
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    return scripted_project(pytester, CONFTEST, TEST)


def test_a_role_from_a_conftest_drives_checks_and_scores_the_dialogue(project) -> None:
    result = project.runpytest("-m", "ragdive", "--ragdive-update")
    result.assert_outcomes(passed=1)
    dialogue = Dialogue.model_validate_json((project.path / "dialogue.json").read_text())
    assert dialogue.role == "curious"
    # its check rejected turn 2's first attempt, in its category, with its feedback
    second = dialogue.turns[1]
    assert [r.validation.categories for r in second.rejections] == [["question_not_consistent"]]
    assert "rag_input must ask why" in second.rejections[0].validation.feedback
    assert second.generated.rag_input == "Why is that so about it?"
    # its metric scored the follow-up only, with its own prompt and judge
    assert "explained" not in dialogue.turns[0].judgements
    assert second.judgements["explained"].reason.startswith("the reply explains")
    assert dialogue.scores["explained"] == 1.0
    band = json.loads(next((project.path / "__ragdive__").rglob("test_bot*ferry*.json")).read_text())
    assert "explained" in band["metrics"]


def test_the_bands_hold_against_a_bot_that_stops_explaining(project) -> None:
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=1)
    assert project.runpytest("-m", "ragdive").ret == 0
    conftest = project.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace("It is so because", "It is so as"))
    result = project.runpytest("-m", "ragdive", "--ragdive-record-mode=all")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*worse than the baseline: explained*"])


def test_a_role_whose_name_is_taken_is_a_usage_error(project) -> None:
    conftest = project.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace('Curious(\n    "curious"', 'Curious(\n    "vague"'))
    result = project.runpytest("-m", "ragdive")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "the role name 'vague' is taken" in result.stderr.str()
