"""RAG-DIVE conversations beyond one document and one cooperative user (README.md here).

One baseline run per item: a recorded demonstration of what groups, real first messages and
the three roles of users who are wrong or unclear hold on the embedded model, not a gate (a
verdict needs several runs per item; ../README.md says how many).
"""

from pathlib import Path

import pytest_ragdive as ragdive

KB = ragdive.load_documents("../kb", root=Path(__file__).parent)


def kb(*ids: str) -> list[ragdive.Document]:
    """The knowledge base's documents of these ids."""
    return [doc for doc in KB if doc.id in ids]


@ragdive.conversation(turns=4, role="precise", documents=KB, group="groups.txt", runs=1)
def test_across_documents(ragdive_dialogue):
    assert not ragdive_dialogue.errors.get("dialogue")


@ragdive.conversation(turns=3, role="precise", runs=1, openers="openers.jsonl",
                      documents=kb("city-museum", "library-system", "regional-buses"))
def test_from_real_first_messages(ragdive_dialogue):
    assert not ragdive_dialogue.errors.get("dialogue")


@ragdive.conversation(turns=3, role="mistaken", runs=1,
                      documents=kb("river-ferry", "tram-network"))
def test_mistaken_user(ragdive_dialogue):
    assert not ragdive_dialogue.errors.get("dialogue")


@ragdive.conversation(turns=3, role="vague", runs=1,
                      documents=kb("bike-share", "recycling-rules"))
def test_vague_user(ragdive_dialogue):
    assert not ragdive_dialogue.errors.get("dialogue")


@ragdive.conversation(turns=4, role="switching", documents=KB, group="look-alikes.txt", runs=1)
def test_switching_user(ragdive_dialogue):
    assert not ragdive_dialogue.errors.get("dialogue")
