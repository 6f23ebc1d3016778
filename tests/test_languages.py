"""Documents not in English: the exact checks that read English words are not applied to
them, which the summary says once, naming the documents, and their dialogues hold."""

from __future__ import annotations

import json

import pytest
from conftest import PROJECT_FIXTURES, scripted_project

from pytest_ragdive.engine.base.models import Document, DocumentGroup, GeneratedTurn
from pytest_ragdive.engine.roles.registry import role
from pytest_ragdive.engine.text.english import is_english
from pytest_ragdive.engine.validation.validator import english, exact_verdict

NORD = ("# Nordfähre\n\nDie Nordfähre fährt vom Hafen zur Insel Wangerau. Sie wird von der "
        "Reederei Kamp betrieben. Eine einfache Fahrt kostet 4 Euro für Erwachsene.")
SUED = ("# Südfähre\n\nDie Südfähre fährt vom Hafen nach Ostmark. Sie wird von der Reederei "
        "Lenz betrieben. Eine einfache Fahrt kostet 6 Euro für Erwachsene.")
BAC = ("# Bac du Nord\n\nLe bac relie le port à l'île de Ressac. Il est exploité par la société "
       "Marée. Un aller simple coûte 3 euros pour les adultes.")


def test_german_and_french_are_not_read_as_english() -> None:
    assert not is_english(NORD) and not is_english(BAC)
    assert is_english("The ferry goes from the harbour to the island. It is run by a company.")


def test_the_checks_that_read_english_are_not_applied_to_another_language() -> None:
    nord = Document(id="nord", text=NORD, others=(SUED,))
    # "die Fähre" could be either ferry: read as English words it would not name its topic
    first = GeneratedTurn(rag_input="Wer betreibt die Fähre?",
                          standalone_question="Wer betreibt die Fähre?",
                          ground_truth="Die Reederei Kamp.", question_type="initial",
                          evidence="Sie wird von der Reederei Kamp betrieben.")
    assert not english(DocumentGroup.of(nord))
    assert exact_verdict(first, DocumentGroup.of(nord), [], role=role("precise")).valid
    as_english = Document(id="nord", text="# North Ferry\n\nThe North Ferry goes from the "
                          "harbour to the island. It is run by Kamp.",
                          others=("# South Ferry\n\nThe South Ferry goes from the harbour to "
                                  "Ostmark. It is run by Lenz.",))
    turn = first.model_copy(update={"rag_input": "Who runs the ferry?",
                                    "standalone_question": "Who runs the ferry?",
                                    "evidence": "It is run by Kamp."})
    assert not exact_verdict(turn, DocumentGroup.of(as_english), [], role=role("precise")).valid


CONFTEST = '''
import re
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted
from pytest_ragdive.llm.scripted_replies import first_sentence

def first(messages):
    return {"question": "Wer betreibt die Fähre?", "evidence": first_sentence(messages),
            "ground_truth": "Die Reederei."}

def follow_up(messages):
    fact = re.search(r"^Fact: (.*)$", messages[-1]["content"], re.M).group(1)
    return {"ground_truth": fact, "question_type": "follow_up",
            "standalone_question": "Wie viel kostet eine Fahrt mit der Nordfähre?",
            "rag_input": "Und was kostet eine Fahrt?"}

JUDGE = scripted({"FirstQuestion": first, "NextQuestion": follow_up}, name="judge")

class Bot:
    def answer(self, question, history):
        return ragdive.RagAnswer(answer="Die Reederei Kamp.", contexts=["Die Nordfähre."])

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="nord", text=%r), ragdive.Document(id="sued", text=%r),
])
''' % (NORD, SUED) + PROJECT_FIXTURES

TEST = '''
import json
from pathlib import Path
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=1, metrics=["correctness"])
def test_bot(ragdive_dialogue):
    Path(f"{ragdive_dialogue.document_id}.json").write_text(json.dumps(
        [len(t.rejections) for t in ragdive_dialogue.turns]))
'''


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_a_dialogue_about_german_documents_holds_and_the_summary_says_why(
    pytester: pytest.Pytester, xdist: list[str],
) -> None:
    project = scripted_project(pytester, CONFTEST, TEST)
    result = project.runpytest("-m", "ragdive", "--ragdive-update", *xdist)
    assert result.ret == 0, result.stdout.str()
    assert [json.loads((project.path / f"{d}.json").read_text()) for d in ("nord", "sued")] == [
        [0, 0], [0, 0]]
    notes = [line for line in result.outlines if "not in English" in line]
    assert notes == [
        "note: 2 document(s) not in English: nord, sued; the exact checks that read English "
        "(asks_its_fact, names_its_topic, needs_conversation, refers_back) were not applied "
        "to them, and their follow-ups were not rewritten"]
