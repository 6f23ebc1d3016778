"""Which fact a follow-up asks about: one no turn used, one the knowledge base's other
documents state alike, related to the last turn."""

from __future__ import annotations

from pathlib import Path

from pytest_ragdive.engine.base.models import Document, GeneratedTurn, RagAnswer, Turn
from pytest_ragdive.engine.documents.loading import check_unique, load_documents
from pytest_ragdive.engine.generation.facts import facts, look_alikes, next_fact, shared_kinds

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


# three services of one city: each has an operator and a fare, and one thing of its own
BIKES = ("# City Bikes\n\nThe scheme is operated by the company Pedalwerk under contract. "
         "A single ride costs 1 mark. Every station has a solar panel on its roof.")
TRAMS = ("# Trams\n\nThe trams are operated by the company Verkehr under contract. "
         "A single ticket costs 2 marks. The depot at Hallgate repairs old engines.")
BUSES = ("# Buses\n\nThe buses are operated by the company Valleybus under contract. "
         "A single ticket costs 3 marks. Drivers wear green uniforms in winter.")


def test_a_follow_up_prefers_a_fact_the_other_documents_state_alike() -> None:
    bikes, _, _ = load_together(BIKES, TRAMS, BUSES)
    first = turn("A single ride costs 1 mark.", "What does a ride cost?", "1 mark.")
    drawn = {next_fact(bikes, [first], seed, alike=True) for seed in range(40)}
    # the operator, which every service has, not the solar panels, which only the bikes have
    assert drawn == {"The scheme is operated by the company Pedalwerk under contract."}
    assert look_alikes(facts(bikes), bikes) == [
        "The scheme is operated by the company Pedalwerk under contract.",
        "A single ride costs 1 mark."]


def test_a_document_loaded_alone_has_no_look_alikes() -> None:
    (bikes,) = load_together(BIKES)
    first = turn("A single ride costs 1 mark.", "What does a ride cost?", "1 mark.")
    drawn = {next_fact(bikes, [first], seed, alike=True) for seed in range(40)}
    assert len(drawn) == 2 and look_alikes(facts(bikes), bikes) == facts(bikes)


def test_documents_loaded_together_know_each_other_and_a_subset_keeps_them(
    tmp_path: Path,
) -> None:
    for name, text in (("bikes", BIKES), ("trams", TRAMS), ("buses", BUSES)):
        (tmp_path / f"{name}.md").write_text(text, encoding="utf-8")
    docs = load_documents(tmp_path)
    assert [sorted(d.others) for d in docs] == [
        sorted([BUSES, TRAMS]), sorted([BIKES, TRAMS]), sorted([BIKES, BUSES])]
    subset = check_unique([docs[0]])  # "the suite talks about the buses" keeps the kb
    assert subset[0].others == docs[0].others
    assert "others" not in subset[0].model_dump()  # not recorded: records stay as they were


def load_together(*texts: str) -> list[Document]:
    return check_unique(Document(id=f"d{i}", text=t) for i, t in enumerate(texts))


def test_a_fact_of_a_kind_only_its_document_states_is_not_a_shared_kind() -> None:
    bikes, _, _ = load_together(BIKES, TRAMS, BUSES)
    # an operator and a fare, which every service states; not the solar panels
    assert shared_kinds(facts(bikes), bikes) == [
        "The scheme is operated by the company Pedalwerk under contract.",
        "A single ride costs 1 mark."]
    (alone,) = load_together(BIKES)
    assert shared_kinds(facts(alone), alone) == facts(alone)


def test_a_document_that_repeats_a_sentence_still_has_look_alikes() -> None:
    # a pool with a sentence twice (boilerplate) once indexed past the distinct scores
    repeated = BIKES + " Every station has a solar panel on its roof." * 3
    bikes, _, _ = load_together(repeated, TRAMS, BUSES)
    pool = facts(bikes)
    assert len(pool) > len(set(pool))
    assert "The scheme is operated by the company Pedalwerk under contract." in look_alikes(
        pool, bikes)
