"""What names a model: its litellm name, the keyword arguments that reach litellm
(never the cache, a report or a log), and the structured-output form it is asked in."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .secrets import SECRET_NAME, mask
from .structured import check_mode


@dataclass(frozen=True, repr=False)
class Model:
    """A litellm model name plus keyword arguments for litellm (api_base, api_key, ...).

    The keyword arguments reach litellm but never the cache key, the cache or a report.
    ``structured_output`` fixes how structured output is asked for (``json_schema``,
    ``json_object``, ``tools`` or ``text``; see ``structured.py``); None takes the
    client's setting (ini ``ragdive_structured_output``, default ``auto``). It may also be
    given among ``params``.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    structured_output: str | None = None

    def __post_init__(self) -> None:
        if "structured_output" in self.params:
            params = dict(self.params)
            setting = params.pop("structured_output")
            object.__setattr__(self, "params", params)
            if self.structured_output is None:
                object.__setattr__(self, "structured_output", setting)
        if self.structured_output is not None:
            check_mode(self.structured_output, f"Model({self.name!r})")

    def __repr__(self) -> str:
        # tracebacks, JUnit XML and reports show reprs: credentials never appear in them
        params = {k: "***" if SECRET_NAME.search(str(k)) else mask(str(v))
                  for k, v in self.params.items()}
        extra = f", structured_output={self.structured_output!r}" if self.structured_output else ""
        return f"Model({self.name!r}, {params!r}{extra})"

    def __str__(self) -> str:
        return self.name

    @property
    def server(self) -> tuple[str, str]:
        """What identifies this model's server: its name and base URL."""
        base = self.params.get("api_base") or self.params.get("base_url") or ""
        return self.name, str(base)

    @property
    def server_id(self) -> str:
        """The base URL without credentials, query or fragment ("" for the provider's
        default endpoint): what the cache key and the bands know of the server."""
        base = self.server[1]
        if not base:
            return ""
        parts = urllib.parse.urlsplit(base)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}" if parts.scheme else base

    @property
    def label(self) -> str:
        """The name, with the server when it is not the provider's default."""
        return f"{self.name} @ {self.server_id}" if self.server_id else self.name


def as_model(model: str | Model) -> Model:
    return model if isinstance(model, Model) else Model(model)
