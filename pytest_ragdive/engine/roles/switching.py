"""A user who switches topic and comes back, for the role ``switching``: about a group of
documents, turn 1 asks about one of them (the *first* topic), and the follow-ups alternate.

A **switch** turn (turns 2, 4, ...) asks about another document of the group, and its
message is the model's stand-alone question, which names what the user turns to: it need not
lean on the conversation. A **return** turn (turns 3, 5, ...) goes back to turn 1's document:
its fact, answer key and evidence are of that document, and its message refers back to it the
way people do after a detour, written by the plugin, not the model: "Going back to the first
thing I asked about: when was it launched?". The phrase of the stand-alone question that
names the first topic becomes "it" (or "its ...", when it names something of the topic, "its
membership"). What names a topic are its document's **subject words**: its core (the words of
its headings, and those more than a third of its sentences have) and its names. Those of the
first document's core that are in no other document's core, and its names that no other
document has, say which topic it is; a return turn's message names none of them.

A good answer on a return turn answers about the first topic, not about the last one; the
judges of every role score it (correctness against the first document's answer key,
forgetfulness against the stand-alone question that names it).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence

from ..base.errors import SettingError
from ..base.models import Document, DocumentGroup, GeneratedTurn, Turn
from ..generation.facts import Asked, facts, next_fact, next_facts
from ..text.english import STOPWORDS, content_words, is_question
from ..text.phrases import DETERMINERS, put_pronoun
from .role import Plan, Role, Shift

#: how a return turn's message begins, drawn by seed
LEAD_INS = ("Going back to the first thing I asked about:", "Back to what I asked about first:",
            "Coming back to my first question's topic:")
#: a name inside a sentence (as :func:`..text.english.repeated_subject` finds them)
_NAME = re.compile(r"(?<!^)(?<![.?!] )\b[A-Z][\w'-]+")
_CALENDAR = frozenset(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december", "monday", "tuesday", "wednesday", "thursday", "friday",
     "saturday", "sunday"])

def shift_of(history: Sequence[Turn]) -> Shift:
    """What the next follow-up does: switch on turns 2, 4, ..., return on 3, 5, ..."""
    return "switch" if len(history) % 2 else "return"


def home(group: DocumentGroup, history: Sequence[Turn]) -> Document:
    """The document of the first topic: the one turn 1 asked about."""
    first = group.get(history[0].generated.source) if history else None
    return first or group.documents[0]


def _keys(text: str) -> list[str]:
    """The content words of ``text`` as topics compare them: a possessive's "'s" dropped."""
    return [w.removesuffix("'s") for w in content_words(text)]


def subject_words(document: Document) -> tuple[set[str], set[str]]:
    """The words that name what ``document`` is about: those of its core (the words of its
    headings, and those more than a third of its sentences have), and its names
    (capitalized inside a sentence; no month or day)."""
    every = facts(document) or [document.text.strip()]
    names = {w for fact in every for name in _NAME.findall(fact) for w in _keys(name)
             if w.removesuffix("s") not in _CALENDAR}
    counts = Counter(w for fact in every for w in set(_keys(fact)))
    frequent = {w for w, n in counts.items() if n > len(every) / 3}
    return frequent | set(_keys(" ".join(document.headings))), names


def distinguishing(document: Document, group: DocumentGroup) -> set[str]:
    """The words that say ``document``'s topic and no other of ``group``: of its core, those
    of no other document's core; of its names, those no other document has as either."""
    core, names = subject_words(document)
    others = [subject_words(d) for d in group.documents if d.id != document.id]
    theirs = set().union(*(c for c, _ in others))
    return (core - theirs) | (names - theirs).difference(*(n for _, n in others))


def shifted_facts(group: DocumentGroup, history: Sequence[Turn], seed: int) -> Asked:
    """The fact of the next follow-up: of another document than the first topic's on a switch
    (:func:`~.facts.next_facts` over the others, one not asked about first), of the first
    topic's document on a return, related to what was last asked of it."""
    start = home(group, history)
    if shift_of(history) == "switch":
        others = DocumentGroup(documents=[d for d in group.documents if d.id != start.id])
        return next_facts(others, history, seed, cross=False)
    last = [t for t in history if start.id in t.generated.source.split("+")][-1]
    about = (f"{last.generated.standalone_question} {last.generated.ground_truth} "
             f"{last.answer.answer}")
    return Asked((start.id,), (next_fact(start, history, seed, about=about),))


def return_message(standalone: str, group: DocumentGroup, history: Sequence[Turn],
                   seed: int) -> str:
    """A return turn's message: a lead-in that refers to the first topic, then ``standalone``
    with its phrase that names the first topic put as "it" (see the module)."""
    telling = distinguishing(home(group, history), group)

    def rank(tokens: list[str], begin: int, end: int) -> tuple[int, ...] | None:
        # a name first; not what "how many" or "how much" counts ("how many bicycles")
        found = len(set(_keys(" ".join(tokens[begin:end]))) & telling)
        if not found or (begin and tokens[begin - 1].lower() in ("many", "much")):
            return None
        named = any(t[:1].isupper() and set(_keys(t)) & telling
                    for i, t in enumerate(tokens[begin:end], begin) if i)
        return (named, found, end - begin)

    def replace(tokens: list[str], begin: int, end: int) -> str | None:
        # "an annual CityCycle membership" -> "its annual membership": the phrase names
        # something of the topic, its last word not the topic itself
        if set(_keys(tokens[end - 1])) & telling:
            return None
        kept = [t for t in tokens[begin:end]
                if t.lower() not in DETERMINERS and not set(_keys(t)) & telling]
        return " ".join(["its", *kept]) if content_words(" ".join(kept)) else None

    question = put_pronoun(standalone, rank, replace) or standalone
    first = question.split(" ", 1)[0]
    if first.lower() in STOPWORDS and first != "I":
        question = question[0].lower() + question[1:]
    lead = random.Random(f"{group.id}|{seed}|{len(history)}|return").choice(LEAD_INS)
    return f"{lead} {question}"


def shift_checks(turn: GeneratedTurn, group: DocumentGroup, history: Sequence[Turn]
                 ) -> dict[str, str | None]:
    """The exact checks of a switch or return turn, each None when it passes: its source
    (another document on a switch, the first topic's on a return), and its message (a
    question that names what it turns to on a switch; one that names nothing that says the
    first topic on a return)."""
    start = home(group, history)
    source = group.get(turn.source)
    said = set(_keys(turn.rag_input))
    question = turn.rag_input.split(":", 1)[-1]
    if turn.topic_shift == "return":
        named = sorted(said & distinguishing(start, group))
        return {
            "shift_source": None if turn.source == start.id else (
                f'a return turn asks about "{start.id}", turn 1\'s source text, and its '
                f"source is {turn.source!r}"),
            "returns_unnamed": (
                f"rag_input {turn.rag_input!r} is not a question" if not is_question(question)
                else None if not named else (
                    f'rag_input names "{named[0]}", which says what the user goes back to; '
                    f"they mean the first thing they asked about: in standalone_question, "
                    f'name what the fact is about once, in one phrase ("When was the Tern '
                    f'built?")')),
        }
    if source is None or source.id == start.id:
        return {"shift_source": (f"a switch turn asks about another source text than "
                                 f'"{start.id}", turn 1\'s, and its source is '
                                 f"{turn.source!r}")}
    telling = distinguishing(source, group)
    return {
        "shift_source": None,
        "names_topic": (
            f"rag_input {turn.rag_input!r} is not a question" if not is_question(turn.rag_input)
            else None if not telling or said & telling else (
                f"rag_input {turn.rag_input!r} does not say what the user turns to; in "
                f'standalone_question, name what the fact of "{source.id}" is about '
                f"({', '.join(sorted(telling)[:3])})")),
    }


class Switching(Role):
    """About a group: follow-ups turn to another document, then back to turn 1's."""

    def check_group(self, group: DocumentGroup, where: str, fix: str) -> None:
        if len(group.documents) < 2:
            raise SettingError(
                f"{where}: role 'switching' switches between the documents of a group and "
                f"comes back, and {group.id!r} is one document; {fix}")

    def plan(self, group: DocumentGroup, history: Sequence[Turn], seed: int) -> Plan:
        if len(group.documents) < 2:
            return super().plan(group, history, seed)
        return Plan(shifted_facts(group, history, seed), shift=shift_of(history))

    def finish(self, turn: GeneratedTurn, plan: Plan, standalone: str, group: DocumentGroup,
               history: Sequence[Turn], seed: int) -> GeneratedTurn:
        if not plan.shift:
            return turn
        # a new question that names its topic, or back to turn 1's without naming it
        message = (standalone if plan.shift == "switch"
                   else return_message(standalone, group, history, seed))
        return turn.model_copy(update={"topic_shift": plan.shift, "rag_input": message})

    def skips(self, candidate: GeneratedTurn) -> frozenset[str]:
        # a switch names its new topic, a return refers back to turn 1's (its own checks)
        if not candidate.topic_shift:
            return frozenset()
        return frozenset({"refers_back", "asks_its_fact", "needs_conversation"})

    def exact_checks(self, candidate: GeneratedTurn, group: DocumentGroup,
                     history: Sequence[Turn]) -> dict[str, str | None]:
        return shift_checks(candidate, group, history) if candidate.topic_shift else {}


ROLE = Switching("switching", categories={"shift_source": "ground_truth",
                                          "names_topic": "not_standalone",
                                          "returns_unnamed": "rag_input_not_connected"})
