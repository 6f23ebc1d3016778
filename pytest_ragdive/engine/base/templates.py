"""Loading and rendering the jinja2 prompt templates the package ships (`prompts/` in the source)."""

from __future__ import annotations

import functools
import re
from importlib.resources import files
from typing import Any

import jinja2

from .models import Turn

_FENCE_TAG = re.compile(r"<(/?)(source)>", re.IGNORECASE)
_LINE_BREAKS = re.compile(r"\s*[\r\n]+\s*")


def fenced(text: str) -> str:
    """Text from a document, shown between ``<source>`` tags: a tag of the fence inside it
    is defused, so the text cannot close the fence and go on as instructions."""
    return _FENCE_TAG.sub(r"‹\1\2›", text)


def one_line(text: str) -> str:
    """Text from a model or the bot, shown after a label (``Reply:``, ``User:``): kept on
    its line, so it cannot start a line that looks like the prompt's own."""
    return _LINE_BREAKS.sub(" ", text)


@functools.cache
def _environment(group: bool) -> jinja2.Environment:
    """The templates; for a group of documents, those of ``group/`` in place of theirs."""
    folder = str(files("pytest_ragdive.prompts"))
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader([f"{folder}/group", folder] if group else folder),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )
    environment.filters.update(fenced=fenced, line=one_line)
    return environment


def render(template: str, *, group: bool = False, **context: Any) -> str:
    """``template`` rendered; with ``group``, as about a group of documents (``sources``: each
    document's id and text), whose prompts are those of ``prompts/group/`` where it has one."""
    return _environment(group).get_template(f"{template}.j2").render(**context).strip()


def render_text(source: str, **context: Any) -> str:
    """A template given as text (a user's role's judge prompt), rendered as the shipped ones
    are."""
    return _environment(False).from_string(source).render(**context).strip()


def history_view(turns: list[Turn]) -> list[dict[str, str]]:
    """The accepted conversation as prompts show it: questions asked and answers given."""
    return [{"rag_input": t.generated.rag_input, "answer": t.answer.answer} for t in turns]
