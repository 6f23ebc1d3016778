"""Stage 1, the Conversation Generator: an LLM playing a user writes the next turn."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ..llm.client import LLMClient
from ..llm.model import Model
from .facts import next_fact
from .follow_ups import chat_message, said_before
from .models import Document, GeneratedTurn, Turn
from .premises import ROLE as MISTAKEN
from .premises import false_premise, figures
from .readings import ROLE as VAGUE
from .readings import answer_key, vague_fact, vague_message
from .templates import history_view, render, role_description


class FirstQuestion(BaseModel):
    """What the generator writes for turn 1: no context yet, so nothing to rewrite."""

    question: str
    evidence: str
    ground_truth: str


class OpenerKey(BaseModel):
    """What the generator writes for turn 1 when a real user's first message is given: its
    self-contained form and the answer key, both empty when the document does not answer."""

    standalone_question: str
    evidence: str
    ground_truth: str


class NextQuestion(BaseModel):
    """What the generator writes for later turns, about the fact it is given, in the order
    a small model writes them best: the fact's answer first (a question written first
    drifts back to the questions asked before), then the self-contained question, then
    the short follow-up form."""

    ground_truth: str
    standalone_question: str
    rag_input: str
    question_type: Literal["follow_up", "clarification", "correction", "comparative"]


async def generate_turn(
    client: LLMClient,
    model: Model,
    *,
    document: Document,
    role: str,
    history: list[Turn],
    feedback: str = "",
    temperature: float,
    seed: int,
    opener: str | None = None,
) -> GeneratedTurn:
    """The next turn about ``document`` given the accepted ``history``.

    ``feedback`` is the validator's reason for rejecting the previous attempt at this
    turn; the rejected attempt itself is not shown, which keeps prompts short. ``opener``, a
    real user's first message, is turn 1's message as it is (:mod:`.openers`). A follow-up
    asks about the fact :func:`~.facts.next_fact` chooses (``seed`` differs per attempt),
    and its message is the model's when it leans on the conversation, else its stand-alone
    question made to refer back (:mod:`~pytest_ragdive.engine.follow_ups`). In the role
    ``mistaken``, a follow-up's fact holds a figure, and its message states the fact with
    that figure changed before it asks (:mod:`.premises`). In the role ``vague``, its fact
    is one of several that answer one question with different figures, and its message is
    the model's stand-alone question with what tells them apart put as "it": the question
    of each of them, and they are its answer key (:mod:`.readings`).
    """
    readings: list[str] = []
    if not history:
        fact = ""
    elif role == VAGUE:
        fact, readings = vague_fact(document, history, seed)
    else:
        fact = next_fact(document, history, seed,
                         eligible=figures if role == MISTAKEN else None)
    premise = false_premise(fact, seed) if role == MISTAKEN and history else None
    prompt = render(
        "generator",
        role=role_description(role),
        document=document.text,
        history=history_view(history),
        asked=[t.generated.standalone_question for t in history],
        fact=fact,
        opener=opener if not history else None,
        index=len(history) + 1,
        feedback=feedback,
    )
    messages = [{"role": "user", "content": prompt}]
    if not history and opener is not None:
        key = await client.structured(model, messages, OpenerKey, temperature=temperature,
                                      seed=seed)
        return GeneratedTurn(rag_input=opener,
                             standalone_question=key.standalone_question or opener,
                             ground_truth=key.ground_truth, question_type="initial",
                             evidence=key.evidence)
    if not history:
        first = await client.structured(
            model, messages, FirstQuestion, temperature=temperature, seed=seed
        )
        return GeneratedTurn(
            rag_input=first.question,
            standalone_question=first.question,
            ground_truth=first.ground_truth,
            question_type="initial",
            evidence=first.evidence,
        )
    nxt = await client.structured(model, messages, NextQuestion, temperature=temperature, seed=seed)
    # a premise is said last, just before the question, which may lean on it
    said, last = said_before(history), said_before(history[-1:])
    if premise:
        said, last = [*said, premise], [premise]
    message = chat_message(nxt.rag_input, nxt.standalone_question, said, last)
    turn = GeneratedTurn(**{**nxt.model_dump(), "rag_input": message, "evidence": fact})
    if premise:
        turn = turn.model_copy(update={"rag_input": f"{premise} {message}", "premise": premise})
    if readings:  # leaves open which reading it means; the readings are its answer key
        turn = turn.model_copy(update={
            "rag_input": vague_message(nxt.standalone_question, readings) or message,
            "ground_truth": answer_key(readings), "evidence": answer_key(readings),
            "readings": readings})
    return turn
