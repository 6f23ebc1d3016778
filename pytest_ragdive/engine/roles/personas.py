"""The roles that are a persona only: the generator plays them from their prompt
(``prompts/roles/<name>.j2``), and they ask, check and score as the plain user does."""

from __future__ import annotations

from dataclasses import dataclass

from .role import Role


@dataclass(frozen=True)
class Persona(Role):
    """A role that changes only how the generator writes; its prompt counts in every band's
    digest, as the personas' always did."""

    own_prompts: bool = False


PERSONAS = tuple(Persona(name) for name in ("precise", "context-aware", "forgetful", "skeptic"))


def free_text(description: str) -> Persona:
    """A role described in a sentence, played as it is written."""
    return Persona(description, description=description)
