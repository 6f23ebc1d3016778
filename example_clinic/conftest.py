"""Wires the Alderbank clinic's bot (``clinicbot.py``) and the embedded judge model into
pytest-ragdive."""

from __future__ import annotations

import pytest
from clinicbot import clinic_bot
from ragbot import RagBot

import pytest_ragdive as ragdive
from pytest_ragdive import LLMClient


@pytest.fixture(scope="session")
def ragdive_adapter(ragdive_client: LLMClient) -> RagBot:
    """The bot under test; its model calls share the plugin's cache and record mode."""
    return clinic_bot(ragdive_client)


@pytest.fixture(scope="session")
def ragdive_judges() -> ragdive.Judges:
    """The offline judge; ``--ragdive-model`` overrides it from the command line."""
    return ragdive.Judges("embedded/qwen2.5-coder-1.5b")


# eight services that state the same kinds of facts (who leads them, where, when, fees,
# waits, referral, cancelling), each in sections with lists and tables
ragdive_document = ragdive.document_fixture("kb/*.md")
