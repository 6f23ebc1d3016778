"""A scripted server's failures, raised as litellm raises a real provider's: any HTTP error a
responder scripts with :func:`http_error`, and the refusal of a request form the script
says the server does not take."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from .library import import_litellm

PROVIDER = "fake"
#: the request forms a scripted server may refuse
FORMS = ("json_schema", "json_object", "tools", "logprobs")


def http_error(status: int, message: str, model: str = f"{PROVIDER}/model",
               headers: Mapping[str, str] | None = None) -> Exception:
    """The litellm exception a real provider raises for an HTTP ``status`` answer (with
    ``headers``, such as Retry-After); a responder raises it to script a server's failure.
    A 400 about the context length becomes ``ContextWindowExceededError``, as litellm
    maps it."""
    litellm = import_litellm()
    import httpx

    response = httpx.Response(status, headers=dict(headers or {}),
                              request=httpx.Request("POST", "http://fake/v1/chat"))
    common = {"message": message, "model": model, "llm_provider": PROVIDER}
    if status == 400 and re.search(r"context (length|window)", message, re.IGNORECASE):
        return litellm.ContextWindowExceededError(**common)
    kinds: dict[int, Any] = {
        400: litellm.BadRequestError, 401: litellm.AuthenticationError,
        404: litellm.NotFoundError, 408: litellm.Timeout, 429: litellm.RateLimitError,
        500: litellm.InternalServerError, 503: litellm.ServiceUnavailableError,
    }
    if status in (403, 422):
        kind = litellm.PermissionDeniedError if status == 403 else litellm.UnprocessableEntityError
        return kind(**common, response=response)  # type: ignore[no-any-return]
    if status == 429:
        return litellm.RateLimitError(**common, response=response)  # type: ignore[no-any-return]
    if status in kinds:
        return kinds[status](**common)  # type: ignore[no-any-return]
    return litellm.APIError(status_code=status, **common)  # type: ignore[no-any-return]


def request_form(kwargs: Mapping[str, Any]) -> list[str]:
    """The forms of ``FORMS`` a request uses."""
    params = {**(kwargs.get("optional_params") or {}), **kwargs}
    kind = (params.get("response_format") or {}).get("type")
    forms = [kind] if kind in ("json_schema", "json_object") else []
    if params.get("tools"):
        forms.append("tools")
    if params.get("logprobs"):
        forms.append("logprobs")
    return forms


def refusal(model: str, kwargs: Mapping[str, Any], refused: Collection[str],
            status: int) -> Exception | None:
    """The error a server that refuses the forms ``refused`` with HTTP ``status`` answers
    a request with; None when it takes the request."""
    form = next((f for f in request_form(kwargs) if f in refused), None)
    if form is None:
        return None
    field = {"json_schema": "response_format.type", "json_object": "response_format.type",
             "tools": "tools", "logprobs": "logprobs"}[form]
    if status == 500 and form == "logprobs":  # llama-cpp-python's server, --logits_all false
        message = "logprobs is not supported for models created with logits_all=False"
    elif status == 500:  # llama-cpp-python's server: FastAPI's validation error, as a 500
        message = (f"1 validation error:\n  {{'type': 'value_error', 'loc': ('body', "
                   f"{', '.join(repr(p) for p in field.split('.'))}), 'msg': 'Input should "
                   f"not be {form!r}'}}\n\n  File \"app.py\", line 1, in create_chat_completion")
    else:
        message = f"Invalid value for '{field}': {form!r} is not supported by this server."
    return http_error(status, message, model)
