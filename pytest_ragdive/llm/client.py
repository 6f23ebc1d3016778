"""The one model client. Every model call of pytest-ragdive goes through ``LLMClient``.

It adds to ``litellm.acompletion``: the response cache, structured output validated
against a pydantic schema in the form the model's server accepts (``structured.py``), a
bounded number of calls in flight, a per-call timeout, retries of transient provider
errors (a request the server rejects as invalid fails at once, saying how to fix it), and
a usage ledger per dialogue. litellm is imported on the first call that is not a cache hit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from . import providers, retrying
from .cache import KEY_FIELDS, ResponseCache, describe, request_key
from .calling import attempt
from .errors import (
    ModelError,
    ReplyError,
    RequestRejected,
    Transient,
    short_error,
)
from .flights import Flights
from .library import import_litellm
from .model import Model, as_model
from .structured import (
    MODES,
    ServedModel,
    check_mode,
    request_mode,
    reshape,
    wants_structure,
    without_logprobs,
)
from .usage import record

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger("pytest_ragdive")


def schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """An OpenAI-style ``response_format`` asking for JSON that fits ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
    }


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_FIRST_WORD = re.compile(r"\W*(\w+)")


def _p_yes(reply: Mapping[str, Any]) -> float | None:
    """P(yes) from a yes/no reply's first-token alternatives, else from its first word;
    None when the reply is no verdict."""
    mass = {"yes": 0.0, "no": 0.0}
    for token, logprob in reply.get("top_logprobs") or []:
        word = str(token).strip().lower()
        if word in mass:
            mass[word] += math.exp(logprob)
    if mass["yes"] + mass["no"] > 0:
        return mass["yes"] / (mass["yes"] + mass["no"])
    first = _FIRST_WORD.match(str(reply["content"]))
    if first and first.group(1).lower() in ("yes", "no"):
        return 1.0 if first.group(1).lower() == "yes" else 0.0
    return None


def parse_reply(text: str, schema: type[T]) -> T:
    """Validate a model's JSON reply, tolerating a Markdown code fence around it."""
    text = text.strip()
    fenced = _FENCE.match(text)
    return schema.model_validate_json(fenced.group(1) if fenced else text)


class LLMClient:
    """Cached, bounded, retrying access to litellm models.

    ``concurrency`` limits calls in flight across all dialogues sharing this client;
    ``timeout`` is per call, in seconds; ``retries`` is how often a transient provider
    error (rate limit, connection, 5xx) is retried, waiting at most ``retry_wait``
    seconds between attempts (a waiting call gives its place among the calls in flight
    to others); ``structured_output`` is
    the structured-output setting of models that do not set their own (``auto``, or a
    mode of ``structured.MODES``).
    """

    def __init__(
        self,
        cache: ResponseCache,
        *,
        concurrency: int = 8,
        timeout: float = 120.0,
        retries: int = 4,
        retry_wait: float = 30.0,
        reply_retries: int = 2,
        structured_output: str = "auto",
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.cache = cache
        self.concurrency = concurrency
        self.timeout = timeout
        self.retries = retries
        self.retry_wait = retry_wait
        self.reply_retries = reply_retries
        self.structured_output = check_mode(structured_output, "LLMClient")
        self._served: dict[tuple[str, str, str], ServedModel] = {}
        # asyncio primitives belong to one event loop; run_dialogue may use several
        self._limits: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]
        ] = weakref.WeakKeyDictionary()
        self._flights = Flights()
        self.calls_made = 0  # model calls this client made (not cache hits), for progress

    def served(self, model: str | Model) -> ServedModel:
        """What this client has found out so far about how ``model``'s server takes requests."""
        model = as_model(model)
        setting = model.structured_output or self.structured_output
        return self._served.setdefault((*model.server, setting), ServedModel(setting))

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
        reply, _ = await self._send(request, as_model(model))
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
                error = short_error(exc)
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

        A provider that returns no logprobs (or rejects them) is read from its text
        instead: 1.0 for a reply whose first word is yes, 0.0 for no (a step, not a
        probability). Any other reply ("Not sure.", "Nothing contradicts it.") is not a
        verdict: the question is asked again, after that reply, up to ``reply_retries``
        times; then :class:`ReplyError`, so the turn is unscored, never a score.
        """
        asked = list(messages)
        for _ in range(self.reply_retries + 1):
            request = {
                "model": as_model(model).name, "messages": asked, "temperature": 0.0,
                "seed": 0, "max_tokens": 1, "logprobs": True, "top_logprobs": 20,
            }
            reply, _ = await self._send(request, as_model(model))
            p_yes = _p_yes(reply)
            if p_yes is not None:
                return p_yes
            # the same question again, so that the reply is judged on what was asked
            asked = [*asked, {"role": "assistant", "content": str(reply["content"])},
                     {**messages[-1], "content": f"{messages[-1]['content']}\n\n"
                                                 f"Answer with only yes or no."}]
        raise ReplyError(
            f"{as_model(model).name} answered a yes/no question with {reply['content'][:60]!r} "
            f"({self.reply_retries + 1} attempts)")

    def stand_in(self, model: Model) -> Callable[..., Awaitable[Any]]:
        """A cached stand-in for ``litellm.acompletion`` for ``model``, for libraries such as
        ragas (through instructor) that expect litellm's response object: its params and
        structured-output setting apply to every call. Arguments that do not change the
        answer (api_base, api_key, ...) reach litellm only."""

        async def acompletion(**kwargs: Any) -> Any:
            kwargs.pop("stream", None)
            request = {k: kwargs.pop(k) for k in list(kwargs) if k in KEY_FIELDS}
            params = {**model.params, **kwargs}
            return await self._acompletion(
                Model(request["model"], params, model.structured_output), request
            )

        return acompletion

    async def _acompletion(self, model: Model, request: dict[str, Any]) -> Any:
        litellm = import_litellm()
        reply, sent = await self._send(request, model)
        content = str(reply["content"])
        if request_mode(request) and request_mode(sent) is None:  # sent as text
            fenced = _FENCE.match(content.strip())
            content = fenced.group(1) if fenced else content
        return litellm.ModelResponse(
            model=request["model"],
            choices=[{"index": 0, "finish_reason": "stop",
                      "message": {"role": "assistant", "content": content}}],
            usage={
                "prompt_tokens": reply["prompt_tokens"],
                "completion_tokens": reply["completion_tokens"],
                "total_tokens": reply["prompt_tokens"] + reply["completion_tokens"],
            },
        )

    async def _send(
        self, request: dict[str, Any], model: Model
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The reply to ``request`` in the form ``model``'s server takes, and the request as
        sent. A form the server rejects (output format, logprobs) is replaced once per
        model and client, when the setting allows it: until a form is known to work, one
        request at a time tries it and the others wait for the outcome, unless the server
        is only busy (a retried failure says nothing of the form: the others go too)."""
        if model.server_id:  # part of the key, never sent (see _call)
            request = {**request, "server": model.server_id}
        served = self.served(model)
        for _ in range(len(MODES) + 2):
            probe = await self._probe(request, served)

            def let_go() -> None:
                nonlocal probe
                if probe is not None:
                    probe.release()
                    probe = None

            try:
                sent = served.shape(request)
                sent = self._recorded_form(request, sent, served) or sent
                reply = await self._cached(sent, model, on_retry=let_go)
            except RequestRejected as exc:
                if not served.adapt(exc.about, sent, model.name):
                    raise
                continue
            finally:
                let_go()
            served.took(request, model.name)
            return reply, sent
        raise ModelError(f"{describe(request)}: the server rejected every form of this request")

    async def _probe(
        self, request: dict[str, Any], served: ServedModel
    ) -> asyncio.Semaphore | None:
        """The model's probe lock, held, when ``request`` goes in a form not yet known to
        work on its server; None when it may go at once."""
        if served.form(request) in served.works:
            return None
        limits = self._limits.setdefault(asyncio.get_running_loop(), {})
        probe = limits.setdefault(f"probe {id(served)}", asyncio.Semaphore(1))
        await probe.acquire()
        if served.form(request) in served.works:  # another request found out meanwhile
            probe.release()
            return None
        return probe

    def _recorded_form(
        self, request: dict[str, Any], sent: dict[str, Any], served: ServedModel
    ) -> dict[str, Any] | None:
        """Another form of ``request`` that the cache holds while ``sent`` is not recorded:
        a recording made after a fallback replays without asking the server again."""
        structured = served.mode() is None and wants_structure(request)
        logprobs = served.logprobs and bool(sent.get("logprobs"))
        if self.cache.mode == "all" or not (structured or logprobs) or self.cache.contains(sent):
            return None
        if structured:
            for mode in MODES:
                other = reshape(request, mode)
                if self.cache.contains(other):
                    served.chosen = mode
                    return served.shape(request)
        if logprobs:
            other = without_logprobs(sent)
            if self.cache.contains(other):
                served.logprobs = False
                return other
        return None

    async def _cached(self, request: dict[str, Any], model: Model,
                      on_retry: Callable[[], None] = lambda: None) -> dict[str, Any]:
        request = {k: v for k, v in request.items() if v is not None}
        reply = self.cache.load(request)
        if reply is not None:
            record(cache_hits=1)
            return reply
        reply, shared = await self._flights.run(
            request_key(request), lambda: self._recorded(request, model, on_retry))
        if shared:
            record(cache_hits=1)
        return reply

    async def _recorded(self, request: dict[str, Any], model: Model,
                        on_retry: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """The model's reply to ``request``, retried (``on_retry`` is called before the
        first wait), counted and stored in the cache."""
        tries = 0
        while True:
            async with self._slot(model):
                try:
                    reply = await attempt(request, model, self.timeout)
                    break
                except Transient as exc:
                    if tries == self.retries:
                        raise ModelError(
                            f"{describe(request)}: gave up after {tries + 1} attempts: "
                            f"{exc}. Raise ini ragdive_retries or ragdive_retry_wait if the "
                            f"provider is only busy"
                        ) from None
                    headers = getattr(getattr(exc.cause, "response", None), "headers", None)
                    try:
                        wait = retrying.wait(tries + 1, first=1.0, longest=self.retry_wait,
                                             header=(headers or {}).get("retry-after"))
                    except retrying.WaitTooLong as too_long:
                        raise ModelError(
                            f"{describe(request)}: the provider {too_long} (Retry-After), "
                            f"longer than ragdive_retry_wait = {self.retry_wait:g} s: {exc}. "
                            f"Lower the load (ragdive_concurrency) or raise ragdive_retry_wait"
                        ) from None
            on_retry()
            await asyncio.sleep(wait)  # outside the slot: other calls go on meanwhile
            tries += 1
        self.calls_made += 1
        record(
            calls=1,
            prompt_tokens=reply["prompt_tokens"],
            completion_tokens=reply["completion_tokens"],
            cost=reply["cost"],
        )
        self.cache.store(request, reply)
        return reply
