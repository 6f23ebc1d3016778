"""Follow-ups asked by their fact's kind: "Who runs it?", "When did it start?".

Services, products and places of one knowledge base state facts of the same kinds: an owner,
an operator, a start date, hours, fares, a fleet, a length. A user who talks about one of
them asks about such a fact without naming it ("Who runs it?"), and only a bot that kept
the conversation knows which one is meant: the message alone does not tell the look-alikes
apart, by its words or by a retriever's embedding. The plugin writes such a message from
the kind of the fact it chose, and the generator model writes its stand-alone form and its
answer key, so a follow-up needs the conversation whatever model plays the user.

The kinds are English patterns over the fact's sentence (English only, like the exact
checks); a fact of no kind, or a document of other facts, is asked as before
(:mod:`.follow_ups`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..base.models import GeneratedTurn

_YEAR = r"\b(?:1[89]|20)\d\d\b"
#: (pattern over the fact, the message that asks for it), the first that matches decides
KINDS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), message) for pattern, message in (
        (r"\bowned by\b", "Who owns it?"),
        (r"\boperated by\b", "Who operates it?"),
        (r"\brun by\b", "Who runs it?"),
        (r"\bmanaged by\b", "Who manages it?"),
        (r"\bcarried\b[^.;]*\bpassengers\b", "How many passengers did it carry?"),
        (rf"\b(?:since|started|opened|founded|launched|began)\b[^.;]*{_YEAR}",
         "When did it start?"),
        (r"\b\d{1,2}:\d\d to \d{1,2}:\d\d\b", "What are its hours?"),
        (r"\bevery \d+ minutes\b", "How often does it run?"),
        (r"\b[\d.]+ kilometres long\b", "How long is it?"),
        (r"\bsingle (?:ticket|crossing|trip|ride|fare)\b[^.;]*\bcosts?\b",
         "How much is a single fare?"),
        (r"\bfleet (?:has|of)\b|\b(?:boats|trams|buses|cars|vehicles|vessels|trains) are in "
         r"service\b", "How big is its fleet?"),
    ))


def kind_message(fact: str) -> str | None:
    """The message that asks for ``fact`` by its kind, naming nothing; None when the fact
    is of no kind :data:`KINDS` knows."""
    return next((message for pattern, message in KINDS if pattern.search(fact)), None)


def asked_by_kind(turn: GeneratedTurn) -> bool:
    """Whether ``turn``'s message is the one its evidence's kind asks: the plugin chose
    the fact and wrote the message, so the turn asks about its fact by construction."""
    return kind_message(turn.evidence) == turn.rag_input


def unasked_kind(fact: str, asked: Sequence[str]) -> str | None:
    """:func:`kind_message` of ``fact`` unless it is one of ``asked`` (the conversation's
    messages so far): a kind is asked once."""
    message = kind_message(fact)
    return message if message not in asked else None
