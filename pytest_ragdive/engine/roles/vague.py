"""Questions with several readings, for the role ``vague``: a user who does not say which one.

The plugin, not the generator, finds what makes a question vague: two or more facts of the
document that answer one question with different figures, because they say the same thing
about different subjects ("The grey bin ... is emptied every two weeks." and "The blue bin
... is emptied every four weeks."). Such facts share a run of three words around a figure
("emptied every # weeks") that holds the figure and a word of content, with another figure
in each. The generator asks about one of them as about any fact ("How often is the grey bin
emptied?"); the plugin puts the phrase that says which one as "it", so that the message is
the question of each ("How often is it emptied?"). Its answer key is the readings
themselves, and a good answer asks which one is meant or answers for each (``clarified``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..base.models import Document, DocumentGroup, GeneratedTurn, Turn
from ..evaluation.judge import BinaryJudge
from ..generation.facts import Asked, facts, next_fact, next_facts, quoted_from
from ..text.english import STOPWORDS, content_words, is_question, singular
from ..text.phrases import DETERMINERS, put_pronoun
from ..validation.sources import documents_of
from .mistaken import figures
from .role import Plan, Role, RoleMetric

_NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve")
_NUMBERS = {word: str(value) for value, word in enumerate(_NUMBER_WORDS, 1)}
_TOKEN = re.compile(r"[\w'-]+")
_RUN = 3


def _word(token: str) -> str:
    """A word as runs compare it: lower case, a plural's "s" dropped."""
    return singular(token.lower())


def _figure_words(text: str) -> set[str]:
    """The figures of ``text``, written in digits or as a number word."""
    return set(figures(text)) | {w for w in _words(text) if w in _NUMBER_WORDS}


def _words(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def _runs(fact: str) -> dict[tuple[str, ...], str]:
    """The runs of three tokens around a figure that hold a word of content: the run with
    its figure as "#" -> the figure, as written."""
    tokens = [t.rstrip(".,") for t in re.findall(r"[^\s()]+", fact)]
    shown = [t for t in tokens if t]
    digits = set(figures(fact))
    mask = ["#" if t in digits or t.lower() in _NUMBER_WORDS else _word(t) for t in shown]
    found: dict[tuple[str, ...], str] = {}
    for start in range(len(mask) - _RUN + 1):
        window = mask[start:start + _RUN]
        if window.count("#") != 1 or not any(w != "#" and w not in STOPWORDS for w in window):
            continue
        found.setdefault(tuple(window), shown[start + window.index("#")])
    return found


def parallel(a: str, b: str) -> bool:
    """Whether facts ``a`` and ``b`` answer one question with different figures: they share
    a run around a figure (see the module) whose figure differs."""
    runs_a, runs_b = _runs(a), _runs(b)
    return any(runs_a[k] != runs_b[k] for k in runs_a.keys() & runs_b.keys())


def answers(readings: Sequence[str]) -> list[str]:
    """What the readings answer, as written ("two", "four"): the figures of the runs the
    first reading (the fact asked about) shares with each other one; every answer once."""
    first = _runs(readings[0])
    found: list[str] = []
    for other in readings[1:]:
        theirs = _runs(other)
        for key in first:  # in the fact's order: the same answers in every process
            if key in theirs and first[key] != theirs[key]:
                found += [first[key], theirs[key]]
                break
    return list(dict.fromkeys(found))


def answer_key(readings: Sequence[str]) -> str:
    """The answer key of a vague turn: its readings as the document states them, each
    ending as a sentence."""
    return " ".join(r if r.endswith((".", "!", "?")) else f"{r}." for r in readings)


def _quoted(evidence: str, every: Sequence[str]) -> str:
    """The fact ``evidence`` quotes: the one that shares the most words of content with it
    ("" for none). Facts that say the same of different things share many words, so
    :func:`~.facts.used_facts` would count every one of them as asked."""
    wanted = set(content_words(evidence))
    best = max(every, key=lambda f: len(wanted & set(content_words(f))), default="")
    return best if wanted & set(content_words(best)) else ""


def vague_fact(document: Document, history: Sequence[Turn], seed: int) -> tuple[str, list[str]]:
    """The fact a vague follow-up asks about and its readings (the fact, then the facts
    parallel to it in the document's order), drawn by :func:`~.facts.next_fact` among the
    facts none of whose readings a turn asked about (quoted, or as a reading); (fact, [])
    when there is none, for an ordinary follow-up."""
    every = facts(document)
    asked = {r for t in history if t.generated.source in ("", document.id)
             for r in t.generated.readings}
    asked |= {_quoted(q, every) for t in history for q in quoted_from(t.generated, document)}
    asked -= {""}
    fresh = [f for f in every if f not in asked]
    groups = {f: [f, *(g for g in every if g != f and parallel(f, g))] for f in fresh}
    groups = {f: g for f, g in groups.items() if len(g) > 1 and set(g) <= set(fresh)}
    fact = next_fact(document, history, seed, eligible=lambda f: f in groups)
    return fact, groups.get(fact, [])


def vague_facts(group: DocumentGroup, history: Sequence[Turn], seed: int
                ) -> tuple[Asked, list[str]]:
    """What a vague follow-up asks about and its readings: :func:`vague_fact` of the one
    document :func:`~.facts.next_facts` chooses (never a cross_document turn: the readings
    are facts of one document), once every document was asked about among those with
    readings left where any has; for a group of one, of its document."""
    documents = group.documents
    asked = {s for t in history for s in t.generated.source.split("+")}
    if len(documents) > 1 and all(d.id in asked for d in documents):
        left = [d for d in documents if vague_fact(d, history, seed)[1]]
        group = DocumentGroup(documents=left) if left else group
    document = group.get(next_facts(group, history, seed, cross=False).sources[0])
    assert document is not None
    fact, readings = vague_fact(document, history, seed)
    return Asked((document.id,), (fact,)), readings


def telling(readings: Sequence[str]) -> list[str]:
    """The words that say which reading is meant, in the readings' order: a word of content
    or a figure that one reading has and no other."""
    said = [[*(_word(w) for w in content_words(r)), *sorted(_figure_words(r))] for r in readings]
    return list(dict.fromkeys(w for words in said for w in words
                              if sum(w in other for other in said) == 1))


def _said(text: str) -> set[str]:
    return {_word(w) for w in content_words(text)} | _figure_words(text)


def vague_message(standalone: str, readings: Sequence[str]) -> str | None:
    """``standalone`` with its phrase that says which reading it means (the one with the
    most :func:`telling` words, after "the" or "a": a thing named, not a verb) put as "it"
    or "they" ("How often is the grey bin emptied?" -> "How often is it emptied?"); None
    when no such phrase says it."""
    words = set(telling(readings))

    def rank(tokens: list[str], begin: int, end: int) -> tuple[int, ...] | None:
        found = len(_said(" ".join(tokens[begin:end])) & words)
        named = begin > 0 and tokens[begin - 1].lower() in DETERMINERS
        return (found, end - begin) if found and named else None

    return put_pronoun(standalone, rank)


def readings_check(turn: GeneratedTurn, document: Document) -> str | None:
    """The exact check of a vague turn: None when its readings are facts of the document
    and its message is a question of something ("How often is it emptied?", not "What is
    it?") that does not say which one it means; else what to fix."""
    every = facts(document)
    if len(turn.readings) < 2 or any(r not in every for r in turn.readings):
        return "the readings are not two or more facts of the source text"
    if not is_question(turn.rag_input):
        return f"rag_input {turn.rag_input!r} is not a question; write it as the user's question"
    if not content_words(turn.rag_input):
        return (f"rag_input {turn.rag_input!r} asks nothing in particular: in "
                f"standalone_question, ask one detail of the fact, naming what it is about in "
                f"one phrase")
    said = sorted(set(telling(turn.readings)) & _said(turn.rag_input))
    if said:
        return (f'rag_input says "{said[0]}", which tells which of {len(turn.readings)} '
                f"similar facts the user means: in standalone_question, name what the fact is "
                f'about in one phrase, as its subject ("When was the north tower built?")')
    return None


def answers_each(reply: str, readings: Sequence[str]) -> bool:
    """Whether ``reply`` states the figure of every answer of the readings (:func:`answers`;
    a number word and its digits alike): an exact "yes" of ``clarified``'s judge. It cannot
    tell which figure the reply gives to which reading."""
    said = {_NUMBERS.get(w, w) for w in (t.strip(".,").lower() for t in reply.split())}
    wanted = [a.lower() for a in answers(readings)]
    return bool(wanted) and all(_NUMBERS.get(w, w) in said for w in wanted)


class Vague(Role):
    """A follow-up asks what several facts answer with different figures, and does not say
    which one it means."""

    def plan(self, group: DocumentGroup, history: Sequence[Turn], seed: int) -> Plan:
        asked, readings = vague_facts(group, history, seed)
        return Plan(asked, readings=tuple(readings), by_kind=False)

    def finish(self, turn: GeneratedTurn, plan: Plan, standalone: str, group: DocumentGroup,
               history: Sequence[Turn], seed: int) -> GeneratedTurn:
        if not plan.readings:
            return turn
        # leaves open which reading it means; the readings are its answer key
        key = answer_key(plan.readings)
        return turn.model_copy(update={
            "rag_input": vague_message(standalone, plan.readings) or turn.rag_input,
            "ground_truth": key, "evidence": key, "readings": list(plan.readings)})

    def skips(self, candidate: GeneratedTurn) -> frozenset[str]:
        # its answer key is its readings, the document's own facts, and its message leaves
        # open which one it means (left_open) rather than leaning on the conversation
        if not candidate.readings:
            return frozenset()
        return frozenset({"evidence_in_source", "refers_back", "asks_its_fact",
                          "needs_conversation"})

    def exact_checks(self, candidate: GeneratedTurn, group: DocumentGroup,
                     history: Sequence[Turn]) -> dict[str, str | None]:
        if not candidate.readings:
            return {}
        # about a group, the readings are facts of the one document the turn names
        return {"left_open": readings_check(candidate, documents_of(candidate, group)[0])}

    def scores(self, turn: Turn) -> bool:
        return bool(turn.generated.readings)


ROLE = Vague(
    "vague",
    categories={"left_open": "question_not_consistent"},
    # whether the bot saw that a vague question has several readings: a reply that states
    # every reading's answer is a yes by code (exact_yes); of another, the judge reads the
    # message, the document's facts that answer it differently and the reply, and is asked
    # whether it asks which one is meant, debiased by the negation
    metric=RoleMetric(
        "clarified",
        BinaryJudge(
            "Does the reply ask the user which one they mean?",
            "the reply asks which one is meant",
            "the reply answers one reading as if there were no other, or none",
            True, 0.599,
            negation="Does the reply answer for one case only, as if there were no other?",
        ),
        no_turn="no turn asked a question with several readings (role 'vague' asks one from "
                "turn 2 on, about facts that answer one question with different figures)",
        exact_yes=(lambda turn: answers_each(turn.answer.answer, turn.generated.readings),
                   "the reply gives the answer of every reading (exact)"),
    ),
)
