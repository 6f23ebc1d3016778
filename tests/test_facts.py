"""Which fact a follow-up asks about: one no turn used, one the knowledge base's other
documents state alike, related to the last turn."""

from __future__ import annotations

from pathlib import Path

from pytest_ragdive.engine.base.models import Document, GeneratedTurn, RagAnswer, Turn
from pytest_ragdive.engine.documents.loading import check_unique, load_documents
from pytest_ragdive.engine.generation.facts import counterpart, facts, look_alikes, next_fact
from pytest_ragdive.engine.text.english import supporting_sentences

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


def test_a_fact_another_document_states_alike_has_its_counterpart() -> None:
    bikes, trams, _ = load_together(BIKES, TRAMS, BUSES)
    # an operator and a fare, which every service states in its own words; not the solar
    # panels, which only the bikes have
    assert counterpart("The scheme is operated by the company Pedalwerk under contract.",
                       bikes) == "The trams are operated by the company Verkehr under contract."
    assert counterpart("A single ride costs 1 mark.", bikes) == "A single ticket costs 2 marks."
    assert counterpart("Every station has a solar panel on its roof.", bikes) is None
    # the subject's own words do not make a kind: "trams" is the trams' subject
    assert counterpart("The depot at Hallgate repairs old engines.", trams) is None
    (alone,) = load_together(BIKES)
    assert counterpart("A single ride costs 1 mark.", alone) is None


def test_facts_align_by_their_words_not_by_a_list_of_one_domain() -> None:
    plans = load_together(
        "# Basic plan\n\nThe Basic plan includes 5 GB of storage for each user. "
        "Support answers by email within two days.",
        "# Team plan\n\nTeam accounts include 50 GB of storage for each user. "
        "The admin console shows an audit log.",
    )
    assert counterpart("The Basic plan includes 5 GB of storage for each user.", plans[0]) == (
        "Team accounts include 50 GB of storage for each user.")
    assert counterpart("Support answers by email within two days.", plans[0]) is None


def test_a_document_that_repeats_a_sentence_still_has_look_alikes() -> None:
    # a pool with a sentence twice (boilerplate) once indexed past the distinct scores
    repeated = BIKES + " Every station has a solar panel on its roof." * 3
    bikes, _, _ = load_together(repeated, TRAMS, BUSES)
    pool = facts(bikes)
    assert len(pool) > len(set(pool))
    assert "The scheme is operated by the company Pedalwerk under contract." in look_alikes(
        pool, bikes)


CLINIC = """# Hearing Clinic

## Clinic days

| Day | Open |
|---|---|
| Tuesday | 08:30 to 16:30 |
| Friday | 10:00 to 18:00 |

## Booking

- Book on the Patient Portal under "Hearing"
- Phone 01632 960 400 and ask for extension 275.
"""


def test_table_rows_and_list_items_are_facts_of_their_own() -> None:
    assert facts(Document(id="clinic", text=CLINIC)) == [
        "Day: Tuesday, Open: 08:30 to 16:30.",
        "Day: Friday, Open: 10:00 to 18:00.",
        'Book on the Patient Portal under "Hearing".',
        "Phone 01632 960 400 and ask for extension 275."]
    # evidence copied from the table as it is written, or from the fact, is found
    assert supporting_sentences("| Friday | 10:00 to 18:00 |", CLINIC) == [
        "Day: Friday, Open: 10:00 to 18:00."]
    assert "Day: Friday, Open: 10:00 to 18:00." in supporting_sentences(
        "Day: Friday, Open: 10:00 to 18:00.", CLINIC)


def test_figures_written_as_words_are_not_a_kind() -> None:
    days, _ = load_together("# A\n\nSessions are held on three days only.",
                            "# B\n\nA slot is usually free within three working days.")
    assert counterpart("Sessions are held on three days only.", days) is None
