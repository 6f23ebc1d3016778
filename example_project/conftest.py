"""Wires the CityGuide bot and the embedded judge model into pytest-ragdive."""

from __future__ import annotations

import pytest
from ragbot import RagBot

import pytest_ragdive as ragdive
from pytest_ragdive import LLMClient


@pytest.fixture(scope="session")
def ragdive_adapter(ragdive_client: LLMClient) -> RagBot:
    """The bot under test. Its model calls go through the plugin's client, so they share
    the response cache and the record mode with the judges: a replay needs no model."""
    return RagBot(client=ragdive_client)


@pytest.fixture(scope="session")
def ragdive_judges() -> ragdive.Judges:
    """The offline judge; ``--ragdive-model`` overrides it from the command line."""
    return ragdive.Judges("embedded/qwen2.5-coder-1.5b")


# The knowledge base has nine documents, all of them retrievable by the bot; the suite talks
# about three of them so that a live run on two CPU cores takes about 8 minutes. Use
# "kb/*.md" to converse about every document.
ragdive_document = ragdive.document_fixture("kb/[bht]*.md")
