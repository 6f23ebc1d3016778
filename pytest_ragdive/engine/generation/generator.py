"""Stage 1, the Conversation Generator: an LLM playing a user writes the next turn."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ...llm.client import LLMClient
from ...llm.model import Model
from ..base.models import DocumentGroup, GeneratedTurn, Turn
from ..base.profile import rewrites
from ..base.templates import history_view, render
from ..text.english import is_english
from .facts import Asked
from .follow_ups import anchored, depends_on_conversation, follow_up, said_before, unnamed
from .kinds import unasked_kind

if TYPE_CHECKING:
    from ..roles.role import Plan, Role


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


@dataclass(frozen=True)
class Writer:
    """The model that writes the simulated user's turns, the client it is called through and
    the temperature it writes at."""

    client: LLMClient
    model: Model
    temperature: float


async def generate_turn(
    writer: Writer,
    *,
    group: DocumentGroup,
    role: Role,
    history: list[Turn],
    feedback: str = "",
    seed: int,
    opener: str | None = None,
) -> GeneratedTurn:
    """The next turn about ``group`` (of one document, or several) given the accepted
    ``history``, as ``role`` asks it.

    ``feedback`` is the validator's reason for rejecting the previous attempt at this
    turn; the rejected attempt itself is not shown, which keeps prompts short. ``opener``, a
    real user's first message, is turn 1's message as it is (:mod:`..documents.openers`). A
    follow-up asks about the fact the role's :meth:`~..roles.role.Role.plan` chooses
    (``seed`` differs per attempt), and its message is the model's when it leans on the
    conversation, else its stand-alone question made to refer back, and about one document,
    without the phrases the conversation said that tell its document apart from its
    look-alikes (:mod:`.follow_ups`); the role then makes it its own
    (:meth:`~..roles.role.Role.finish`). About a group, every turn names the document of its
    evidence (``source``): the model for turn 1, the plugin after it.
    """
    client, model, temperature = writer.client, writer.model, writer.temperature
    if not history:
        return await _first_turn(writer, group, role, feedback, seed, opener)
    plan = role.plan(group, history, seed)
    many = len(group.documents) > 1
    fact = "\n".join(plan.asked.facts)
    # a fact of a kind its look-alikes share is asked by its kind, naming nothing (.kinds)
    kind = (unasked_kind(fact, [t.generated.rag_input for t in history])
            if not many and plan.by_kind and group.documents[0].others else None)
    prompt = render("generator", group=many, role=role.persona(),
                    history=history_view(history), subject=_subject(group, plan),
                    opener=None, message=kind, index=len(history) + 1,
                    feedback=feedback, **_about(group, plan.asked))
    nxt = await client.structured(model, [{"role": "user", "content": prompt}], NextQuestion,
                                  temperature=temperature, seed=seed)
    # the rewriting puts English pronouns: a document in another language keeps the model's
    english = all(is_english(d.text) for d in group.documents)
    turn = _follow_up(nxt, plan, group, history, kind, rewrites(model) and english)
    return role.finish(turn, plan, nxt.standalone_question, group, history, seed)


def _about(group: DocumentGroup, asked: Asked | None) -> dict[str, Any]:
    """What the generator's prompt shows: the document and the fact asked, or about a group,
    every document and each fact with its document's id."""
    if len(group.documents) == 1:
        return {"document": group.documents[0].text,
                "fact": "\n".join(asked.facts) if asked else ""}
    return {"sources": [(d.id, d.text) for d in group.documents],
            "names": " or ".join(f'"{d.id}"' for d in group.documents),
            "facts": list(zip(asked.sources, asked.facts)) if asked else []}


def _subject(group: DocumentGroup, plan: Plan) -> str | None:
    """What the fact is about, for a stand-alone question to name: one document's heading."""
    of = group.get(plan.asked.sources[0]) if len(plan.asked.sources) == 1 else None
    return of.subject if of else None


async def _first_turn(writer: Writer, group: DocumentGroup, role: Role, feedback: str,
                      seed: int, opener: str | None) -> GeneratedTurn:
    """Turn 1: the model's first question, or the answer key of a real user's ``opener``."""
    client, model, temperature = writer.client, writer.model, writer.temperature
    many = len(group.documents) > 1
    prompt = render("generator", group=many, role=role.persona(), history=history_view([]),
                    subject=None, opener=opener, message=None, index=1, feedback=feedback,
                    **_about(group, None))
    messages = [{"role": "user", "content": prompt}]
    if opener is not None:
        keys: type[OpenerKey | GroupOpenerKey] = GroupOpenerKey if many else OpenerKey
        key = await client.structured(model, messages, keys, temperature=temperature,
                                      seed=seed)
        return GeneratedTurn(rag_input=opener,
                             standalone_question=key.standalone_question or opener,
                             ground_truth=key.ground_truth, question_type="initial",
                             evidence=key.evidence,
                             source=key.source if isinstance(key, GroupOpenerKey) else "")
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


def _follow_up(nxt: NextQuestion, plan: Plan, group: DocumentGroup, history: list[Turn],
               kind: str | None, rewrite: bool) -> GeneratedTurn:
    """The follow-up as the plain user sends it: the kind's message, or the model's made to
    lean on the conversation (``rewrite``: the model's profile says its own do not), about one
    document without what tells it apart from its look-alikes."""
    many = len(group.documents) > 1
    subject = _subject(group, plan)
    # a premise is said last, just before the question, which may lean on it
    said, last = said_before(history), said_before(history[-1:])
    if plan.premise:
        said, last = [*said, plan.premise], [plan.premise]
    if kind:
        message, standalone = kind, nxt.standalone_question
        if subject and not depends_on_conversation(message, standalone, said):
            standalone = anchored(subject, standalone)
    elif rewrite:
        message, standalone = follow_up(nxt.rag_input, nxt.standalone_question, said, last,
                                        subject)
    else:
        message, standalone = nxt.rag_input, nxt.standalone_question
    if not many and not plan.premise and rewrite:  # a premise states its fact in full
        message = unnamed(message, said, group.documents[0])
    turn = GeneratedTurn(**{**nxt.model_dump(), "rag_input": message,
                            "standalone_question": standalone,
                            "evidence": "\n".join(plan.asked.facts),
                            "model_message": nxt.rag_input if message != nxt.rag_input else ""})
    if many:
        crossing = {"question_type": "cross_document"} if len(plan.asked.sources) > 1 else {}
        turn = turn.model_copy(update={"source": "+".join(plan.asked.sources), **crossing})
    return turn
