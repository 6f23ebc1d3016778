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

from .models import GeneratedTurn

ROLE = "mistaken"

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
