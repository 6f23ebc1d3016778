"""The embedded offline model, served to litellm as provider ``embedded``.

``weights`` builds the ``.gguf`` from the weight packages, ``grammar`` turns structured-output
requests into llama.cpp grammars, ``runtime`` runs the model (``prefixes`` reuses shared prompt
prefixes bit for bit), and ``provider`` registers it all with litellm; ``server`` serves it
over HTTP instead. Nothing here imports llama_cpp or litellm until a call is made.
"""

from .provider import register
from .runtime import call_log, load
from .weights import MODEL, PROVIDER, EmbeddedModelError, is_installed, model_path

__all__ = ["MODEL", "PROVIDER", "EmbeddedModelError", "call_log", "is_installed", "load",
           "model_path", "register"]
