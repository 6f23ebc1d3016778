"""What a hosted provider takes of a request: what litellm's table of its parameters
(``get_supported_openai_params``) says it refuses is left out just before the call.

Left out: ``seed``; ``logprobs`` and ``top_logprobs`` together (yes/no verdicts are then
read from the reply's first word, ``replies.p_yes``); ``response_format``, whose request
then goes as a forced tool call or as text with the schema in the prompt
(``structured.reshape``). This package's own providers (the embedded model, the scripted
``fake``), a model with an ``api_base`` (a server: the client learns its forms from its
rejections) and a provider litellm does not know get the request as built. The cache key
is the request as built, so a recording never depends on the table of the litellm
installed.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from .library import import_litellm
from .model import Model
from .providers import IN_PROCESS
from .scripted_errors import PROVIDER as SCRIPTED
from .structured import request_mode, reshape, without_logprobs

log = logging.getLogger("pytest_ragdive")

#: the parameters of this package's requests that a provider may refuse
OPTIONAL = ("seed", "logprobs", "top_logprobs", "response_format", "tools", "tool_choice")
#: model name prefixes of the providers this package serves itself
OWN = frozenset({*IN_PROCESS, SCRIPTED})

_told: set[tuple[str, str]] = set()  # (model, parameter) left out and logged


def refused(model: Model) -> frozenset[str]:
    """The parameters of :data:`OPTIONAL` that ``model``'s provider refuses; none for the
    models whose requests go as built."""
    if model.name.split("/", 1)[0] in OWN or model.server_id:
        return frozenset()
    provider = model.params.get("custom_llm_provider")
    return _refused(model.name, provider if isinstance(provider, str) else None)


@functools.cache
def _refused(name: str, provider: str | None) -> frozenset[str]:
    litellm = import_litellm()
    try:
        bare, known, _, _ = litellm.get_llm_provider(model=name, custom_llm_provider=provider)
        accepted = litellm.get_supported_openai_params(model=bare, custom_llm_provider=known)
    except Exception:  # a provider litellm cannot place: the request goes as built
        return frozenset()
    if not accepted:
        return frozenset()
    out = {p for p in OPTIONAL if p not in accepted}
    if out & {"logprobs", "top_logprobs"}:
        # logprobs without the likeliest alternatives give no P(no): neither is worth sending
        out |= {"logprobs", "top_logprobs"}
    return frozenset(out)


def fitted(request: dict[str, Any], model: Model) -> dict[str, Any]:
    """``request`` without what ``model``'s provider refuses (the same object when it
    refuses none of it)."""
    out = refused(model)
    sent = request
    if "response_format" in out and sent.get("response_format"):
        tools = reshape(sent, "tools") if not out & {"tools", "tool_choice"} else sent
        sent = tools if request_mode(tools) == "tools" else reshape(sent, "text")
    if "logprobs" in out and (sent.get("logprobs") or sent.get("top_logprobs")):
        sent = without_logprobs(sent)
    if "seed" in out and "seed" in sent:
        sent = {k: v for k, v in sent.items() if k != "seed"}
    if sent is not request:
        _tell(model.name, [p for p in ("seed", "logprobs", "response_format")
                           if p in request and p not in sent])
    return sent


def _tell(model: str, left_out: list[str]) -> None:
    """Log, once per model and parameter, what its requests go without."""
    new = [p for p in left_out if (model, p) not in _told]
    if not new:
        return
    _told.update((model, p) for p in new)
    verdicts = ("; its yes/no verdicts are read from the reply's first word"
                if "logprobs" in new else "")
    log.info("pytest-ragdive: %s's requests go without %s, which litellm says its provider "
             "does not take%s", model, ", ".join(new), verdicts)
