"""The Alderbank clinic's bot: the CityGuide example's bot (``ragbot.py``) over this folder's
knowledge base, with instructions of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragbot import RagBot

HERE = Path(__file__).resolve().parent
PROMPTS = {
    "accepted": (
        "You are the patient information desk of the Alderbank Community Health Centre. "
        "Answer the patient's question using only the facts in the context paragraphs. If "
        "the context does not contain the answer, say that you do not have that information. "
        "Use the earlier conversation only to understand what the question refers to. Answer "
        "in one to three short sentences and give exact names, times, prices and rooms."
    ),
    # the same instructions in other words: a neutral change that still changes every reply
    "reworded": (
        "You answer patients' questions for the Alderbank Community Health Centre. Reply with "
        "the facts in the context paragraphs only. When the answer is not in the context, say "
        "that you do not have that information. Read the earlier conversation only to work "
        "out what the question is about. Keep the reply to one to three short sentences, "
        "with exact names, times, prices and rooms."
    ),
}


def clinic_bot(client: Any) -> RagBot:
    """The bot under test; its model calls go through ``client`` (the plugin's), sharing the
    response cache and the record mode with the judges."""
    return RagBot(client=client, kb_dir=HERE / "kb", name="Alderbank", prompts=PROMPTS)
