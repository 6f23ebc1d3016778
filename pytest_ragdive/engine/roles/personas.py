"""The roles that are a persona only: the generator plays them from their prompt
(``prompts/roles/<name>.j2``), and they ask, check and score as the plain user does."""

from __future__ import annotations

from .role import Role

#: the personas shipped as prompts; they count in every band's digest, as they always did
PERSONAS = tuple(Role(name, own_prompts=False)
                 for name in ("precise", "context-aware", "forgetful", "skeptic"))


def free_text(description: str) -> Role:
    """A role described in a sentence, played as it is written."""
    return Role(description, description=description, own_prompts=False)
