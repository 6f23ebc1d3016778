"""Stage 2, the Conversation Validator: exact checks, then a judge, accept or reject a turn.

Checks that can be decided exactly (does the follow-up lean on the conversation and
leave out what tells its document apart from the others, does it ask about its fact, does
it ask again, is its evidence in the document, does it name "the document"; does a premise
turn state a premise the document refutes, does a vague turn leave its readings open, does
a return turn leave its topic unnamed) are decided by code in
:mod:`.checks`, :mod:`.follow_ups`, :mod:`.mistaken`, :mod:`.vague`, :mod:`.switching`
and :mod:`.sources`. The rest are yes/no questions to the validator model, each read from
the probability of "yes" against the threshold of the model's judge profile, and asked
only where that profile found them informative (:mod:`.profile`); they share one prompt up
to the question, so a model that keeps prompt prefixes evaluates the document and the
conversation once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ...llm.client import LLMClient
from ...llm.model import Model
from ..base import profile as profiles
from ..base.models import (
    DocumentGroup,
    GeneratedTurn,
    RejectionCategory,
    Turn,
    Validation,
)
from ..base.templates import history_view, render
from ..generation import follow_ups, kinds
from ..text.english import is_english
from . import checks, conversation, sources

if TYPE_CHECKING:
    from ..roles.role import Role

#: check -> the paper's rejection class when it fails (a role's own: its ``categories``)
CATEGORIES: dict[str, RejectionCategory] = {
    "refers_back": "rag_input_not_connected",
    "needs_conversation": "rag_input_not_connected",
    "names_its_topic": "not_standalone",
    "not_repeated": "question_not_consistent",
    "evidence_in_source": "ground_truth",
    "asks_its_fact": "ground_truth",
    "uses_both": "ground_truth",
    "reads_naturally": "document_mentioned",
    "standalone": "not_standalone",
    "same_meaning": "question_not_consistent",
    "answer_supported": "ground_truth",
    "type_fits": "type",
}

#: the validator model's checks: the question, and what to tell the generator when it fails
QUESTIONS: dict[str, tuple[str, str]] = {
    "standalone": (
        "Can the stand-alone question be understood by someone who has not seen the "
        "conversation, with no \"it\", \"they\" or \"that\" left unexplained?",
        "standalone_question must name what it asks about, not refer to the conversation",
    ),
    "same_meaning": (
        "In this conversation, does the message ask for the same thing as the stand-alone "
        "question?",
        "standalone_question must ask exactly what rag_input asks in this conversation",
    ),
    "answer_supported": (
        "Does the source text state the answer key, as an answer to the stand-alone question?",
        "ground_truth must answer the question with facts the source text states",
    ),
    "type_fits": (
        "Does the type fit the message? follow_up goes on from the last answer, clarification "
        "asks to explain part of an answer, correction says the last answer was wrong, "
        "comparative contrasts two things.",
        "question_type does not fit the message",
    ),
}
#: the checks that apply to turn 1 (it has no conversation to lean on)
FIRST_TURN = ("evidence_in_source", "reads_naturally", "answer_supported")
#: the exact checks that read English words: not applied to a document in another language
ENGLISH_ONLY = frozenset(["names_its_topic", "refers_back", "asks_its_fact", "needs_conversation"])


def english(group: DocumentGroup) -> bool:
    """Whether every document of ``group`` reads as English (:func:`~..text.english.is_english`)."""
    return all(is_english(d.text) for d in group.documents)


def model_checks(model: Model, setting: str) -> dict[str, float]:
    """The validator model's checks to ask (setting ``validator_checks``), each with the
    P(yes) it needs to pass, from the model's judge profile: ``all``, none (``exact``), or
    (``auto``) those its profile found informative."""
    profile = profiles.of(model)
    return {check: profile.threshold(f"validator.{check}") for check in QUESTIONS
            if setting == "all" or (setting == "auto"
                                    and profile.judgement(f"validator.{check}").informative)}


def exact_verdict(candidate: GeneratedTurn, group: DocumentGroup,
                  history: list[Turn], *, role: Role, opener: bool = False) -> Validation:
    """The exact checks' verdict on ``candidate``, then ``role``'s own; about a group of
    documents, its evidence is checked against the document it names (:mod:`.sources`). A
    real user's first message (``opener``) is taken as it was written, naming what it
    names."""
    skipped = role.skips(candidate) | (frozenset() if english(group) else ENGLISH_ONLY)
    found: dict[str, str | None] = {}
    if "evidence_in_source" not in skipped:
        found["evidence_in_source"] = sources.evidence_check(candidate, group)
    found["reads_naturally"] = checks.mentions_source(candidate)
    if (not history and len(group.documents) == 1 and not opener
            and "names_its_topic" not in skipped):
        found["names_its_topic"] = conversation.names_its_topic(candidate.standalone_question,
                                                              group.documents[0])
    if candidate.question_type == "cross_document":
        found["uses_both"] = sources.uses_both(candidate)
    if history:
        found.update(_conversation_checks(candidate, group, history, role, skipped))
    return _verdict({check: reason for check, reason in found.items() if reason}, role)


def _conversation_checks(candidate: GeneratedTurn, group: DocumentGroup, history: list[Turn],
                         role: Role, skipped: frozenset[str]) -> dict[str, str | None]:
    """The checks of a follow-up: it leans on the conversation, asks its fact, needs the
    conversation and asks nothing again; then the role's own."""
    found: dict[str, str | None] = {}
    earlier = [t.generated for t in history]
    asked, stated = role.asked(candidate)
    if "refers_back" not in skipped:
        found["refers_back"] = conversation.leans_back(asked, history, stated)
    if ("asks_its_fact" not in skipped and candidate.question_type != "cross_document"
            and not kinds.asked_by_kind(candidate)):
        found["asks_its_fact"] = checks.asks_its_fact(
            candidate, earlier, follow_ups.said_before(history))
    if "needs_conversation" not in skipped and len(group.documents) == 1:
        found["needs_conversation"] = conversation.told_apart(candidate.rag_input,
                                                            group.documents[0])
    found["not_repeated"] = checks.repeated_question(candidate, earlier)
    found.update(role.exact_checks(candidate, group, history))
    return found


def _verdict(failed: dict[str, str], role: Role | None = None) -> Validation:
    if not failed:
        return Validation(valid=True)
    own = role.categories if role else {}
    return Validation(valid=False, categories=sorted({own.get(c) or CATEGORIES[c] for c in failed}),
                   feedback="; ".join(failed.values()))


def check_prompt(
    check: str, candidate: GeneratedTurn, group: DocumentGroup, history: list[Turn],
) -> str:
    """The prompt of one check: the documents the turn's evidence is from (one shown as
    about a single document), the conversation, the turn and the question."""
    shown = sources.documents_of(candidate, group)
    about = ({"group": True, "sources": [(d.id, d.text) for d in shown]} if len(shown) > 1
             else {"document": shown[0].text})
    return render("validator", history=history_view(history), candidate=candidate,
                  question=QUESTIONS[check][0], **about)


async def judge_turn(
    client: LLMClient,
    model: Model,
    *,
    group: DocumentGroup,
    history: list[Turn],
    candidate: GeneratedTurn,
    checks: Mapping[str, float],
) -> Validation:
    """The validator model's verdict on ``candidate``: one yes/no question per check of
    ``checks`` (:func:`model_checks`), failed below its P(yes); not whether the type of a
    cross_document turn or a switch or return fits: the plugin gave its facts and wrote or
    chose its message."""
    given = candidate.question_type == "cross_document" or bool(candidate.topic_shift)
    asked = [c for c in QUESTIONS if c in checks and (history or c in FIRST_TURN)
             and not (c == "type_fits" and given)]
    answers = await asyncio.gather(*(
        client.yes_probability(
            model, [{"role": "user", "content": check_prompt(c, candidate, group, history)}]
        )
        for c in asked
    ))
    return _verdict({
        check: f"{QUESTIONS[check][1]} (P(yes) {p_yes:.2f})"
        for check, p_yes in zip(asked, answers, strict=True)
        if p_yes < checks[check]
    })

