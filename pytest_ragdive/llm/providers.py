"""Providers this package serves to litellm in process, known by the model name's prefix."""

from __future__ import annotations

import importlib

#: prefix -> (module whose ``register()`` installs the provider, calls it serves at once)
IN_PROCESS = {"embedded": ("pytest_ragdive.llm.embedded.provider", 1)}


def served_at_once(model: str) -> int | None:
    """How many calls an in-process provider serves at once; None for remote providers."""
    entry = IN_PROCESS.get(model.split("/", 1)[0])
    return entry[1] if entry else None


def ensure_registered(model: str) -> None:
    """Register the in-process provider of ``model`` with litellm, if it has one."""
    entry = IN_PROCESS.get(model.split("/", 1)[0])
    if entry is not None:
        importlib.import_module(entry[0]).register()
