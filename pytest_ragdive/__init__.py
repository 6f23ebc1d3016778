"""pytest-ragdive: regression tests for RAG chatbots in multi-turn conversation.

Four layers, imports pointing one way (``tests/test_layers.py``): ``plugin`` (the pytest
side) -> ``adapters`` (connectors to the bot under test) -> ``engine`` (the RAG-DIVE method)
-> ``llm`` (model access). This module is the public API. Only the
marker helpers are imported eagerly; everything else loads on first use so that
installing the plugin costs nothing to test runs that do not use it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import llm  # its import sets the offline defaults; see llm/__init__.py
from .plugin.marker import conversation, document_fixture

__version__ = "0.1.0"

_LAZY = {
    "Document": "engine.models",
    "DocumentGroup": "engine.models",
    "Message": "engine.models",
    "RagAnswer": "engine.models",
    "GeneratedTurn": "engine.models",
    "Verdict": "engine.models",
    "Turn": "engine.models",
    "Judgement": "engine.models",
    "Dialogue": "engine.models",
    "Usage": "llm.usage",
    "SETTINGS": "engine.settings",
    "METRICS": "engine.metrics",
    "Judges": "engine.judges",
    "Model": "llm.model",
    "LLMClient": "llm.client",
    "ResponseCache": "llm.cache",
    "CacheMiss": "llm.cache",
    "RecordMode": "llm.cache",
    "load_documents": "engine.documents",
    "RagAdapter": "engine.dialogue",
    "arun_dialogue": "engine.dialogue",
    "arun_dialogues": "engine.dialogue",
    "run_dialogue": "engine.dialogue",
    "HttpAdapter": "adapters.http",
    "LangChainAdapter": "adapters.langchain",
    "LlamaIndexAdapter": "adapters.llamaindex",
}

__all__ = ["conversation", "document_fixture", "__version__", *_LAZY]  # noqa: PLE0604 (str keys)

if TYPE_CHECKING:
    from .adapters.http import HttpAdapter
    from .adapters.langchain import LangChainAdapter
    from .adapters.llamaindex import LlamaIndexAdapter
    from .engine.dialogue import RagAdapter, arun_dialogue, arun_dialogues, run_dialogue
    from .engine.documents import load_documents
    from .engine.judges import Judges
    from .engine.metrics import METRICS
    from .engine.models import (
        Dialogue,
        Document,
        DocumentGroup,
        GeneratedTurn,
        Judgement,
        Message,
        RagAnswer,
        Turn,
        Verdict,
    )
    from .engine.settings import SETTINGS
    from .llm.cache import CacheMiss, RecordMode, ResponseCache
    from .llm.client import LLMClient
    from .llm.model import Model
    from .llm.usage import Usage


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_ragdive' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
