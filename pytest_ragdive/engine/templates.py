"""Loading and rendering the jinja2 prompt templates shipped in ``pytest_ragdive.prompts``."""

from __future__ import annotations

import functools
from importlib.resources import files
from typing import Any

import jinja2

from .models import Turn
from .settings import BUILTIN_ROLES, check_role


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
    """The persona text of a built-in role, or ``role`` itself when it is free text."""
    if role in BUILTIN_ROLES:
        return render(f"roles/{role}")
    check_role(role, "role")
    return role


def history_view(turns: list[Turn]) -> list[dict[str, str]]:
    """The accepted conversation as prompts show it: questions asked and answers given."""
    return [{"rag_input": t.generated.rag_input, "answer": t.answer.answer} for t in turns]
