"""Labelled cases of the judgements, in one form: those that ship with the package
(``pytest_ragdive/judge_cases``, described in its README) and a user's own JSONL file.

A user's file holds one case a line (``docs/judges.md`` has the form): ``judgement``
names what it labels, ``label`` is 1 where the right score is 1 (for forgetfulness:
forgot), and the judgement's fields follow (:data:`REQUIRED`). A bad line is an error
naming the line and the field.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from ..engine.base.models import Document, GeneratedTurn, RagAnswer, Turn
from ..engine.base.profile import JUDGEMENTS

#: the fields a case of each judgement needs besides ``judgement`` and ``label``
REQUIRED: dict[str, tuple[str, ...]] = {
    "correctness": ("rag_input", "standalone_question", "ground_truth", "answer"),
    "forgetfulness": ("history", "rag_input", "standalone_question", "ground_truth", "answer"),
    "context_retention": ("history", "rag_input", "standalone_question", "ground_truth",
                          "answer"),
    "premise_corrected": ("premise", "evidence", "rag_input", "standalone_question",
                          "ground_truth", "answer"),
    "clarified": ("readings", "rag_input", "standalone_question", "ground_truth", "answer"),
    "faithfulness": ("question", "contexts", "response"),
    "context_precision": ("question", "contexts", "reference"),
    "context_recall": ("question", "contexts", "reference"),
    **{check: ("candidate", "source") for check in JUDGEMENTS if check.startswith("validator.")},
}


class Exchange(BaseModel):
    """An earlier turn of the conversation."""

    model_config = ConfigDict(extra="forbid")

    user: str
    assistant: str


class Case(BaseModel):
    """One labelled case. ``group`` (a document, a source) is held out together when a
    threshold is fitted on the others; ``split`` "held-out" keeps a case out of fitting."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    judgement: str
    label: bool
    id: str = ""
    group: str = ""
    split: Literal["development", "held-out"] = "development"
    history: list[Exchange] = []
    rag_input: str | None = None
    standalone_question: str | None = None
    ground_truth: str | None = None
    answer: str | None = None
    subject: str | None = None  # what the document is about (its heading), as the judge is told
    premise: str | None = None
    evidence: str | None = None
    readings: list[str] = []
    question: str | None = None
    response: str | None = None
    reference: str | None = None
    contexts: list[str] = []
    candidate: GeneratedTurn | None = None
    source: str | None = None  # the validator's document text

    @field_validator("judgement")
    @classmethod
    def _known(cls, judgement: str) -> str:
        if judgement not in JUDGEMENTS:
            raise ValueError(f"unknown judgement {judgement!r}; one of {', '.join(JUDGEMENTS)}")
        return judgement

    @model_validator(mode="after")
    def _complete(self) -> Case:
        for name in REQUIRED[self.judgement]:
            if not getattr(self, name):
                raise ValueError(f"{name}: required for {self.judgement}")
        return self

    def turns(self) -> tuple[Turn, list[Turn]]:
        """The judged turn and the turns before it, as a dialogue would hold them."""
        earlier = earlier_turns(self.history)
        asked = self.rag_input or self.question or ""
        generated = self.candidate or GeneratedTurn(
            rag_input=asked, standalone_question=self.standalone_question or asked,
            ground_truth=self.ground_truth or self.reference or "",
            question_type="follow_up" if earlier else "initial", evidence=self.evidence or "",
            premise=self.premise or "", readings=self.readings)
        turn = Turn(index=len(earlier) + 1, generated=generated,
                    answer=RagAnswer(answer=self.answer or self.response or "",
                                     contexts=self.contexts))
        return turn, earlier


def earlier_turns(history: Iterable[Exchange]) -> list[Turn]:
    """A case's earlier exchanges as the turns of a dialogue."""
    return [Turn(index=i, generated=GeneratedTurn(
        rag_input=h.user, standalone_question=h.user, ground_truth="",
        question_type="follow_up"), answer=RagAnswer(answer=h.assistant))
        for i, h in enumerate(history, 1)]


class CaseError(ValueError):
    """A cases file with a line that is not a case; the message names the line and field."""


def read(path: Path) -> list[Case]:
    """The cases of a user's JSONL file; :class:`CaseError` at its first bad line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CaseError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    cases = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            cases.append(Case.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise CaseError(f"{path} line {number}: not JSON ({exc.msg}, column "
                            f"{exc.colno})") from None
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"])
            detail = error["msg"].removeprefix("Value error, ")
            raise CaseError(f"{path} line {number}: {field + ': ' if field else ''}"
                            f"{detail}") from None
    if not cases:
        raise CaseError(f"{path}: no cases (one JSON object a line)")
    return cases


HERE = files("pytest_ragdive").joinpath("judge_cases")


def load(name: str) -> list[dict[str, Any]]:
    """The records of one shipped file (``judge_cases/<name>``)."""
    text = HERE.joinpath(name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def documents(*folders: str) -> dict[str, Document]:
    """The shipped documents of ``folders`` (of ``judge_cases``), by file stem."""
    found = {}
    for folder in folders:
        for entry in sorted(HERE.joinpath(folder).iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".md"):
                stem = entry.name.removesuffix(".md")
                found[stem] = Document(id=stem, text=entry.read_text(encoding="utf-8"))
    return found


@functools.cache
def subjects() -> dict[str, str | None]:
    """What each shipped document is about (its heading), as the package tells a judge."""
    found = documents("documents", "heldout/documents", "subject/documents")
    return {stem: document.subject for stem, document in found.items()}


def shipped(judgements: Iterable[str] = JUDGEMENTS) -> list[Case]:
    """The shipped cases of ``judgements``, in the form of a user's file."""
    wanted = set(judgements)
    return [case for name in _FILES for case in shipped_file(name) if case.judgement in wanted]


_FILES = ("correctness.jsonl", "correctness_sources.jsonl", "multi_turn.jsonl",
          "heldout/multi_turn.jsonl", "premise.jsonl", "clarified.jsonl",
          "ragas/faithfulness.jsonl", "ragas/context_precision.jsonl",
          "ragas/context_recall.jsonl", "validator/cases.jsonl")
#: the judgement of a shipped file of one (the multi-turn files label two, ragas' are named
#: by theirs); ``subject/`` holds cases for the benchmark's question only, not calibrated on
_JUDGEMENT = {"correctness.jsonl": "correctness", "correctness_sources.jsonl": "correctness",
              "premise.jsonl": "premise_corrected", "clarified.jsonl": "clarified",
              "subject/forgetfulness.jsonl": "forgetfulness"}
#: the fields of the shipped records that the form of a case has no use for
_DROPPED = ("document", "source", "shape", "why", "check", "label", "forgetfulness",
            "context_retention", "split")


@functools.cache
def shipped_file(name: str) -> tuple[Case, ...]:
    """A shipped file's records as cases: its judgement(s) and label, grouped by document
    (by source for correctness), the document's heading as the judge's subject."""
    sources = documents("validator/documents") if name.startswith("validator/") else {}
    cases = []
    for record in load(name):
        common = {k: v for k, v in record.items() if k not in _DROPPED}
        common |= {"group": record.get("source", "short") if name.startswith("correctness")
                   else record["document"],
                   "split": "held-out" if name.startswith("heldout/")
                   or record.get("split") == "held-out" else "development"}
        if name.startswith("ragas/"):
            cases.append({**common, "judgement": name[6:-6], "label": record["label"]})
        elif name.startswith("validator/"):
            if f"validator.{record['check']}" in JUDGEMENTS:  # the exact checks need no model
                cases.append({**common, "judgement": f"validator.{record['check']}",
                              "label": record["label"],
                              "source": sources[record["document"]].text})
        else:
            common["subject"] = subjects().get(record["document"])
            labelled = (("forgetfulness", "context_retention") if "multi_turn" in name
                        else (_JUDGEMENT[name],))
            cases += [{**common, "judgement": m, "label": record.get("label", record.get(m))}
                      for m in labelled]
    return tuple(Case.model_validate(case) for case in cases)
