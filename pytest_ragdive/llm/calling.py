"""Calling a model once: what one attempt returns, or raises (a :class:`Transient` failure
is tried again by ``retrying.retried``)."""

from __future__ import annotations

import asyncio
from typing import Any

from . import provider_params, providers
from .cache import describe
from .errors import (
    RETRIED_4XX,
    ModelError,
    Transient,
    is_rejection,
    rejected,
    secrets_of,
    server_message,
    status_of,
)
from .library import import_litellm
from .model import Model
from .secrets import mask


async def attempt(request: dict[str, Any], model: Model, timeout: float) -> dict[str, Any]:
    """One attempt at ``request``: the reply as the cache keeps it, or the error. The
    caller retries a :class:`Transient` one; what the provider refuses is left out of what is
    sent (``provider_params``), not of the cache key. No local holds a credential:
    ``--showlocals`` prints the locals of this frame."""
    litellm = import_litellm()
    providers.ensure_registered(model.name)
    request = provider_params.fitted({k: v for k, v in request.items() if k != "server"}, model)
    transient = (
        litellm.RateLimitError,
        litellm.APIConnectionError,
        litellm.ServiceUnavailableError,
        litellm.InternalServerError,
        litellm.Timeout,
        asyncio.TimeoutError,
    )
    try:
        response = await asyncio.wait_for(
            litellm.acompletion(**request, **model.params, timeout=timeout),
            timeout,
        )
    except litellm.AuthenticationError as exc:
        raise ModelError(
            f"{model.name}: the provider refused the credentials ({type(exc).__name__}). "
            f"Set the provider's API key in the environment (for example "
            f"OPENAI_API_KEY or GEMINI_API_KEY), or choose another model with "
            f"--ragdive-model."
        ) from None
    except Exception as exc:
        if is_rejection(exc, litellm):
            raise rejected(exc, request, model, litellm) from None
        if isinstance(exc, asyncio.TimeoutError):  # ours, with no text; a server's 408 has
            raise Transient(f"no reply within {timeout:g} s; raise ini ragdive_call_timeout "
                            f"if the model is only slow", exc) from None
        if not isinstance(exc, transient) and status_of(exc) not in RETRIED_4XX:
            if isinstance(exc, litellm.APIError):
                raise ModelError(
                    f"{describe(request)}: {server_message(exc, secrets_of(model))}"
                ) from None
            raise
        raise Transient(server_message(exc, secrets_of(model)), exc) from None
    if not getattr(response, "choices", None):
        raise ModelError(
            f"{describe(request)}: the provider answered without a reply (no 'choices' in "
            f"{mask(str(response)[:200], secrets_of(model))}); check the model name and the "
            f"server, or retry later")
    return _reply(response, litellm)


def _reply(response: Any, litellm: Any) -> dict[str, Any]:
    """What the cache keeps of a response: text (a forced tool call's arguments), the first
    token's likeliest alternatives, token counts and cost."""
    usage = getattr(response, "usage", None)
    try:
        cost = float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # litellm does not know every model's price
        cost = 0.0
    choice = response.choices[0]
    logprobs = getattr(choice, "logprobs", None)
    first = (getattr(logprobs, "content", None) or [None])[0]
    top = [[t.token, t.logprob] for t in getattr(first, "top_logprobs", None) or []]
    content = choice.message.content
    calls = getattr(choice.message, "tool_calls", None) or []
    if not content and calls:
        content = calls[0].function.arguments
    return {
        **({"top_logprobs": top} if top else {}),
        "content": content or "",
        "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        "cost": cost,
    }
