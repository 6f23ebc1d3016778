"""The client in litellm's shape, for libraries such as ragas (through instructor) that call
``litellm.acompletion`` and expect its response object. A request whose schema travels as
data also gets it written once into its prompt (:func:`~.structured.readable`); a response's
id names its cache entry, so that instructor's attempts that all failed to parse are marked
unusable in the cache (:func:`mark_failed_attempts`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .cache import KEY_FIELDS, request_key
from .library import import_litellm
from .model import Model
from .replies import unfenced
from .structured import readable, request_mode

if TYPE_CHECKING:
    from .client import LLMClient


Prepare = Callable[[dict[str, Any]], dict[str, Any]]
#: what starts the id of a response the stand-in made; the cache key follows
_ID = "ragdive-"


def stand_in(client: LLMClient, model: Model, prepare: Prepare | None = None
             ) -> Callable[..., Awaitable[Any]]:
    """A cached stand-in for ``litellm.acompletion`` for ``model``: its params and
    structured-output setting apply to every call, ``prepare`` (if given) to every request,
    and a structured request's schema is also written into its prompt. Arguments that do not
    change the answer (api_base, api_key, ...) reach litellm only."""

    async def acompletion(**kwargs: Any) -> Any:
        kwargs.pop("stream", None)
        request = {k: kwargs.pop(k) for k in list(kwargs) if k in KEY_FIELDS}
        request = readable(prepare(request) if prepare else request)
        params = {**model.params, **kwargs}
        return await _acompletion(
            client, Model(request["model"], params, model.structured_output), request
        )

    return acompletion


async def _acompletion(client: LLMClient, model: Model, request: dict[str, Any]) -> Any:
    litellm = import_litellm()
    reply, sent = await client.send(request, model)
    content = str(reply["content"])
    if request_mode(request) and request_mode(sent) is None:  # sent as text
        content = unfenced(content)
    return litellm.ModelResponse(
        id=f"{_ID}{request_key(sent)}",
        model=request["model"],
        choices=[{"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": content}}],
        usage={
            "prompt_tokens": reply["prompt_tokens"],
            "completion_tokens": reply["completion_tokens"],
            "total_tokens": reply["prompt_tokens"] + reply["completion_tokens"],
        },
    )


def mark_failed_attempts(client: LLMClient, exc: BaseException) -> None:
    """When ``exc`` (or what it wraps) is instructor's exception for a request whose every
    attempt failed to parse, mark those attempts' replies unusable in the cache."""
    for _ in range(10):
        attempts = getattr(exc, "failed_attempts", None)
        if attempts:
            if getattr(exc, "n_attempts", len(attempts)) == len(attempts):  # none was cut short
                ids = [str(getattr(getattr(a, "completion", None), "id", "")) for a in attempts]
                last = str(getattr(attempts[-1], "exception", exc)).strip().splitlines() or [""]
                client.cache.unusable([i.removeprefix(_ID) for i in ids if i.startswith(_ID)],
                                      f"no reply of {len(attempts)} attempts fitted its "
                                      f"schema ({last[0][:200]})")
            return
        cause = exc.__cause__ or exc.__context__
        if cause is None:
            return
        exc = cause
