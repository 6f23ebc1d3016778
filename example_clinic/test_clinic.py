"""RAG-DIVE regression test of the Alderbank clinic's bot: one conversation per kb document."""

import pytest_ragdive as ragdive


@ragdive.conversation(turns=3, role="precise")
def test_clinic_bot(ragdive_dialogue):
    assert not ragdive_dialogue.errors.get("dialogue")
