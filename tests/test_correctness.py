"""Correctness asks of the whole answer key and of each part the question asks for: a reply
that the whole-key question lets through fails on the part it leaves out or gets wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_ragdive.engine.base.models import Dialogue, GeneratedTurn, RagAnswer, Turn
from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.engine.evaluation.evaluator import evaluate
from pytest_ragdive.engine.text.answer_keys import key_parts
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.model import Model
from pytest_ragdive.llm.scripted import calls, scripted

QUESTION = "How much bread flour, wholemeal flour and salt go into the white loaf?"
KEY = "450 g strong white bread flour, 50 g wholemeal flour and 10 g salt."


@pytest.mark.parametrize(("key", "question", "parts"), [
    (KEY, QUESTION, ["450 g strong white bread flour", "50 g wholemeal flour", "10 g salt"]),
    ("Up to 26 weeks: the first 16 weeks at 100% of base salary.",
     "How many weeks is maternity leave, and at what share of salary?",
     ["Up to 26 weeks", "the first 16 weeks at 100% of base salary"]),
    # a piece with no figure and under two words of content goes with the one before
    ("Within 10 seconds, always.", "How fast must the endpoint reply?",
     ["Within 10 seconds, always"]),
    # the first part is always asked; a later one only when it names what the question does
    ("Up to 26 weeks: the first 16 weeks at 100% of base salary.",
     "How long is maternity leave, and how is it paid?", ["Up to 26 weeks"]),
    # a key that quotes a whole sentence: the parts nobody asked for are not asked
    ("It was founded in 2011 by residents, 90 of them electric.", "When was the club founded?",
     ["It was founded in 2011 by residents"]),
    ("16:30", "When is the last climb?", ["16:30"]),
    # a question that asks one thing asks the one part that shares most of its words
    ("A single ticket costs 2.40 marks and is valid for 90 minutes.",
     "How much does a single ticket cost?", ["A single ticket costs 2.40 marks"]),
    # ... a part without its subject read with the one before
    ("A single ticket costs 2.40 marks and is valid for 90 minutes.",
     "How long is a single ticket valid?", ["is valid for 90 minutes"]),
    ("The lighthouse was built in 1871 and automated in 1962.",
     "When was the lighthouse automated?", ["automated in 1962"]),
    # ... a later sentence when it is the one asked
    ("The club has 400 bikes. A whole day costs 45 marks.",
     "What does a whole day cost at the club?", ["A whole day costs 45 marks"]),
    # names say what a question is about, not what it asks: they only break a tie
    ("Pedalwerk runs the Brenmouth bike share. Bikes cost 1 mark per 30 minutes.",
     "Which company runs the Brenmouth bike share?",
     ["Pedalwerk runs the Brenmouth bike share"]),
    # a condition is a part of its own; the part read with its subject answers "which company"
    ("The scheme is owned by the city and operated by the company Pedalwerk until 2028.",
     "What company operates the scheme?", ["operated by the company Pedalwerk"]),
    ("The scheme is owned by the city and operated by the company Pedalwerk until 2028.",
     "Who owns the city's bike-share scheme?", ["The scheme is owned by the city"]),
    # a part the question states whole is not what it asks
    ("During the Harbour Festival in July, Line 3 runs every 4 minutes.",
     "During the Harbour Festival in July, how often does Line 3 run?",
     ["Line 3 runs every 4 minutes"]),
    ("During the Harbour Festival in July, Line 3 runs every 4 minutes.",
     "When does Line 3 run every 4 minutes?", ["During the Harbour Festival in July"]),
    ("In 2023, the buses carried 11.4 million passengers, 94 percent of them on time.",
     "How many passengers did the buses carry in 2023?",
     ["the buses carried 11.4 million passengers"]),
    # a question that asks for a figure asks the part that holds one
    ("Holders of a Brenmouth library card get the annual membership at half price, for 30 "
     "marks.", "How much does a library card membership cost?", ["for 30 marks"]),
    # a part that renames the one before is never the one asked
    ("The ferry is operated by Brenmouth Verkehr, the company that also runs the trams.",
     "Who operates the ferry?", ["The ferry is operated by Brenmouth Verkehr"]),
    # a bare "Yes" goes with the part after it; a short first part sharing no word is the answer
    ("Yes, bikes ride free. A bike rack holds 6 bikes.", "Can I take my bike along?",
     ["Yes, bikes ride free"]),
    ("3 years, if registered within 30 days.", "How long is the warranty?", ["3 years"]),
    # no part shares a word: the first
    ("Trams run from 5:00 until midnight, every day of the year.",
     "What are the service hours?", ["Trams run from 5:00 until midnight"]),
])
def test_key_parts(key: str, question: str, parts: list[str]) -> None:
    assert key_parts(key, question) == parts


def judge(messages: list[dict]) -> float:
    """The whole-key question says yes to anything (a small model's bias); a part's
    question says yes when the reply holds the part's figure."""
    prompt = messages[-1]["content"]
    part = re.search(r"in any wording or units: (.*)\? Answer", prompt)
    if part is None:
        return 0.9
    reply = re.search(r"^Reply to check: (.*)$", prompt, re.M)
    assert reply is not None
    return 0.9 if re.findall(r"\d+", part.group(1))[0] in reply.group(1).split() else 0.1


def scored(reply: str, tmp_path: Path) -> tuple[Turn, list[str]]:
    model = scripted({"YesNo": judge})
    turn = Turn(index=1, generated=GeneratedTurn(
        rag_input=QUESTION, standalone_question=QUESTION, ground_truth=KEY,
        question_type="initial"), answer=RagAnswer(answer=reply))
    dialogue = Dialogue(document_id="bread", role="precise", turns=[turn])
    client = LLMClient(ResponseCache(tmp_path / "cache", "new"))
    run_blocking(evaluate(dialogue, client, Model(model), ["correctness"]))
    return dialogue.turns[0], [messages[-1]["content"] for _, messages in calls(model)]


def test_a_reply_with_every_part_is_correct(tmp_path: Path) -> None:
    turn, asked = scored("You need 450 g of bread flour, 50 g of wholemeal and 10 g salt.",
                         tmp_path)
    assert turn.judgements["correctness"].score == 1.0
    assert len(asked) == 4  # the whole key, then its three parts


def test_a_reply_that_leaves_a_part_out_is_not_correct_and_says_which(tmp_path: Path) -> None:
    turn, _ = scored("You need 450 g of bread flour and 50 g of wholemeal, and that's it!",
                     tmp_path)
    judgement = turn.judgements["correctness"]
    assert judgement.score == 0.0
    assert "least for a part, '10 g salt': 0.10" in judgement.reason
