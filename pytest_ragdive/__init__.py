"""pytest-ragdive: regression tests for RAG chatbots in multi-turn conversation.

Only the marker helpers are imported eagerly; everything else loads on first use so
that installing the plugin costs nothing to test runs that do not use it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .markers import conversation, document_fixture

__version__ = "0.1.0"

_LAZY = {
    "Document": "models",
    "Message": "models",
    "RagAnswer": "models",
    "GeneratedTurn": "models",
    "Verdict": "models",
    "Turn": "models",
    "Judgement": "models",
    "Dialogue": "models",
    "Usage": "models",
    "METRICS": "metrics",
    "Judges": "llm",
    "Model": "llm",
    "LLMClient": "llm",
    "ResponseCache": "cache",
    "CacheMiss": "cache",
    "load_documents": "documents",
    "RagAdapter": "dialogue",
    "arun_dialogue": "dialogue",
    "arun_dialogues": "dialogue",
    "run_dialogue": "dialogue",
    "HttpAdapter": "http_adapter",
}

__all__ = ["conversation", "document_fixture", "__version__", *_LAZY]

if TYPE_CHECKING:
    from .cache import CacheMiss, ResponseCache
    from .dialogue import RagAdapter, arun_dialogue, arun_dialogues, run_dialogue
    from .documents import load_documents
    from .http_adapter import HttpAdapter
    from .llm import Judges, LLMClient, Model
    from .metrics import METRICS
    from .models import (
        Dialogue,
        Document,
        GeneratedTurn,
        Judgement,
        Message,
        RagAnswer,
        Turn,
        Usage,
        Verdict,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_ragdive' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
