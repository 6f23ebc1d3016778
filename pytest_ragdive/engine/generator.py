"""Stage 1, the Conversation Generator: an LLM playing a user writes the next turn."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from ..llm.client import LLMClient
from ..llm.model import Model
from .facts import Asked, next_facts
from .follow_ups import anchored, depends_on_conversation, follow_up, said_before, unnamed
from .kinds import unasked_kind
from .models import Document, DocumentGroup, GeneratedTurn, Turn
from .premises import ROLE as MISTAKEN
from .premises import false_premise, figures
from .profiles import rewrites
from .readings import ROLE as VAGUE
from .readings import answer_key, vague_facts, vague_message
from .switching import ROLE as SWITCHING
from .switching import return_message, shift_of, shifted_facts
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


class GroupFirstQuestion(BaseModel):
    """Turn 1 about a group of documents: also the name of the one it asks about."""

    question: str
    source: str
    evidence: str
    ground_truth: str


class GroupOpenerKey(BaseModel):
    """A real user's first message about a group: also the document that answers it."""

    standalone_question: str
    source: str
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
    document: Document | DocumentGroup,
    role: str,
    history: list[Turn],
    feedback: str = "",
    temperature: float,
    seed: int,
    opener: str | None = None,
) -> GeneratedTurn:
    """The next turn about ``document`` (or a group of documents) given the accepted
    ``history``.

    ``feedback`` is the validator's reason for rejecting the previous attempt at this
    turn; the rejected attempt itself is not shown, which keeps prompts short. ``opener``, a
    real user's first message, is turn 1's message as it is (:mod:`.openers`). A follow-up
    asks about the fact :func:`~.facts.next_facts` chooses (``seed`` differs per attempt),
    and its message is the model's when it leans on the conversation, else its stand-alone
    question made to refer back, and about one document, without the phrases the
    conversation said that tell its document apart from its look-alikes
    (:mod:`~pytest_ragdive.engine.follow_ups`). In the role
    ``mistaken``, a follow-up's fact holds a figure, and its message states the fact with
    that figure changed before it asks (:mod:`.premises`). In the role ``vague``, its fact
    is one of several that answer one question with different figures, and its message is
    the model's stand-alone question with what tells them apart put as "it": the question
    of each of them, and they are its answer key (:mod:`.readings`). In the role
    ``switching`` (about a group), follow-ups alternate between another document, asked
    about in the stand-alone question, and turn 1's, referred to without naming it
    (:mod:`.switching`). About a group, every turn names the document of its evidence
    (``source``): the model for turn 1, the plugin after it (a vague turn's readings are all
    of that one document).
    """
    group = DocumentGroup.of(document)
    many = len(group.documents) > 1
    readings: list[str] = []
    asked: Asked | None = None
    shift = shift_of(history) if history and many and role == SWITCHING else None
    if history and role == VAGUE:
        asked, readings = vague_facts(group, history, seed)
    elif shift:
        asked = shifted_facts(group, history, seed)
    elif history:
        asked = next_facts(group, history, seed, eligible=figures if role == MISTAKEN else None)
    fact = "\n".join(asked.facts) if asked else ""
    # what the fact is about, for a stand-alone question to name: one document's heading
    of = group.get(asked.sources[0]) if asked and len(asked.sources) == 1 else None
    subject = of.subject if of else None
    premise = false_premise(fact, seed) if role == MISTAKEN and history else None
    # a fact of a kind its look-alikes share is asked by its kind, naming nothing (.kinds)
    kind = (unasked_kind(fact, [t.generated.rag_input for t in history])
            if asked and not many and role not in (MISTAKEN, VAGUE)
            and group.documents[0].others else None)
    about = ({"sources": [(d.id, d.text) for d in group.documents],
              "names": " or ".join(f'"{d.id}"' for d in group.documents),
              "facts": list(zip(asked.sources, asked.facts)) if asked else []}
             if many else {"document": group.documents[0].text, "fact": fact})
    prompt = render(
        "generator",
        group=many,
        role=role_description(role),
        history=history_view(history),
        subject=subject,
        opener=opener if not history else None,
        message=kind,
        index=len(history) + 1,
        feedback=feedback,
        **about,
    )
    messages = [{"role": "user", "content": prompt}]
    if not history and opener is not None:
        keys: type[OpenerKey | GroupOpenerKey] = GroupOpenerKey if many else OpenerKey
        key = await client.structured(model, messages, keys, temperature=temperature,
                                      seed=seed)
        return GeneratedTurn(rag_input=opener,
                             standalone_question=key.standalone_question or opener,
                             ground_truth=key.ground_truth, question_type="initial",
                             evidence=key.evidence,
                             source=key.source if isinstance(key, GroupOpenerKey) else "")
    if not history:
        firsts: type[FirstQuestion | GroupFirstQuestion] = (GroupFirstQuestion if many
                                                            else FirstQuestion)
        first = await client.structured(model, messages, firsts, temperature=temperature,
                                        seed=seed)
        return GeneratedTurn(
            rag_input=first.question,
            standalone_question=first.question,
            ground_truth=first.ground_truth,
            question_type="initial",
            evidence=first.evidence,
            source=first.source if isinstance(first, GroupFirstQuestion) else "",
        )
    assert asked is not None
    nxt = await client.structured(model, messages, NextQuestion, temperature=temperature, seed=seed)
    # a premise is said last, just before the question, which may lean on it
    said, last = said_before(history), said_before(history[-1:])
    if premise:
        said, last = [*said, premise], [premise]
    if kind:
        message, standalone = kind, nxt.standalone_question
        if subject and not depends_on_conversation(message, standalone, said):
            standalone = anchored(subject, standalone)
    else:
        message, standalone = (follow_up(nxt.rag_input, nxt.standalone_question, said, last,
                                         subject) if rewrites(model)
                               else (nxt.rag_input, nxt.standalone_question))
    if not many and not premise and rewrites(model):  # a premise states its fact in full
        message = unnamed(message, said, group.documents[0])
    turn = GeneratedTurn(**{**nxt.model_dump(), "rag_input": message,
                            "standalone_question": standalone, "evidence": fact})
    if many:
        crossing = {"question_type": "cross_document"} if len(asked.sources) > 1 else {}
        turn = turn.model_copy(update={"source": "+".join(asked.sources), **crossing})
    if shift:  # a new question that names its topic, or back to turn 1's without naming it
        turn = turn.model_copy(update={"topic_shift": shift, "rag_input": (
            nxt.standalone_question if shift == "switch"
            else return_message(nxt.standalone_question, group, history, seed))})
    if premise:
        turn = turn.model_copy(update={"rag_input": f"{premise} {message}", "premise": premise})
    if readings:  # leaves open which reading it means; the readings are its answer key
        turn = turn.model_copy(update={
            "rag_input": vague_message(nxt.standalone_question, readings) or message,
            "ground_truth": answer_key(readings), "evidence": answer_key(readings),
            "readings": readings})
    return turn
