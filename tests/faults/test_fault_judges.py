"""Faults in the judges' replies: a score is the mean over every turn or it is an error,
never a mean over the turns that happened to parse."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

DOC = ragdive.Document(id="tower", text="The Alder Tower is 120 m tall. It opened in 1931.")


class Bot:
    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        return ragdive.RagAnswer(answer=f"It is 120 m. ({question})", contexts=[DOC.text])


def test_one_malformed_reply_makes_the_metric_an_error_not_a_partial_mean(tmp_path: Path) -> None:
    def judge(messages: list[dict]) -> object:
        prompt = messages[-1]["content"]
        forgetfulness = prompt.startswith("Question:") and "Reply to check" not in prompt
        if forgetfulness and "third" in prompt:
            return "maybe"  # turn 3's reply to the forgetfulness judge is garbled
        return 0.9

    dialogue = ragdive.run_dialogue(
        DOC, Bot(), judges=ragdive.Judges(scripted({"YesNo": judge})), turns=3,
        metrics=["correctness", "forgetfulness", "context_retention"],
        cache_dir=tmp_path / "cache")
    broken = [m for m in ("forgetfulness", "context_retention") if m in dialogue.errors]
    assert broken == ["forgetfulness"]
    assert broken[0] not in dialogue.scores
    assert dialogue.errors[broken[0]].startswith("1 of 2 turns could not be scored")
    assert "answered a yes/no question with 'maybe'" in dialogue.errors[broken[0]]
    assert dialogue.scores["correctness"] == 1.0


@pytest.mark.parametrize("reply", ["Not sure.", "Nothing in the reply contradicts the reference.",
                                   "Yesterday's figure, probably."])
def test_a_reply_that_only_starts_like_yes_or_no_is_unscored_not_a_verdict(
    tmp_path: Path, reply: str
) -> None:
    def judge(messages: list[dict]) -> object:
        return reply if "Reference answer" in messages[-1]["content"] else 0.9

    dialogue = ragdive.run_dialogue(
        DOC, Bot(), judges=ragdive.Judges(scripted({"YesNo": judge})), turns=2,
        metrics=["correctness", "forgetfulness"], cache_dir=tmp_path / "cache")
    assert "correctness" not in dialogue.scores
    assert f"answered a yes/no question with {reply[:60]!r}" in dialogue.errors["correctness"]
    assert "forgetfulness" in dialogue.scores  # the other judge still scores


def test_a_retry_exception_is_summarised_by_its_last_attempt() -> None:
    from pytest_ragdive.engine.evaluation.evaluator import _why

    class Attempt:
        exception = ValueError("1 validation error for Verdicts\nstatements: field required")

    class RetryError(Exception):
        failed_attempts = [Attempt()]

    assert _why(RetryError("<failed_attempts>" + "x" * 900)) == (
        "ValueError: 1 validation error for Verdicts")


def test_a_garbled_yes_no_reply_is_asked_again_and_a_lasting_one_names_turn_and_stage(
    tmp_path: Path
) -> None:
    answered: list[str] = []

    def once_garbled(messages: list[dict]) -> object:
        # the validator's first answer is garbled; asked again, it answers
        if messages[-1]["content"].startswith("Source text") and not answered:
            answered.append("maybe")
            return "maybe"
        return 0.9

    judges = ragdive.Judges(scripted({"YesNo": once_garbled}))
    dialogue = ragdive.run_dialogue(DOC, Bot(), judges=judges, turns=2, validator_checks="all",
                                    metrics=["correctness"], cache_dir=tmp_path / "a")
    assert answered and not dialogue.errors and len(dialogue.turns) == 2

    always = ragdive.Judges(scripted({"YesNo": lambda m: "maybe"
                                      if m[-1]["content"].startswith("Source text") else 0.9}))
    broken = ragdive.run_dialogue(DOC, Bot(), judges=always, turns=2, validator_checks="all",
                                  metrics=["correctness"], cache_dir=tmp_path / "b")
    assert broken.errors["dialogue"].startswith("turn 1, validating attempt 1: ")
    assert "answered a yes/no question with 'maybe' (3 attempts)" in broken.errors["dialogue"]
    assert "ragdive_validator_checks = exact" in broken.errors["dialogue"]
