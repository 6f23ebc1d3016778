"""The example bot searches as chat bots do: a follow-up is rewritten into a stand-alone
search query with the history the bot sees, and a bot that sees none searches the message."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from pytest_ragdive import Message
from pytest_ragdive.llm.scripted import calls, scripted

sys.path.insert(0, str(Path(__file__).parents[1] / "example_project"))

from ragbot import RagBot  # noqa: E402

HISTORY = [Message(role="user", content="What does the harbour ferry cost?"),
           Message(role="assistant", content="A crossing costs 3.00 marks."),
           Message(role="user", content="And the river ferry?"),
           Message(role="assistant", content="A trip to Dalby costs 9.00 marks.")]


@pytest.mark.parametrize(("mode", "shown"), [
    ("full", ["What does the harbour ferry cost?", "A crossing costs 3.00 marks.",
              "And the river ferry?", "A trip to Dalby costs 9.00 marks."]),
    ("last3", ["A crossing costs 3.00 marks.", "And the river ferry?",
               "A trip to Dalby costs 9.00 marks."]),
    ("first", ["What does the harbour ferry cost?"]),
    ("none", []),
])
def test_a_follow_up_is_rewritten_with_the_history_the_bot_sees(
    tmp_path: Path, mode: str, shown: list[str]
) -> None:
    model = scripted({"text": lambda messages: " Who runs the Ardle\nRiver Ferry? "})
    bot = RagBot(tmp_path, "new", model=model, history=mode)  # type: ignore[arg-type]
    query = asyncio.run(bot.search_query("Who runs it?", bot.visible_history(HISTORY)))
    if mode == "none":  # no history, no rewrite: the message is the query
        assert query == "Who runs it?" and calls(model) == []
        return
    assert query == "Who runs the Ardle River Ferry?"
    ((_, messages),) = calls(model)
    prompt = messages[-1]["content"]
    assert [line.split(": ", 1)[1] for line in prompt.splitlines()
            if line.startswith(("User: ", "CityGuide: "))] == shown
    assert prompt.endswith("Last message: Who runs it?")


def test_the_first_question_makes_no_model_call(tmp_path: Path) -> None:
    model = scripted({"text": lambda messages: "unused"})
    bot = RagBot(tmp_path, "new", model=model, history="full")
    assert asyncio.run(bot.search_query("Who runs the tram?", [])) == "Who runs the tram?"
    assert calls(model) == []


def test_an_unknown_history_mode_names_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBOT_HISTORY", "some")
    with pytest.raises(ValueError, match="RAGBOT_HISTORY='some': use one of full, last3, first"):
        RagBot()
