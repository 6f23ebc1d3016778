"""A follow-up about a fact another document states alike: the generator is shown that
other fact, writes its own message, and the exact checks keep the message from telling
its document apart."""

from __future__ import annotations

from pathlib import Path

import pytest_ragdive as ragdive
from pytest_ragdive.engine.documents.loading import known_together
from pytest_ragdive.llm.scripted import calls, scripted

FERRY = ("# Harbour Ferry\n\nThe Harbour Ferry crosses the estuary to Skellness. "
         "It is operated by Verkehr under contract. The terminal has a small cafe.")
RIVER = ("# River Ferry\n\nThe River Ferry goes up the river to Dalby. "
         "It is operated by Riverline under contract. The quay has a lift.")
FIRST = {"question": "Where does the Harbour Ferry go?",
         "evidence": "The Harbour Ferry crosses the estuary to Skellness.",
         "ground_truth": "To Skellness."}


class Bot:
    def answer(self, question: str, history: list[ragdive.Message]) -> ragdive.RagAnswer:
        return ragdive.RagAnswer(answer="The Harbour Ferry goes to Skellness.", contexts=[FERRY])


def ferry() -> ragdive.Document:
    return known_together([ragdive.Document(id="ferry", text=FERRY),
                           ragdive.Document(id="river", text=RIVER)])[0]


def next_prompts(model: object) -> list[str]:
    return [m[-1]["content"] for s, m in calls(model) if s == "NextQuestion"]


def test_the_generator_is_shown_the_look_alike_fact_and_its_own_message_is_sent(
    tmp_path: Path,
) -> None:
    model = scripted({"FirstQuestion": lambda m: FIRST, "NextQuestion": lambda m: {
        "ground_truth": "Verkehr operates it.", "rag_input": "Who operates it?",
        "standalone_question": "Who operates the Harbour Ferry?",
        "question_type": "follow_up"}})
    dialogue = ragdive.run_dialogue(ferry(), Bot(), judges=ragdive.Judges(model), turns=2,
                                    metrics=["correctness"], cache_dir=tmp_path)
    assert dialogue.errors == {}
    turn = dialogue.turns[1]
    assert (turn.generated.rag_input, turn.generated.evidence) == (
        "Who operates it?", "It is operated by Verkehr under contract.")
    assert turn.rejections == []
    (prompt,) = next_prompts(model)
    assert ("states the same kind of fact: It is operated by Riverline under contract."
            in prompt)


def test_a_message_that_tells_its_document_apart_goes_back(tmp_path: Path) -> None:
    replies = iter([
        # leans on the conversation, but names what only the harbour ferry has
        {"ground_truth": "Verkehr.", "rag_input": "Who operates it from the terminal?",
         "standalone_question": "Who operates the Harbour Ferry?",
         "question_type": "follow_up"},
        {"ground_truth": "Verkehr.", "rag_input": "Who operates it?",
         "standalone_question": "Who operates the Harbour Ferry?",
         "question_type": "follow_up"},
    ])
    model = scripted({"FirstQuestion": lambda m: FIRST,
                      "NextQuestion": lambda m: next(replies)})
    dialogue = ragdive.run_dialogue(ferry(), Bot(), judges=ragdive.Judges(model), turns=2,
                                    metrics=["correctness"], cache_dir=tmp_path)
    turn = dialogue.turns[1]
    assert turn.generated.rag_input == "Who operates it?"
    (rejected,) = turn.rejections
    assert '"terminal"' in rejected.validation.feedback
    assert "only this topic has" in next_prompts(model)[1]


def test_a_document_loaded_alone_is_shown_no_look_alike(tmp_path: Path) -> None:
    model = scripted({"FirstQuestion": lambda m: FIRST})
    ragdive.run_dialogue(ragdive.Document(id="ferry", text=FERRY), Bot(),
                         judges=ragdive.Judges(model), turns=2, metrics=["correctness"],
                         cache_dir=tmp_path)
    prompts = next_prompts(model)
    assert prompts and not any("same kind of fact" in p for p in prompts)
