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
    "Document": "engine.base.models",
    "DocumentGroup": "engine.base.models",
    "Message": "engine.base.models",
    "RagAnswer": "engine.base.models",
    "GeneratedTurn": "engine.base.models",
    "Validation": "engine.base.models",
    "Turn": "engine.base.models",
    "Judgement": "engine.base.models",
    "Dialogue": "engine.base.models",
    "Role": "engine.roles.role",
    "RoleMetric": "engine.roles.role",
    "Plan": "engine.roles.role",
    "BinaryJudge": "engine.evaluation.judge",
    "Usage": "llm.usage",
    "SETTINGS": "engine.base.settings",
    "METRICS": "engine.base.metrics",
    "Judges": "engine.base.judges",
    "Model": "llm.model",
    "LLMClient": "llm.client",
    "ResponseCache": "llm.cache",
    "CacheMiss": "llm.cache",
    "RecordMode": "llm.cache",
    "load_documents": "engine.documents.loading",
    "RagAdapter": "engine.conversation.dialogue",
    "arun_dialogue": "engine.conversation.dialogue",
    "arun_dialogues": "engine.conversation.dialogue",
    "run_dialogue": "engine.conversation.dialogue",
    "HttpAdapter": "adapters.http",
    "LangChainAdapter": "adapters.langchain",
    "LlamaIndexAdapter": "adapters.llamaindex",
}

__all__ = ["conversation", "document_fixture", "__version__", *_LAZY]  # noqa: PLE0604 (str keys)

if TYPE_CHECKING:
    from .adapters.http import HttpAdapter
    from .adapters.langchain import LangChainAdapter
    from .adapters.llamaindex import LlamaIndexAdapter
    from .engine.base.judges import Judges
    from .engine.base.metrics import METRICS
    from .engine.base.models import (
        Dialogue,
        Document,
        DocumentGroup,
        GeneratedTurn,
        Judgement,
        Message,
        RagAnswer,
        Turn,
        Validation,
    )
    from .engine.base.settings import SETTINGS
    from .engine.conversation.dialogue import (
        RagAdapter,
        arun_dialogue,
        arun_dialogues,
        run_dialogue,
    )
    from .engine.documents.loading import load_documents
    from .engine.evaluation.judge import BinaryJudge
    from .engine.roles.role import Plan, Role, RoleMetric
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
