"""The data model of a RAG-DIVE dialogue. Every object round-trips through JSON."""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from ...llm.usage import Usage

__all__ = [
    "Dialogue", "Document", "DocumentGroup", "GeneratedTurn", "Judgement", "Message", "RagAnswer", "Rejection",
    "Turn", "Usage", "Validation",
]

QuestionType = Literal["initial", "follow_up", "clarification", "correction", "comparative",
                       "cross_document"]

#: The validator's rejection classes (RAG-DIVE paper, section 5.2).
RejectionCategory = Literal[
    "rag_input_not_connected",
    "not_standalone",
    "question_not_consistent",
    "ground_truth",
    "type",
    "document_mentioned",
]

_HEADING = re.compile(r"^[ \t]*#+[ \t]*(\S.*?)[ \t]*$", re.MULTILINE)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Document(_Model):
    """A source document the generator writes a conversation about."""

    id: str
    text: str
    metadata: dict[str, object] = Field(default_factory=dict)
    #: the texts of the documents loaded with it (its knowledge base, :mod:`.documents`):
    #: a follow-up prefers a fact one of them states too (:mod:`.facts`); not recorded
    others: tuple[str, ...] = Field(default=(), exclude=True, repr=False)

    @property
    def headings(self) -> list[str]:
        """The text of every markdown heading, in order."""
        return _HEADING.findall(self.text)

    @property
    def subject(self) -> str | None:
        """What the document is about, as its first markdown heading names it; None
        without one."""
        return next(iter(self.headings), None)


class DocumentGroup(_Model):
    """Documents one conversation moves between (``document_fixture(..., group=2)``,
    :mod:`.groups`); its id joins theirs with "+". A group of one is a document's
    conversation as it always was."""

    documents: list[Document] = Field(min_length=1)

    @property
    def id(self) -> str:
        return "+".join(d.id for d in self.documents)

    @staticmethod
    def of(source: Document | DocumentGroup) -> DocumentGroup:
        return source if isinstance(source, DocumentGroup) else DocumentGroup(documents=[source])

    def get(self, document_id: str) -> Document | None:
        return next((d for d in self.documents if d.id == document_id), None)


class Message(_Model):
    role: Literal["user", "assistant"]
    content: str


class RagAnswer(_Model):
    """What the RAG system under test returns for one question."""

    answer: str
    contexts: list[str] = Field(default_factory=list)


class GeneratedTurn(_Model):
    """One turn as the conversation generator wrote it."""

    rag_input: str = Field(description="The question sent to the RAG system.")
    standalone_question: str = Field(description="The same question, self-contained.")
    ground_truth: str = Field(description="The correct answer, supported only by the document.")
    question_type: QuestionType
    evidence: str = Field(default="", description="The document's sentence that answers it.")
    premise: str = Field(default="", description="A false belief about the evidence that the "
                         "message states (role mistaken); the evidence refutes it.")
    source: str = Field(default="", description="The id of the document of a group that the "
                        "evidence is quoted from; two joined by '+' in a cross_document turn, "
                        "whose evidence is then one sentence of each, a line each, in that "
                        "order. Empty in a conversation about one document.")
    readings: list[str] = Field(default_factory=list, description="The document's facts that "
                                "answer the message with different figures (role vague): it "
                                "does not say which one it means.")
    model_message: str = Field(
        default="", description="The generator model's own message where the plugin sent "
        "another (rewritten to lean on the conversation, as the model's profile asks); empty "
        "where the model's own was sent.")
    topic_shift: Literal["", "switch", "return"] = Field(
        default="", description="In role switching (a group of documents): 'switch' when the "
        "turn moves to another document than turn 1's, asking a question that names it; "
        "'return' when it goes back to turn 1's document without naming its subject.")


class Validation(_Model):
    """The validator's judgement of a generated turn."""

    valid: bool
    categories: list[RejectionCategory] = Field(default_factory=list)
    feedback: str = ""


class Rejection(_Model):
    """A generated turn the validator refused, kept for reports."""

    turn: GeneratedTurn
    #: read as ``verdict`` too, its name before 0.2
    validation: Validation = Field(validation_alias=AliasChoices("validation", "verdict"))


class Judgement(_Model):
    """One judge's score of one turn for one metric, with its reason.

    ``score`` is None when the turn could not be scored; ``reason`` then says why.
    """

    score: float | None = Field(default=None, ge=0.0, le=1.0)
    reason: str = ""
    #: not scored because the bot's answer gave the judge nothing to score (no contexts):
    #: evidence about the bot, unlike a judge that could not score what it was given
    by_bot: bool = False


class Turn(_Model):
    index: int = Field(description="1-based turn number.")
    generated: GeneratedTurn
    answer: RagAnswer
    rejections: list[Rejection] = Field(default_factory=list)
    validated: bool = Field(
        default=True, description="False when the turn was used unchecked (validation='once')."
    )
    judgements: dict[str, Judgement] = Field(default_factory=dict)


class Dialogue(_Model):
    """A finished, evaluated conversation about one document or a group of them
    (``document_id`` is then the group's id).

    ``errors`` maps what failed to why: ``"dialogue"`` when the conversation itself
    could not be completed, ``"generation"`` when the generator wrote no turn the validator
    accepts, or a metric name when that metric could not be computed.
    A metric with an error has no entry in ``scores``; ``judge_gaps`` names those whose
    unscored turns all failed on the judge's side, not the bot's. ``seed`` is the
    generator's: runs of two bots at one seed are a pair (their first questions are one).
    ``ended_early`` says why it held fewer turns than asked: its document ran out of facts
    (then it failed, its generation error saying where, or with ``hold_short`` it was scored
    on the turns held).
    """

    document_id: str
    role: str
    seed: int | None = None
    turns: list[Turn] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)
    errors: dict[str, str] = Field(default_factory=dict)
    judge_gaps: list[str] = Field(default_factory=list)
    ended_early: str = ""
    usage: Usage = Field(default_factory=Usage)

    @property
    def rejection_count(self) -> int:
        return sum(len(t.rejections) for t in self.turns)

    @property
    def rejected_for(self) -> dict[str, int]:
        """How many rejected attempts had each fault (an attempt may have several)."""
        return dict(sorted(Counter(c for t in self.turns for r in t.rejections
                                   for c in r.validation.categories).items()))
