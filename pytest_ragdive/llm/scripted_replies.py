"""The scripted fake provider's replies for the stages a script does not name, and the
helpers a responder reads a prompt with."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Responder = Callable[[list[dict[str, Any]]], Any]

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
            "ninth", "tenth", "eleventh", "twelfth")


def source_of(messages: list[dict[str, Any]]) -> str:
    """The source document inside a generator or validator prompt."""
    text = str(messages[-1].get("content", "")) if messages else ""
    match = re.search(r"<source>\n?(.*?)\n?</source>", text, re.DOTALL)
    return match.group(1) if match else ""


def first_sentence(messages: list[dict[str, Any]]) -> str:
    """The source's first sentence: evidence that the exact checks accept."""
    return re.split(r"(?<=[.!?])\s", source_of(messages).strip(), maxsplit=1)[0]


def source_names(messages: list[dict[str, Any]]) -> list[str]:
    """The names of the source texts of a prompt about a group of documents, in order."""
    return re.findall(r'^Source text "([^"]+)":$', str(messages[-1].get("content", "")), re.M)


def facts_of(messages: list[dict[str, Any]]) -> list[str]:
    """The two facts a cross-document follow-up prompt asks about."""
    return re.findall(r'^Fact of "[^"]+": (.*)$', str(messages[-1].get("content", "")), re.M)


def fact_word(messages: list[dict[str, Any]]) -> str:
    """The longest word of the fact a follow-up prompt asks about ("" without one)."""
    found = re.search(r"^Fact: (.*)$", str(messages[-1].get("content", "")), re.M)
    return max(re.findall(r"[A-Za-z]+", found.group(1)), key=len, default="") if found else ""


def turn_number(messages: list[dict[str, Any]]) -> int:
    """The number of the turn a generator prompt asks for."""
    match = re.search(r"Write turn (\d+)", str(messages[-1].get("content", "")))
    return int(match.group(1)) if match else 1


def generic(schema: str) -> Responder:
    """Plausible replies for every stage, so a script only names what it varies. Generated
    turns pass the exact checks: evidence quoted from the source, a follow-up that refers
    back ("And the third fact about it?") and asks something new each turn."""
    replies: dict[str, Any] = {
        "StatementGeneratorOutput": {"statements": ["The answer makes one claim."]},
        "NLIStatementOutput": {
            "statements": [
                {"statement": "The answer makes one claim.", "reason": "supported", "verdict": 1}
            ]
        },
        "ContextPrecisionOutput": {"reason": "useful", "verdict": 1},
        "ContextRecallOutput": {
            "classifications": [
                {"statement": "The reference.", "reason": "in context", "attributed": 1}
            ]
        },
    }
    if schema == "FirstQuestion":
        # it names what it asks about, as a first question must among look-alike documents
        return lambda messages: {
            "question": f"What is the topic of {' '.join(first_sentence(messages).split()[:5])}?",
            "evidence": first_sentence(messages), "ground_truth": "The topic."}
    if schema == "OpenerKey":  # a real user's first message: the document answers it
        def opener_key(messages: list[dict[str, Any]]) -> dict[str, Any]:
            found = re.search(r"first message of a real user: (.*)",
                              str(messages[-1].get("content", "")))
            # the message in full words: "In full: <the message the prompt quotes>"
            return {"standalone_question": f"In full: {found.group(1)}" if found else "",
                    "evidence": first_sentence(messages), "ground_truth": "The topic."}
        return opener_key
    if schema in ("GroupFirstQuestion", "GroupOpenerKey"):  # about a group: its first source
        def about_group(messages: list[dict[str, Any]]) -> dict[str, Any]:
            names = source_names(messages)
            return {**generic(schema.removeprefix("Group"))(messages),
                    "source": names[0] if names else ""}
        return about_group
    if schema == "NextQuestion":  # a cross-document one's answer key states both facts
        def next_question(messages: list[dict[str, Any]]) -> dict[str, Any]:
            nth = ORDINALS[turn_number(messages) - 1]
            both = facts_of(messages)
            word = fact_word(messages)  # the stand-alone question asks about its fact
            return {"standalone_question": f"What is the {nth} fact about the topic"
                                           f"{', ' + word if word else ''}?",
                    "rag_input": f"And the {nth} fact about it?",
                    "ground_truth": " ".join(both) if both else f"The {nth} fact.",
                    "question_type": "follow_up"}
        return next_question
    if schema == "YesNo":
        return lambda messages: 0.9
    return lambda messages: replies[schema]
