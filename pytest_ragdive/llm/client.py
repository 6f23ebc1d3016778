"""The one model client. Every model call of pytest-ragdive goes through ``LLMClient``.

It adds to ``litellm.acompletion``: the response cache, structured output validated
against a pydantic schema, a bounded number of calls in flight, a per-call timeout,
retries of transient provider errors, and a usage ledger per dialogue.
litellm is imported on the first call that is not a cache hit.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import os
import random
import re
import sys
import warnings
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from . import providers
from .cache import KEY_FIELDS, ResponseCache, describe
from .usage import record

T = TypeVar("T", bound=BaseModel)


class ModelError(RuntimeError):
    """A model call failed for good; the message says why and what to do."""


class ReplyError(ModelError):
    """A model kept answering with something that does not fit the expected schema."""


@dataclass(frozen=True)
class Model:
    """A litellm model name plus keyword arguments for litellm (api_base, api_key, ...).

    The keyword arguments reach litellm but never the cache key, the cache or a report.
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Judges:
    """The models that play the three RAG-DIVE roles, as litellm model names or
    :class:`Model` objects. The validator and the evaluator default to the generator;
    the paper advises a validator from another family than the generator.

    The generator samples at ``generator_temperature`` so that repeated baseline runs
    are genuine samples; the validator and evaluator always judge at temperature 0.
    """

    generator: str | Model
    validator: str | Model | None = None
    evaluator: str | Model | None = None
    generator_temperature: float = 0.7

    @property
    def models(self) -> dict[str, Model]:
        gen = as_model(self.generator)
        return {
            "generator": gen,
            "validator": as_model(self.validator or gen),
            "evaluator": as_model(self.evaluator or gen),
        }


def as_model(model: str | Model) -> Model:
    return model if isinstance(model, Model) else Model(model)


def import_litellm() -> Any:
    """Import litellm with offline defaults a user may override in the environment."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    with warnings.catch_warnings():
        # litellm's own pydantic models warn at import; they are not the user's concern
        warnings.simplefilter("ignore")
        import litellm
    # litellm builds some pydantic models lazily, each warning about its own typing
    warnings.filterwarnings("ignore", message=".*`ReadOnly` qualifier", category=UserWarning)
    litellm.suppress_debug_info = True
    freeze_imports("litellm")
    return litellm


async def release_loop() -> None:
    """End what litellm keeps on the running event loop, before the loop closes.

    litellm 1.7x-1.8x runs one logging worker per process on the first loop that calls
    it, with a queue bound to that loop: at ``asyncio.run``'s close the worker swallows
    the cancellation and the loop waits for ever, and a later loop finds a queue it
    cannot use. Stopping it and dropping its queue lets the next loop start a fresh one.
    """
    module = sys.modules.get("litellm.litellm_core_utils.logging_worker")
    worker = getattr(module, "GLOBAL_LOGGING_WORKER", None)
    task = getattr(worker, "_worker_task", None)
    if task is None or task.get_loop() is not asyncio.get_running_loop():
        return
    with contextlib.suppress(Exception):
        await asyncio.wait_for(worker.stop(), 2.0)  # type: ignore[union-attr]
    if hasattr(worker, "_queue"):
        worker._queue = None  # type: ignore[union-attr]


_frozen: set[str] = set()


def freeze_imports(library: str) -> None:
    """Once per library: move what its import created out of the garbage collector's view.

    litellm and ragas leave about half a million long-lived objects; without this every
    full collection, and the several at interpreter exit, walks them all (about 3 s).
    """
    if library not in _frozen:
        _frozen.add(library)
        gc.freeze()


def schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """An OpenAI-style ``response_format`` asking for JSON that fits ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
    }


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parse_reply(text: str, schema: type[T]) -> T:
    """Validate a model's JSON reply, tolerating a Markdown code fence around it."""
    text = text.strip()
    fenced = _FENCE.match(text)
    return schema.model_validate_json(fenced.group(1) if fenced else text)


class LLMClient:
    """Cached, bounded, retrying access to litellm models.

    ``concurrency`` limits calls in flight across all dialogues sharing this client;
    ``timeout`` is per call, in seconds; ``retries`` is how often a transient provider
    error (rate limit, connection, 5xx) is retried with backoff.
    """

    def __init__(
        self,
        cache: ResponseCache,
        *,
        concurrency: int = 8,
        timeout: float = 120.0,
        retries: int = 4,
        reply_retries: int = 2,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.cache = cache
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = retries
        self.reply_retries = reply_retries
        # asyncio primitives belong to one event loop; run_dialogue may use several
        self._limits: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]
        ] = weakref.WeakKeyDictionary()

    @contextlib.asynccontextmanager
    async def _slot(self, model: Model) -> Any:
        """A place among the calls in flight. An in-process provider (the embedded model)
        serves few calls at a time, so its calls queue here first: waiting there would
        count against the per-call timeout."""
        limits = self._limits.setdefault(asyncio.get_running_loop(), {})
        shared = limits.setdefault("*", asyncio.Semaphore(self.concurrency))
        at_once = providers.served_at_once(model.name)
        if at_once is not None:
            own = limits.setdefault(model.name, asyncio.Semaphore(at_once))
            async with own, shared:
                yield
        else:
            async with shared:
                yield

    async def complete(
        self,
        model: str | Model,
        messages: list[dict[str, Any]],
        *,
        temperature: float = 0.0,
        seed: int | None = 0,
        response_format: dict[str, Any] | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """The text of the model's reply, from the cache when it was recorded."""
        request: dict[str, Any] = {
            "model": as_model(model).name,
            "messages": messages,
            "temperature": temperature,
            "seed": seed,
            "response_format": response_format,
            "max_tokens": max_tokens,
        }
        reply = await self._cached(request, as_model(model))
        return str(reply["content"])

    async def structured(
        self,
        model: str | Model,
        messages: list[dict[str, Any]],
        schema: type[T],
        *,
        temperature: float = 0.0,
        seed: int | None = 0,
    ) -> T:
        """A reply parsed into ``schema``. An invalid reply is retried, showing the model
        its error, up to ``reply_retries`` times; then :class:`ReplyError`."""
        messages = list(messages)
        for _ in range(self.reply_retries + 1):
            text = await self.complete(
                model,
                messages,
                temperature=temperature,
                seed=seed,
                response_format=schema_format(schema),
            )
            try:
                return parse_reply(text, schema)
            except ValidationError as exc:
                error = _short_error(exc)
            messages += [
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": f"That reply is invalid: {error}. Answer again with only a "
                    f"JSON object that fits the schema of {schema.__name__}.",
                },
            ]
        raise ReplyError(
            f"{as_model(model).name} gave no valid {schema.__name__} in "
            f"{self.reply_retries + 1} attempts; last reply {text[:200]!r} ({error})"
        )

    async def yes_probability(self, model: str | Model, messages: list[dict[str, Any]]) -> float:
        """P(yes) of a yes/no question, read from the first answer token's likeliest
        alternatives: ``P(yes) / (P(yes) + P(no))``, any case and spacing of the words.

        A provider that returns no logprobs is read from its text instead: 1.0 for a
        reply starting with yes, 0.0 for no (a step instead of a probability).
        """
        request = {
            "model": as_model(model).name, "messages": messages, "temperature": 0.0,
            "seed": 0, "max_tokens": 1, "logprobs": True, "top_logprobs": 20,
        }
        reply = await self._cached(request, as_model(model))
        mass = {"yes": 0.0, "no": 0.0}
        for token, logprob in reply.get("top_logprobs") or []:
            word = str(token).strip().lower()
            if word in mass:
                mass[word] += math.exp(logprob)
        if mass["yes"] + mass["no"] > 0:
            return mass["yes"] / (mass["yes"] + mass["no"])
        word = str(reply["content"]).strip().lower()
        if word.startswith(("yes", "no")):
            return 1.0 if word.startswith("yes") else 0.0
        raise ReplyError(
            f"{as_model(model).name} answered a yes/no question with {reply['content'][:60]!r}"
        )

    async def acompletion(self, **kwargs: Any) -> Any:
        """A cached stand-in for ``litellm.acompletion``, for libraries such as ragas
        (through instructor) that expect litellm's response object."""
        litellm = import_litellm()
        kwargs.pop("stream", None)
        request = {k: kwargs.pop(k) for k in list(kwargs) if k in KEY_FIELDS}
        reply = await self._cached(request, Model(request["model"], kwargs))
        return litellm.ModelResponse(
            model=request["model"],
            choices=[{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": reply["content"]}}],
            usage={
                "prompt_tokens": reply["prompt_tokens"],
                "completion_tokens": reply["completion_tokens"],
                "total_tokens": reply["prompt_tokens"] + reply["completion_tokens"],
            },
        )

    async def _cached(self, request: dict[str, Any], model: Model) -> dict[str, Any]:
        request = {k: v for k, v in request.items() if v is not None}
        reply = self.cache.load(request)
        if reply is not None:
            record(cache_hits=1)
            return reply
        async with self._slot(model):
            reply = await self._call(request, model)
        record(
            calls=1,
            prompt_tokens=reply["prompt_tokens"],
            completion_tokens=reply["completion_tokens"],
            cost=reply["cost"],
        )
        self.cache.store(request, reply)
        return reply

    async def _call(self, request: dict[str, Any], model: Model) -> dict[str, Any]:
        litellm = import_litellm()
        providers.ensure_registered(model.name)
        transient = (
            litellm.RateLimitError,
            litellm.APIConnectionError,
            litellm.ServiceUnavailableError,
            litellm.InternalServerError,
            litellm.Timeout,
            asyncio.TimeoutError,
        )
        for attempt in range(self.retries + 1):
            try:
                response = await asyncio.wait_for(
                    litellm.acompletion(**request, **model.params, timeout=self.timeout),
                    self.timeout,
                )
                break
            except litellm.AuthenticationError as exc:
                raise ModelError(
                    f"{model.name}: the provider refused the credentials ({type(exc).__name__}). "
                    f"Set the provider's API key in the environment (for example "
                    f"OPENAI_API_KEY or GEMINI_API_KEY), or choose another model with "
                    f"--ragdive-model."
                ) from None
            except transient as exc:
                if attempt == self.retries:
                    raise ModelError(
                        f"{describe(request)}: gave up after {attempt + 1} attempts: "
                        f"{_first_line(exc)}"
                    ) from None
                await asyncio.sleep(_backoff(exc, attempt))
            except litellm.APIError as exc:
                raise ModelError(f"{describe(request)}: {_first_line(exc)}") from None
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # litellm does not know every model's price
            cost = 0.0
        logprobs = getattr(response.choices[0], "logprobs", None)
        first = (getattr(logprobs, "content", None) or [None])[0]
        top = [[t.token, t.logprob] for t in getattr(first, "top_logprobs", None) or []]
        return {
            **({"top_logprobs": top} if top else {}),
            "content": response.choices[0].message.content or "",
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "cost": cost,
        }


_SECRET = re.compile(r"(sk-|key[=:]\s*)[A-Za-z0-9_\-]{8,}", re.IGNORECASE)


def _first_line(exc: BaseException) -> str:
    """The exception's kind and first line, with anything that looks like a key masked."""
    lines = str(exc).strip().splitlines()
    first = _SECRET.sub(r"\1***", lines[0] if lines else "")
    return f"{type(exc).__name__}: {first[:300]}"


def _backoff(exc: BaseException, attempt: int) -> float:
    """Seconds to wait before retrying: the provider's Retry-After, else exponential."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    with contextlib.suppress(TypeError, ValueError):
        return min(float(headers.get("retry-after")), 60.0)
    return min(2.0**attempt, 30.0) * (0.5 + random.random() / 2)


def _short_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "reply"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
