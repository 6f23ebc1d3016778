"""The exact checks of a generated turn."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytest_ragdive.engine.base.models import GeneratedTurn
from pytest_ragdive.engine.validation import checks

DOC = ("CityCycle is Brenmouth's public bike-share scheme. It was launched on 1 June 2014 with "
       "300 bicycles and has since grown to 1,150 bicycles, including 350 electric bikes added "
       "in 2021.")


def turn(rag_input: str = "How many are electric?", standalone: str = "How many electric "
         "bikes does CityCycle have?", evidence: str = "including 350 electric bikes added in "
         "2021", ground_truth: str = "350.") -> GeneratedTurn:
    return GeneratedTurn(rag_input=rag_input, standalone_question=standalone,
                         ground_truth=ground_truth, evidence=evidence,
                         question_type="follow_up")


def test_a_question_asked_before_is_a_repeat() -> None:
    first = turn()
    assert checks.repeated_question(turn(rag_input="And how many are electric?"), [first])
    paraphrase = turn(rag_input="Electric ones?", standalone="How many electric bikes does "
                      "CityCycle have in total?")
    assert checks.repeated_question(paraphrase, [first]) is not None
    other = turn(rag_input="When did it start?", standalone="When was CityCycle launched?")
    assert checks.repeated_question(other, [first]) is None


def test_the_answer_key_must_come_from_a_quoted_sentence_of_the_document() -> None:
    assert checks.unsupported_key(turn(), DOC) is None
    # a shortened quote is found; its figures are checked against the document's sentence
    short = turn(evidence="CityCycle added 350 electric bikes in 2021.")
    assert checks.unsupported_key(short, DOC) is None
    wrong = checks.unsupported_key(turn(ground_truth="It has 360 electric bikes."), DOC)
    assert wrong is not None and "360" in wrong
    invented = checks.unsupported_key(turn(evidence="Every bike has a top speed of 25 km/h."), DOC)
    assert invented is not None and "not copied" in invented
    assert "empty" in str(checks.unsupported_key(turn(evidence=" "), DOC))


def test_naming_the_document_is_caught() -> None:
    assert checks.mentions_source(turn()) is None
    found = checks.mentions_source(turn(rag_input="What does the text say about e-bikes?"))
    assert found is not None and "the text" in found


def test_a_follow_up_must_ask_about_something_its_fact_adds_to_the_conversation() -> None:
    said = ["What is CityCycle?", "Brenmouth's public bike-share scheme, with 1,150 bicycles."]
    fact = "It was launched on 1 June 2014 with 300 bicycles."
    asked = turn(standalone="When was CityCycle launched?", evidence=fact)
    assert checks.asks_its_fact(asked, [], said) is None  # "launched": another form counts
    assert checks.asks_its_fact(turn(standalone="How many bicycles did CityCycle start with, "
                                     "in 2014?", evidence=fact), [], said) is None
    # about the conversation again, keyed with the fact
    drifted = turn(standalone="How many bicycles does CityCycle have?", evidence=fact)
    assert "asks nothing that the fact states" in (checks.asks_its_fact(drifted, [], said) or "")
    # a fact asked about before (a short document ran out of facts) is the repeat check's
    assert checks.asks_its_fact(drifted, [asked], said) is None


def test_a_message_two_documents_hold_alike_singles_out_neither_in_every_process() -> None:
    # both ferries' documents hold every word of it: equal weights, summed in a set's order
    kb = Path(__file__).resolve().parents[1] / "example_project" / "kb"
    message = "What are the numbers of passengers and bicycles carried by the Tern ferry?"
    code = ("import pytest_ragdive as r; from pytest_ragdive.engine.text.english import singles_out; "
            f"d = {{x.id: x for x in r.load_documents({str(kb)!r})}}['harbour-ferry']; "
            f"print(singles_out({message!r}, d.text, d.others))")
    outputs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
               for seed in range(1, 7)]
    assert outputs == ["[]\n"] * 6
