"""Wires the CityGuide bot and the embedded judge model into pytest-ragdive."""

from __future__ import annotations

from pathlib import Path

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


# beyond/ holds conversations of other kinds, one recorded run each, run on their own
# (`pytest beyond -m ragdive --ragdive-cache-dir=.ragdive/beyond`): not the main suite's gate.
collect_ignore = ["beyond"]

# The knowledge base has nine documents, all of them retrievable by the bot. The suite talks
# about its six transport services, three pairs of look-alikes (two ferries, tram and buses,
# bikes and cars), where a follow-up like "who runs it?" needs the conversation. Each document
# is one more stratum of evidence for the verdict (benchmarks/README.md, the gate); a live run
# takes about 4 minutes per document on two idle cores. Use "kb/*.md" for every document.
TRANSPORT = {"bike-share", "car-club", "harbour-ferry", "regional-buses", "river-ferry",
             "tram-network"}
ragdive_document = ragdive.document_fixture(
    [doc for doc in ragdive.load_documents("kb", root=Path(__file__).parent)
     if doc.id in TRANSPORT])
