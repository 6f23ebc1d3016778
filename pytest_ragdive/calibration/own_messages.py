"""Whether a generator model writes follow-up messages that lean on the conversation, as
a user's do: its own messages, not rewritten, on the shipped conversations. A model whose
messages do needs no rewriting (:func:`.follow_ups.follow_up`, the profile's
``rewrite_follow_ups``); the 1.5B embedded model mostly writes the stand-alone question
again, and is rewritten."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..engine.base.judges import Judges
from ..engine.base.models import DocumentGroup
from ..engine.base.profile import Profiles, default_profile, scope
from ..engine.generation.follow_ups import chat_message, said_before
from ..engine.generation.generator import Writer, generate_turn
from ..engine.roles.registry import role
from ..llm.client import LLMClient
from ..llm.errors import ReplyError
from ..llm.model import Model
from .cases import Case, documents, shipped


def conversations(per_document: int = 1) -> list[Case]:
    """The shipped development conversations a follow-up is written for: the first
    ``per_document`` of each document."""
    chosen: dict[str, list[Case]] = {}
    for case in shipped(["forgetfulness"]):
        if case.split == "development" and len(chosen.setdefault(case.group, [])) < per_document:
            chosen[case.group].append(case)
    return [case for group in chosen.values() for case in group]


async def own_messages_kept(client: LLMClient, model: Model,
                            cases: Sequence[Case]) -> tuple[int, int]:
    """Of the follow-ups ``model`` writes for ``cases``' conversations (seed 0, at the
    generator's temperature), how many messages lean on the conversation as written
    (:func:`.follow_ups.chat_message` keeps them), and how many it wrote."""
    sources = documents("documents")
    unaided = Profiles({model.name: default_profile().model_copy(
        update={"rewrite_follow_ups": False})})

    writer = Writer(client, model, Judges(model).generator_temperature)

    async def kept(case: Case) -> bool:
        history = case.turns()[1]
        try:
            turn = await generate_turn(writer, group=DocumentGroup.of(sources[case.group]),
                                       role=role("precise"), history=history, seed=0)
        except ReplyError:
            return False
        said, last = said_before(history), said_before(history[-1:])
        return chat_message(turn.rag_input, turn.standalone_question, said, last) == turn.rag_input

    with scope(unaided):
        results = await asyncio.gather(*(kept(case) for case in cases))
    return sum(results), len(results)
