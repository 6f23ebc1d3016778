"""A follow-up about a fact of a kind the look-alikes share is asked by its kind, naming
nothing ("Who runs it?"): only the conversation says which service is meant."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.engine.documents.loading import known_together
from pytest_ragdive.engine.generation.kinds import kind_message, unasked_kind
from pytest_ragdive.llm.scripted import calls, scripted


@pytest.mark.parametrize(("fact", "message"), [
    ("It is owned by the Ardle Navigation Trust and operated by Riverline.", "Who owns it?"),
    ("It is operated by Brenmouth Verkehr.", "Who operates it?"),
    ("It is run by the company Valleybus under a ten-year contract.", "Who runs it?"),
    ("In 2023 the ferry carried 410,000 passengers.", "How many passengers did it carry?"),
    ("The ferry has run since 1954, when it replaced a rowing boat.", "When did it start?"),
    ("Trams run from 5:00 to 0:30 on weekdays.", "What are its hours?"),
    ("Ferries leave every 30 minutes.", "How often does it run?"),
    ("The crossing is 3.2 kilometres long.", "How long is it?"),
    ("A single ticket costs 2.40 marks.", "How much is a single fare?"),
    ("Three boats are in service.", "How big is its fleet?"),
    ("The fleet has 54 low-floor trams.", "How big is its fleet?"),
    ("Each boat carries 120 passengers and 20 bicycles.", None),
    ("The terminal building also contains a cafe.", None),
])
def test_a_fact_is_asked_by_its_kind(fact: str, message: str | None) -> None:
    assert kind_message(fact) == message


def test_a_kind_is_asked_once() -> None:
    fact = "It is run by the company Valleybus."
    assert unasked_kind(fact, ["What is it?"]) == "Who runs it?"
    assert unasked_kind(fact, ["What is it?", "Who runs it?"]) is None


class Bot:
    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        return ragdive.RagAnswer(answer="The Harbour Ferry goes to Skellness.", contexts=[FERRY])


FERRY = ("# Harbour Ferry\n\nThe Harbour Ferry crosses the estuary to Skellness. "
         "It is operated by Verkehr under contract. The terminal has a small cafe.")
RIVER = ("# River Ferry\n\nThe River Ferry goes up the river to Dalby. "
         "It is operated by Riverline under contract. The quay has a lift.")


def test_a_follow_up_of_a_kind_names_nothing_and_its_stand_alone_form_names_the_subject(
    tmp_path: Path,
) -> None:
    ferry, _ = known_together([ragdive.Document(id="ferry", text=FERRY),
                               ragdive.Document(id="river", text=RIVER)])
    first = {"question": "Where does the Harbour Ferry go?",
             "evidence": "The Harbour Ferry crosses the estuary to Skellness.",
             "ground_truth": "To Skellness."}

    def next_question(messages: list[dict]) -> dict:
        # the model copies the given message and names the subject in the stand-alone form
        return {"ground_truth": "Verkehr operates it.", "rag_input": "Who operates it?",
                "standalone_question": "Who operates the Harbour Ferry?",
                "question_type": "follow_up"}

    model = scripted({"FirstQuestion": lambda m: first, "NextQuestion": next_question})
    dialogue = ragdive.run_dialogue(ferry, Bot(), judges=ragdive.Judges(model), turns=2,
                                    metrics=["correctness"], cache_dir=tmp_path)
    assert dialogue.errors == {}
    turn = dialogue.turns[1].generated
    assert (turn.rag_input, turn.evidence) == (
        "Who operates it?", "It is operated by Verkehr under contract.")
    assert dialogue.turns[1].rejections == []
    # the generator was told the message and what "it" is
    (prompt,) = [m[-1]["content"] for s, m in calls(model) if s == "NextQuestion"]
    assert 'The user\'s message is: Who operates it? ("it" is Harbour Ferry)' in prompt


def test_a_document_loaded_alone_is_asked_as_before(tmp_path: Path) -> None:
    # nothing to be told apart from: the model's message, not a kind's
    model = scripted({"FirstQuestion": lambda m: {
        "question": "Where does the Harbour Ferry go?", "ground_truth": "To Skellness.",
        "evidence": "The Harbour Ferry crosses the estuary to Skellness."}})
    ragdive.run_dialogue(ragdive.Document(id="ferry", text=FERRY), Bot(),
                         judges=ragdive.Judges(model), turns=2, metrics=["correctness"],
                         cache_dir=tmp_path)
    prompts = [m[-1]["content"] for s, m in calls(model) if s == "NextQuestion"]
    assert prompts and not any("The user's message is" in p for p in prompts)


def test_a_stand_alone_form_that_leans_on_nothing_said_is_told_the_subject(
    tmp_path: Path,
) -> None:
    ferry, _ = known_together([ragdive.Document(id="ferry", text=FERRY),
                               ragdive.Document(id="river", text=RIVER)])
    # turn 1 never names the ferry, and the model's stand-alone form does not either
    first = {"question": "Which boat crosses to Skellness?", "ground_truth": "The ferry.",
             "evidence": "The Harbour Ferry crosses the estuary to Skellness."}
    model = scripted({"FirstQuestion": lambda m: first, "NextQuestion": lambda m: {
        "ground_truth": "Verkehr.", "rag_input": "Who operates it?",
        "standalone_question": "Who operates the service?", "question_type": "follow_up"}})
    dialogue = ragdive.run_dialogue(ferry, Bot(), judges=ragdive.Judges(model), turns=2,
                                    metrics=["correctness"], cache_dir=tmp_path)
    turn = dialogue.turns[1].generated
    assert (turn.rag_input, turn.standalone_question) == (
        "Who operates it?", "About Harbour Ferry: Who operates the service?")
