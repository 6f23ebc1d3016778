"""Loading and rendering the jinja2 prompt templates shipped in ``pytest_ragdive.prompts``."""

from __future__ import annotations

import functools
from importlib.resources import files
from typing import Any

import jinja2

BUILTIN_ROLES = ("precise", "context-aware", "forgetful", "skeptic")


@functools.cache
def _environment() -> jinja2.Environment:
    folder = str(files("pytest_ragdive.prompts"))
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(template: str, **context: Any) -> str:
    return _environment().get_template(f"{template}.j2").render(**context).strip()


def role_description(role: str) -> str:
    """The persona text of a built-in role, or ``role`` itself when it is free text.

    A single word that is not a built-in role is almost always a typo, so it is an
    error rather than a one-word persona.
    """
    if role in BUILTIN_ROLES:
        return render(f"roles/{role}")
    if len(role.split()) < 3:
        raise ValueError(
            f"unknown role {role!r}: use one of {', '.join(BUILTIN_ROLES)}, "
            f"or describe the persona in a sentence"
        )
    return role
