"""The errors a model call ends in, and their wording: what the server said (credentials
masked) and what to change."""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic import ValidationError

from .cache import describe
from .model import Model
from .secrets import SECRET_NAME, mask
from .structured import MODES, request_mode


class ModelError(RuntimeError):
    """A model call failed for good; the message says why and what to do."""


class ReplyError(ModelError):
    """A model kept answering with something that does not fit the expected schema."""


class RequestRejected(ModelError):
    """The server rejected a request as invalid: retrying the same request cannot help.

    ``about`` is what the server's message names, when it is something the client can
    send differently: ``"structured"`` (the output format) or ``"logprobs"``.
    """

    def __init__(self, message: str, about: str | None = None) -> None:
        super().__init__(message)
        self.about = about


def rejected(exc: Exception, request: dict[str, Any], model: Model, litellm: Any
              ) -> RequestRejected:
    """The error for a request the server refused, with its message and the fix."""
    text = str(exc)
    about = None
    if isinstance(exc, (litellm.ContextWindowExceededError, litellm.NotFoundError)):
        pass  # no other form of the request can help
    elif request_mode(request) and _FORMAT_WORDS.search(text):
        about = "structured"
    elif request.get("logprobs") and "logprob" in text.lower():
        about = "logprobs"
    status = status_of(exc)
    return RequestRejected(
        f"{describe(request)}: the server rejected the request as invalid (HTTP {status}; "
        f"not retried): {server_message(exc, secrets_of(model))}\n"
        f"  Fix: {_fix(exc, about, request, model, litellm)}",
        about,
    )


def _fix(exc: Exception, about: str | None, request: dict[str, Any], model: Model,
         litellm: Any) -> str:
    """What to change so that the server accepts the request."""
    if isinstance(exc, litellm.ContextWindowExceededError):
        return ("the prompt does not fit the model's context window: serve the model with a "
                "larger context (llama.cpp: --n_ctx or -c), or use fewer turns "
                "(--ragdive-turns) and shorter documents.")
    if isinstance(exc, litellm.NotFoundError):
        return (f"the server serves no model {model.name.split('/', 1)[-1]!r}: name one it "
                f"lists at <api_base>/models, after the litellm provider prefix "
                f"(for example 'openai/<name>' with api_base).")
    if about == "structured":
        return (f"the server does not take structured output as {request_mode(request)}: "
                f"set another with Model(..., structured_output=...) or the ini option "
                f"ragdive_structured_output ({', '.join(MODES)}; auto tries them in turn); "
                f"see docs/served-judges.md.")
    if isinstance(exc, getattr(litellm, "UnsupportedParamsError", ())):
        return ("add drop_params=True to the Model's params so that litellm leaves out what "
                "this provider does not support.")
    return ("the server's message says what it refused: check the model name, api_base and "
            "the Model's params; for an output-format problem set structured_output "
            "(Model) or ragdive_structured_output (ini); see docs/served-judges.md.")


#: 4xx answers that a later attempt may get past: timeout, conflict, rate limit
RETRIED_4XX = frozenset({408, 409, 429})


#: what a server that answers an invalid request with a 5xx says (llama-cpp-python's server
#: answers 500 to a request that fails its schema)
_INVALID_REQUEST = re.compile(r"\b\d+ validation errors?\b|\b(?:is|are) not supported\b",
                              re.IGNORECASE)


_FORMAT_WORDS = re.compile(
    r"response_format|json_schema|json_object|response.schema|\btools?\b|tool_choice|"
    r"structured|grammar", re.IGNORECASE)


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_rejection(exc: Exception, litellm: Any) -> bool:
    """Whether ``exc`` says the request itself is invalid, so that repeating it cannot help."""
    if isinstance(exc, (litellm.BadRequestError, litellm.NotFoundError,
                        litellm.UnprocessableEntityError)):
        return True
    status = status_of(exc)
    if status is not None and 400 <= status < 500:
        return status not in RETRIED_4XX
    if isinstance(exc, litellm.InternalServerError) or type(exc) is litellm.APIError:
        return bool(_INVALID_REQUEST.search(str(exc)))
    return False


def secrets_of(model: Model) -> list[str]:
    """Values that must not appear in a message: the Model's credential params and the
    environment's ``*_KEY`` / ``*_TOKEN`` / ``*_SECRET`` variables, longest first."""
    values = [str(v) for k, v in model.params.items()
              if SECRET_NAME.search(str(k)) and isinstance(v, str) and len(v) >= 4]
    values += [v for k, v in os.environ.items()
               if re.search(r"(KEY|TOKEN|SECRET|PASSWORD)$", k) and len(v) >= 8]
    return sorted(set(values), key=len, reverse=True)


_LITELLM_PREFIX = re.compile(
    r"^(?:litellm\.\w+:\s*)+(?:\w+(?:Error|Exception):\s*)?(?:\w+Exception\s*-\s*)?")


def server_message(exc: BaseException, secrets: list[str] | tuple[str, ...] = (),
                    lines: int = 4) -> str:
    """The exception's kind and the first lines of the server's message (a traceback it
    appended is left out), with secrets masked."""
    text = _LITELLM_PREFIX.sub("", str(exc).strip())
    kept: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("File \"", "Traceback")):
            break
        if line:
            kept.append(line[:300])
        if len(kept) == lines:
            break
    return mask(f"{type(exc).__name__}: " + "\n    ".join(kept), secrets)


#: answers that say the provider is busy: rate limited, unavailable, overloaded
BUSY = frozenset({429, 503, 529})


class Transient(Exception):
    """A failed attempt worth another: rate limit, connection, timeout, 5xx. ``busy``: the
    provider said it is busy (:data:`BUSY`), so fewer calls should be in flight."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause
        self.busy = status_of(cause) in BUSY


def short_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "reply"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
