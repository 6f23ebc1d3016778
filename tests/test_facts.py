"""Which fact a follow-up asks about: one no turn used, related to the last turn."""

from __future__ import annotations

from pytest_ragdive.engine.facts import facts, next_fact
from pytest_ragdive.engine.models import Document, GeneratedTurn, RagAnswer, Turn

DOC = Document(id="ferry", text=(
    "# Harbour Ferry\n\nThe ferry crosses the estuary in 14 minutes. The Tern carries 300 "
    "passengers and 60 bicycles. The Tern charges for eight minutes at the terminal. The Gannet still runs on diesel; it will be converted in 2026."
    "\n\nA single crossing costs 3 marks. Trams leave the terminal every 6 minutes."))


def turn(evidence: str, question: str, answer: str) -> Turn:
    return Turn(index=1, generated=GeneratedTurn(
        rag_input=question, standalone_question=question, ground_truth=answer,
        evidence=evidence, question_type="initial"), answer=RagAnswer(answer=answer))


def test_the_facts_are_sentences_and_clauses_without_headings() -> None:
    assert facts(DOC) == [
        "The ferry crosses the estuary in 14 minutes.",
        "The Tern carries 300 passengers and 60 bicycles.",
        "The Tern charges for eight minutes at the terminal.", "The Gannet still runs on diesel", "it will be converted in 2026.",
        "A single crossing costs 3 marks.", "Trams leave the terminal every 6 minutes."]


def test_a_follow_up_asks_about_an_unused_fact_related_to_the_last_turn() -> None:
    first = turn("The Tern carries 300 passengers and 60 bicycles.",
                 "How many passengers does the Tern carry?", "The Tern carries 300.")
    drawn = {next_fact(DOC, [first], seed) for seed in range(40)}
    # never the sentence turn 1 asked about: the other one about the Tern
    assert drawn == {"The Tern charges for eight minutes at the terminal."}


def test_with_nothing_related_any_unused_fact_is_drawn() -> None:
    first = turn("A single crossing costs 3 marks.", "What does a crossing cost?", "3 marks.")
    draws = [next_fact(DOC, [first], seed) for seed in range(40)]
    assert "A single crossing costs 3 marks." not in draws and len(set(draws)) > 1
    # the seed alone decides: drawn again in another order, each seed draws the same fact
    assert [next_fact(DOC, [first], seed) for seed in reversed(range(40))] == draws[::-1]
