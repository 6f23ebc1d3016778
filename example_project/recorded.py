"""What the examples' committed recordings hold: the documents with a baseline band, and the
live checks at seeds the bands were not recorded with. CityGuide (this folder) and the
Alderbank clinic (``../example_clinic``) share the bot (``ragbot.py``) and its variants.

``tests/test_example.py`` replays every check and asserts its verdict; ``benchmarks/gate.py``
tabulates them; the other benchmarks read the suites' documents from here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
#: one band file per document the suite talks about
BANDS = HERE / "__ragdive__" / "test_cityguide"
#: every check shares one response cache: at one seed, the variants' first turns are the same
#: requests
UNSEEN = ".ragdive/unseen"
#: the bot's variants: the accepted one and the broken ones, by their environment
VARIANTS: dict[str, dict[str, str]] = {
    "accepted": {},
    # the same instructions in other words: not a regression, yet every reply changes, so
    # the conversations do not replay (the false-alarm rate of a paired check)
    "reworded": {"RAGBOT_PROMPT": "reworded"},
    "history none": {"RAGBOT_HISTORY": "none"},
    "history first": {"RAGBOT_HISTORY": "first"},
    "top_k 1": {"RAGBOT_TOP_K": "1"},
}


class Check(NamedTuple):
    """One live check in ``UNSEEN``. A check at seed N also holds N+1, N+2, ... where it drew
    confirmation runs or held a run again, so recorded seeds are 10 apart.

    A paired check is judged against bands recorded from the accepted bot's runs at seeds
    N, N+1, N+2 (replayed from ``UNSEEN`` with ``--ragdive-update``): the candidate runs at
    the baseline's seeds, as a check at the default seed does against the committed bands."""

    variant: str
    seed: int
    select: str | None  # the ``-k`` expression (None: every document)
    verdict: str  # the test's verdict: passed, inconclusive or regressed
    moved: str | None  # the metric a first run moved out of its band (None: none did)
    paired: bool = False


#: recorded on 2026-12-06 with the bot that rewrites a follow-up into a stand-alone search
#: query, follow-ups asked by their fact's kind ("Who runs it?", ``engine/kinds.py``) and
#: correctness and forgetfulness the judged metrics of the embedded default
CHECKS: list[Check] = [
    Check("accepted", 100, None, "inconclusive", "correctness"),
    Check("history none", 100, None, "regressed", "correctness"),
    Check("history none", 110, None, "regressed", "correctness"),
    Check("accepted", 110, None, "inconclusive", "correctness"),
    Check("history none", 120, None, "regressed", "correctness"),
    Check("accepted", 120, None, "inconclusive", "correctness"),
    Check("history none", 130, None, "regressed", "correctness"),
    Check("accepted", 130, None, "inconclusive", "correctness"),
    Check("history none", 140, None, "regressed", "correctness"),
    Check("accepted", 140, None, "passed", None),
    Check("history none", 150, None, "regressed", "correctness"),
    Check("accepted", 150, None, "passed", None),
    Check("top_k 1", 100, None, "regressed", "correctness"),
    Check("top_k 1", 110, None, "regressed", "correctness"),
    Check("top_k 1", 120, None, "regressed", "correctness"),
    Check("history first", 100, None, "regressed", "correctness"),
    Check("accepted", 160, None, "passed", None),
    Check("history none", 160, None, "regressed", "correctness"),
]


@dataclass(frozen=True)
class Example:
    """One example project: its folder, its test function and its committed checks."""

    name: str
    folder: Path
    test: str  # the test function, in the module ``test_<name>.py``
    checks: list[Check] = field(default_factory=list)

    @property
    def bands(self) -> Path:
        return self.folder / "__ragdive__" / f"test_{self.name}"

    def documents(self) -> list[str]:
        """The ids of the documents the suite talks about: those with a band file."""
        prefix = f"{self.test}["
        return sorted(p.name[len(prefix):-len("].json")]
                      for p in self.bands.glob(f"{self.test}[[]*].json"))

    def bot(self, client: Any) -> Any:
        """The example's bot (a RagBot) over ``client``."""
        if self.name == "clinic":
            sys.path.insert(0, str(self.folder))
            from clinicbot import clinic_bot

            return clinic_bot(client)
        from ragbot import RagBot

        return RagBot(client=client)


CITYGUIDE = Example("cityguide", HERE, "test_cityguide_bot", CHECKS)
CLINIC = Example("clinic", HERE.parent / "example_clinic", "test_clinic_bot")
EXAMPLES = {e.name: e for e in (CITYGUIDE, CLINIC)}


def documents() -> list[str]:
    """The ids of the documents CityGuide's suite talks about."""
    return CITYGUIDE.documents()


def replayed(bot: Any, client: Any, seed: int, items: list[Any] | None = None,
             example: Example = CITYGUIDE, **options: Any) -> list[Any]:
    """The suite's dialogues at ``seed`` with ``bot`` (a RagBot), held as the suite holds
    them (pytest.ini and the marker: 3 turns, role precise, validation once, 4
    regenerations, its timeouts), through ``client``: from its cache when the recording has them.
    ``items`` (default: the suite's documents) and ``options`` (``metrics``, ``role``,
    ``turns``) override."""
    import pytest_ragdive as ragdive
    from pytest_ragdive.engine.base.models import DocumentGroup
    from pytest_ragdive.engine.conversation.dialogue import run_blocking

    if items is None:
        kb = example.folder / "kb" / "*.md"
        items = [DocumentGroup.of(d) for d in ragdive.load_documents(str(kb))
                 if d.id in example.documents()]
    held = {"turns": 3, "role": "precise", "validation": "once", "max_regenerations": 4,
            "adapter_timeout": 1800, "dialogue_timeout": 7200, **options}
    return run_blocking(ragdive.arun_dialogues(
        items, bot, judges=ragdive.Judges("embedded/qwen2.5-coder-1.5b"), client=client,
        seed=seed, **held))
