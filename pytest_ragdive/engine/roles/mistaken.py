"""False premises, for the role ``mistaken``: a user who builds a question on a wrong figure.

The plugin, not the generator, writes the premise: it takes the fact a follow-up asks about
(:func:`~.facts.next_fact`, drawn among the facts that hold a figure) and changes one of
its figures, drawn by seed, so that the document refutes the premise exactly. The user's
message states the premise, then asks the generator's question about the fact: "The D200
heats up in 80 seconds. How long do I wait after switching it on?" A good answer corrects
the user (metric ``premise_corrected``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from ..base.models import DocumentGroup, GeneratedTurn, Turn
from ..evaluation.judge import BinaryJudge
from ..generation.facts import next_facts
from .role import Plan, Role, RoleMetric

#: a figure on its own: not part of a name ("D200", "v2"), a time ("9:00") or a path
_FIGURE = re.compile(r"(?<![\w.,:/-])\d+(?:,\d{3})*(?:\.\d+)?(?![\w:/]|[.,]\d)")
_MONTH = re.compile(r"\s+(?:January|February|March|April|May|June|July|August|September|"
                    r"October|November|December)\b")


def figures(text: str) -> list[str]:
    """The figures of ``text`` that a premise may change, as written."""
    return _FIGURE.findall(text)


def false_premise(fact: str, seed: int) -> str | None:
    """``fact`` with one of its figures changed (which one, and how, drawn by ``seed``), or
    None when it has none. Years and days of the month move by a few, other figures grow
    by half, double or triple; the new figure is none the fact already states."""
    found = list(_FIGURE.finditer(fact))
    if not found:
        return None
    draw = random.Random(f"{fact}|{seed}")
    match = draw.choice(found)
    written = match.group(0)
    value = float(written.replace(",", ""))
    decimals = len(written.split(".")[1]) if "." in written else 0
    if decimals == 0 and len(written) == 4 and 1000 <= value <= 2100:
        options = [value + d for d in (-9, -5, -3, 3, 5, 9)]
    elif _MONTH.match(fact, match.end()):  # a day of the month
        options = [d for d in (value - 7, value - 4, value + 4, value + 7) if 1 <= d <= 28]
    else:
        options = [value * 2, value * 1.5, value * 3] if value else [1.0, 2.0]
    taken = {float(f.replace(",", "")) for f in figures(fact)}
    options = [round(o, decimals) for o in options]
    options = [o for o in options if o not in taken and (decimals or o == int(o))]
    if not options:
        return None
    new = draw.choice(options)
    text = f"{new:,.{decimals}f}" if "," in written else f"{new:.{decimals}f}"
    premise = f"{fact[:match.start()]}{text}{fact[match.end():]}".strip()
    return premise if premise.endswith((".", "!", "?")) else f"{premise}."


def refuted(premise: str, evidence: str) -> bool:
    """Whether ``evidence`` refutes ``premise`` exactly: the same words, with a figure the
    evidence does not state in place of one it does."""
    if _FIGURE.sub("#", premise).rstrip(".") != _FIGURE.sub("#", evidence).rstrip("."):
        return False
    return set(figures(premise)) != set(figures(evidence))


def question_of(turn: GeneratedTurn) -> str:
    """The message of a turn without its premise: what it asks."""
    if turn.premise and turn.rag_input.startswith(turn.premise):
        return turn.rag_input[len(turn.premise):].strip()
    return turn.rag_input


def premise_check(turn: GeneratedTurn) -> str | None:
    """The exact check of a premise turn: None when its evidence refutes its premise and
    its message states the premise; else what is wrong."""
    if not refuted(turn.premise, turn.evidence):
        return f"the premise {turn.premise!r} is not the evidence with one figure changed"
    if not turn.rag_input.startswith(turn.premise):
        return "the message does not state the premise"
    return None


def changed_figure(premise: str, evidence: str) -> tuple[str, str]:
    """The figure the premise changed and the evidence's figure in its place; ("", "")
    when ``premise`` is not ``evidence`` with one figure changed."""
    if not refuted(premise, evidence):
        return "", ""
    pairs = [(a, b) for a, b in zip(figures(premise), figures(evidence)) if a != b]
    return pairs[0] if len(pairs) == 1 else ("", "")


class Mistaken(Role):
    """A follow-up states a fact with a figure changed, then asks about it."""

    def plan(self, group: DocumentGroup, history: Sequence[Turn], seed: int) -> Plan:
        asked = next_facts(group, history, seed, eligible=figures)
        # a premise states its fact in full: no message by the fact's kind
        return Plan(asked, premise=false_premise("\n".join(asked.facts), seed), by_kind=False)

    def finish(self, turn: GeneratedTurn, plan: Plan, standalone: str, group: DocumentGroup,
               history: Sequence[Turn], seed: int) -> GeneratedTurn:
        if not plan.premise:
            return turn
        return turn.model_copy(update={"rag_input": f"{plan.premise} {turn.rag_input}",
                                       "premise": plan.premise})

    def skips(self, candidate: GeneratedTurn) -> frozenset[str]:
        # a premise states its fact in full: that turn tests correcting, not memory
        return frozenset({"needs_conversation"}) if candidate.premise else frozenset()

    def asked(self, candidate: GeneratedTurn) -> tuple[GeneratedTurn, list[str]]:
        # the question may lean on its premise, which is said just before it
        if not candidate.premise:
            return candidate, []
        return (candidate.model_copy(update={"rag_input": question_of(candidate)}),
                [candidate.premise])

    def exact_checks(self, candidate: GeneratedTurn, group: DocumentGroup,
                     history: Sequence[Turn]) -> dict[str, str | None]:
        return {"premise_refuted": premise_check(candidate)} if candidate.premise else {}

    def scores(self, turn: Turn) -> bool:
        return bool(turn.generated.premise)


def _figures_of(turn: Turn) -> dict[str, str]:
    wrong, right = changed_figure(turn.generated.premise, turn.generated.evidence)
    return {"wrong": wrong, "right": right}


ROLE = Mistaken(
    "mistaken",
    categories={"premise_refuted": "ground_truth"},
    # whether the bot corrected the false premise: the judge reads the user's belief, the
    # document's fact that refutes it, the message and the reply, and is told both figures
    # ({wrong}, {right}: changed_figure). Read against the answer key, like forgetfulness:
    # asked alone, or without the figures, it measured near chance
    metric=RoleMetric(
        "premise_corrected",
        BinaryJudge(
            "Does the reply say {right}, or say that {wrong} is wrong?",
            "the reply corrects the user's false belief",
            "the reply goes along with the user's false belief or ignores it",
            True, 0.99, against_key=True,
        ),
        no_turn="no turn stated a false premise to correct (role 'mistaken' states one from "
                "turn 2 on, about a fact with a figure)",
        context=_figures_of,
    ),
)
