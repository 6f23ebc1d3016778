"""Faults in the RAG system under test. Raising and hanging are in tests/test_engine.py
(each ends only its own dialogue); here, the wrong type of answer."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

DOC = ragdive.Document(id="tower", text="The tower is 120 m tall.")


class Bot:
    def __init__(self, reply: object) -> None:
        self.reply = reply

    def answer(self, question: str, history: list) -> object:
        return self.reply


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("It is 120 m.", "returned str for"),
        ({"answer": 120}, "returned dict for"),
        (None, "returned NoneType for"),
        (ragdive.RagAnswer.model_construct(answer="It is 120 m.", contexts=[120, None]),
         "returned RagAnswer for 'What is the topic of The tower is 120 m?' (contexts.0: Input should be a valid "
         "string)"),
    ],
    ids=["str", "bad dict", "None", "unvalidated RagAnswer"],
)
def test_a_wrong_answer_type_names_the_fix(tmp_path: Path, reply: object, message: str) -> None:
    dialogue = ragdive.run_dialogue(DOC, Bot(reply), judges=ragdive.Judges(scripted()), turns=2,
                                    metrics=["correctness"], cache_dir=tmp_path)
    assert dialogue.scores == {}
    error = dialogue.errors["dialogue"]
    assert error.startswith("turn 1: the RAG adapter") and message in error
    assert "return pytest_ragdive.RagAnswer(answer=..., contexts=[...])" in error
