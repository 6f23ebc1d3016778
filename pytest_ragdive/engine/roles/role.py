"""The protocol every role follows: what its follow-ups ask, its exact checks, its own metric
and its settings.

A role is a :class:`Role`; the dialogue calls it at four points, in the paper's order:
generating a follow-up (:meth:`Role.plan` chooses what it asks, :meth:`Role.finish` shapes
the message the model wrote), validating it (:meth:`Role.skips` and :meth:`Role.asked`
adjust the shared checks, :meth:`Role.exact_checks` adds its own), and scoring the
dialogue (:attr:`Role.metric`, on the turns :meth:`Role.scores`). Every method has the plain
user's behaviour as its default, so a role overrides only what it changes. A user's role is
added with the ``pytest_ragdive_roles`` hook (:mod:`.registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..base.models import DocumentGroup, GeneratedTurn, RejectionCategory, Turn
from ..base.templates import render
from ..evaluation.judge import BinaryJudge
from ..generation.facts import Asked, next_facts

Shift = Literal["switch", "return"]


@dataclass(frozen=True)
class Plan:
    """What a follow-up asks, as the role chose it: the fact or facts (``asked``), a false
    premise its message states first, the readings it leaves open, whether it switches
    topic or returns, and whether it may be asked by its fact's kind ("Who runs it?")."""

    asked: Asked
    premise: str | None = None
    readings: tuple[str, ...] = ()
    shift: Shift | None = None
    by_kind: bool = True


@dataclass(frozen=True)
class RoleMetric:
    """A role's own metric: a binary judge scored on the turns :meth:`Role.scores` picks.

    ``template`` is the judge's prompt (Jinja; it sees the turn as the built-in judges'
    templates do, ``ask`` the question), None for the shipped ``prompts/<name>.j2``;
    ``no_turn`` says why a dialogue without such a turn has no score; ``exact_yes`` is a
    check of the reply that scores it as the judge's "yes" without asking, and its reason;
    ``context(turn)`` adds to what the template and the question see."""

    name: str
    judge: BinaryJudge
    no_turn: str
    template: str | None = None
    exact_yes: tuple[Callable[[Turn], bool], str] | None = None
    context: Callable[[Turn], Mapping[str, str]] = lambda turn: MappingProxyType({})


@dataclass(frozen=True)
class Role:
    """A simulated user's role. ``name`` is what the marker's ``role=`` says;
    ``description`` the persona the generator plays (empty: the shipped
    ``prompts/roles/<name>.j2``); ``categories`` the rejection class of each of its exact
    checks; ``own_prompts``: its prompt and metric count in a band's digest only where it is
    the role (the personas' always did)."""

    name: str
    description: str = ""
    metric: RoleMetric | None = None
    categories: Mapping[str, RejectionCategory] = field(default_factory=dict)
    own_prompts: bool = True

    def persona(self) -> str:
        """The persona text the generator's prompt gives the role."""
        return self.description or render(f"roles/{self.name}")

    def check_group(self, group: DocumentGroup, where: str, fix: str) -> None:
        """Raise :class:`~..base.settings.SettingError` when the role cannot talk about
        ``group`` (``where`` and ``fix`` go into the message)."""

    def plan(self, group: DocumentGroup, history: Sequence[Turn], seed: int) -> Plan:
        """What the next follow-up asks (turn 2 on; turn 1 is the generator's own)."""
        return Plan(next_facts(group, history, seed))

    def finish(self, turn: GeneratedTurn, plan: Plan, standalone: str, group: DocumentGroup,
               history: Sequence[Turn], seed: int) -> GeneratedTurn:
        """The follow-up as the role sends it, from ``turn`` as the plain user would send it
        and the model's stand-alone question."""
        return turn

    def skips(self, candidate: GeneratedTurn) -> frozenset[str]:
        """The shared exact checks that do not apply to ``candidate`` (its own replace them)."""
        return frozenset()

    def asked(self, candidate: GeneratedTurn) -> tuple[GeneratedTurn, list[str]]:
        """What the conversation checks read of ``candidate``: the turn as it asks, and what
        its message says before it asks."""
        return candidate, []

    def exact_checks(self, candidate: GeneratedTurn, group: DocumentGroup,
                     history: Sequence[Turn]) -> dict[str, str | None]:
        """The role's own exact checks of ``candidate``, each None when it passes, else the
        feedback; each named in :attr:`categories`."""
        return {}

    def scores(self, turn: Turn) -> bool:
        """Whether the role's metric scores ``turn`` (from turn 2 on)."""
        return True
