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
import gc
import logging
import math
import os
import random
import re
import sys
import urllib.parse
import warnings
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from . import providers
from .cache import KEY_FIELDS, ResponseCache, describe, request_key
from .flights import Flights
from .secrets import SECRET_NAME, mask
from .structured import MODES, ServedModel, check_mode, request_mode, reshape
from .usage import record

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger("pytest_ragdive")


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
    """Import litellm (the offline defaults are set by this package's ``__init__``)."""
    module = sys.modules.get("litellm")
    if module is not None and "litellm" in _frozen:  # done: no process-wide change again
        return module
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
_FIRST_WORD = re.compile(r"\W*(\w+)")


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

        A provider that returns no logprobs (or rejects them) is read from its text
        instead: 1.0 for a reply whose first word is yes, 0.0 for no (a step, not a
        probability). Any other reply ("Not sure.", "Nothing contradicts it.") is not a
        verdict: :class:`ReplyError`, so the turn is unscored, never a score.
        """
        request = {
            "model": as_model(model).name, "messages": messages, "temperature": 0.0,
            "seed": 0, "max_tokens": 1, "logprobs": True, "top_logprobs": 20,
        }
        reply, _ = await self._send(request, as_model(model))
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
        raise ReplyError(
            f"{as_model(model).name} answered a yes/no question with {reply['content'][:60]!r}"
        )

    async def acompletion(self, **kwargs: Any) -> Any:
        """A cached stand-in for ``litellm.acompletion``, for libraries such as ragas
        (through instructor) that expect litellm's response object. Arguments that do
        not change the answer (api_base, api_key, ...) reach litellm only."""
        kwargs.pop("stream", None)
        request = {k: kwargs.pop(k) for k in list(kwargs) if k in KEY_FIELDS}
        return await self._acompletion(Model(request["model"], kwargs), request)

    def stand_in(self, model: Model) -> Callable[..., Awaitable[Any]]:
        """:meth:`acompletion` for ``model``: its params and structured-output setting
        apply to every call (ragas' instructor client uses it)."""

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
        request at a time tries it and the others wait for the outcome."""
        if model.server_id:  # part of the key, never sent (see _call)
            request = {**request, "server": model.server_id}
        served = self.served(model)
        for _ in range(len(MODES) + 2):
            probe = await self._probe(request, served)
            try:
                sent = _shape(request, served)
                sent = self._recorded_form(request, sent, served) or sent
                reply = await self._cached(sent, model)
            except RequestRejected as exc:
                if not _adapt(exc, sent, served, model):
                    raise
                continue
            finally:
                if probe is not None:
                    probe.release()
            served.works.add(_form(request, served))
            if served.rejected and not served.announced and _wants_structure(request):
                _announce(served, model)
            return reply, sent
        raise ModelError(f"{describe(request)}: the server rejected every form of this request")

    async def _probe(
        self, request: dict[str, Any], served: ServedModel
    ) -> asyncio.Semaphore | None:
        """The model's probe lock, held, when ``request`` goes in a form not yet known to
        work on its server; None when it may go at once."""
        if _form(request, served) in served.works:
            return None
        limits = self._limits.setdefault(asyncio.get_running_loop(), {})
        probe = limits.setdefault(f"probe {id(served)}", asyncio.Semaphore(1))
        await probe.acquire()
        if _form(request, served) in served.works:  # another request found out meanwhile
            probe.release()
            return None
        return probe

    def _recorded_form(
        self, request: dict[str, Any], sent: dict[str, Any], served: ServedModel
    ) -> dict[str, Any] | None:
        """Another form of ``request`` that the cache holds while ``sent`` is not recorded:
        a recording made after a fallback replays without asking the server again."""
        structured = served.mode() is None and _wants_structure(request)
        logprobs = served.logprobs and bool(sent.get("logprobs"))
        if self.cache.mode == "all" or not (structured or logprobs) or self.cache.contains(sent):
            return None
        if structured:
            for mode in MODES:
                other = reshape(request, mode)
                if self.cache.contains(other):
                    served.chosen = mode
                    return _shape(request, served)
        if logprobs:
            other = _without_logprobs(sent)
            if self.cache.contains(other):
                served.logprobs = False
                return other
        return None

    async def _cached(self, request: dict[str, Any], model: Model) -> dict[str, Any]:
        request = {k: v for k, v in request.items() if v is not None}
        reply = self.cache.load(request)
        if reply is not None:
            record(cache_hits=1)
            return reply
        reply, shared = await self._flights.run(
            request_key(request), lambda: self._recorded(request, model))
        if shared:
            record(cache_hits=1)
        return reply

    async def _recorded(self, request: dict[str, Any], model: Model) -> dict[str, Any]:
        """The model's reply to ``request``, retried, counted and stored in the cache."""
        attempt = 0
        while True:
            async with self._slot(model):
                try:
                    reply = await self._call(request, model)
                    break
                except _Transient as exc:
                    if attempt == self.retries:
                        raise ModelError(
                            f"{describe(request)}: gave up after {attempt + 1} attempts: "
                            f"{exc}. Raise ini ragdive_retries or ragdive_retry_wait if the "
                            f"provider is only busy"
                        ) from None
                    wait = _backoff(exc.cause, attempt, self.retry_wait)
            await asyncio.sleep(wait)  # outside the slot: other calls go on meanwhile
            attempt += 1
        record(
            calls=1,
            prompt_tokens=reply["prompt_tokens"],
            completion_tokens=reply["completion_tokens"],
            cost=reply["cost"],
        )
        self.cache.store(request, reply)
        return reply

    async def _call(self, request: dict[str, Any], model: Model) -> dict[str, Any]:
        request = {k: v for k, v in request.items() if k != "server"}
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
        # one attempt: _cached retries, away from the limit of calls in flight. No local holds
        # a credential: --showlocals prints the locals of this frame.
        try:
            response = await asyncio.wait_for(
                litellm.acompletion(**request, **model.params, timeout=self.timeout),
                self.timeout,
            )
        except litellm.AuthenticationError as exc:
            raise ModelError(
                f"{model.name}: the provider refused the credentials ({type(exc).__name__}). "
                f"Set the provider's API key in the environment (for example "
                f"OPENAI_API_KEY or GEMINI_API_KEY), or choose another model with "
                f"--ragdive-model."
            ) from None
        except Exception as exc:
            if _is_rejection(exc, litellm):
                raise _rejected(exc, request, model, litellm) from None
            if not isinstance(exc, transient) and _status(exc) not in _RETRIED_4XX:
                if isinstance(exc, litellm.APIError):
                    raise ModelError(
                        f"{describe(request)}: {_server_message(exc, _secrets(model))}"
                    ) from None
                raise
            raise _Transient(_server_message(exc, _secrets(model)), exc) from None
        if not getattr(response, "choices", None):
            raise ModelError(
                f"{describe(request)}: the provider answered without a reply (no 'choices' in "
                f"{mask(str(response)[:200], _secrets(model))}); check the model name and the "
                f"server, or retry later")
        return _reply(response, litellm)


def _wants_structure(request: Mapping[str, Any]) -> bool:
    return (request.get("response_format") or {}).get("type") in ("json_schema", "json_object")


def _without_logprobs(request: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k not in ("logprobs", "top_logprobs")}


def _form(request: dict[str, Any], served: ServedModel) -> str | None:
    """The form whose acceptance ``request`` depends on: its structured-output mode under
    ``auto``, or logprobs; None when it depends on nothing that may be rejected."""
    if _wants_structure(request):
        if served.setting != "auto":
            return None
        return served.mode() or request_mode(request)
    return "logprobs" if request.get("logprobs") and served.logprobs else None


def _shape(request: dict[str, Any], served: ServedModel) -> dict[str, Any]:
    """``request`` in the form ``served`` says its server takes."""
    mode = served.mode() if _wants_structure(request) else None
    sent = reshape(request, mode) if mode else request
    return _without_logprobs(sent) if sent.get("logprobs") and not served.logprobs else sent


def _adapt(exc: RequestRejected, sent: dict[str, Any], served: ServedModel, model: Model) -> bool:
    """Whether a rejected request can be sent in another form; notes the form to use."""
    if exc.about == "logprobs" and sent.get("logprobs") and served.logprobs:
        served.logprobs = False
        log.warning("pytest-ragdive: %s rejects logprobs; its yes/no verdicts are read from the "
                    "reply's first word from now on", model.name)
        return True
    mode = request_mode(sent)
    if exc.about != "structured" or mode is None:
        return False
    return served.next_mode(mode) is not None


def _announce(served: ServedModel, model: Model) -> None:
    """One log line, once the server took a mode after rejecting others."""
    served.announced = True
    rejected = ", ".join(m for m in MODES if m in served.rejected)
    log.warning("pytest-ragdive: %s rejected structured output as %s and took %s, used for its "
                "calls from now on (structured_output=%r on the Model, or ini "
                "ragdive_structured_output = %s, skips this check)",
                model.name, rejected, served.chosen, served.chosen, served.chosen)


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


# ----------------------------------------------------------------------------- errors


def _rejected(exc: Exception, request: dict[str, Any], model: Model, litellm: Any
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
    status = _status(exc)
    return RequestRejected(
        f"{describe(request)}: the server rejected the request as invalid (HTTP {status}; "
        f"not retried): {_server_message(exc, _secrets(model))}\n"
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
_RETRIED_4XX = frozenset({408, 409, 429})
#: what a server that answers an invalid request with a 5xx says (llama-cpp-python's server
#: answers 500 to a request that fails its schema)
_INVALID_REQUEST = re.compile(r"\b\d+ validation errors?\b|\b(?:is|are) not supported\b",
                              re.IGNORECASE)
_FORMAT_WORDS = re.compile(
    r"response_format|json_schema|json_object|response.schema|\btools?\b|tool_choice|"
    r"structured|grammar", re.IGNORECASE)


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _is_rejection(exc: Exception, litellm: Any) -> bool:
    """Whether ``exc`` says the request itself is invalid, so that repeating it cannot help."""
    if isinstance(exc, (litellm.BadRequestError, litellm.NotFoundError,
                        litellm.UnprocessableEntityError)):
        return True
    status = _status(exc)
    if status is not None and 400 <= status < 500:
        return status not in _RETRIED_4XX
    if isinstance(exc, litellm.InternalServerError) or type(exc) is litellm.APIError:
        return bool(_INVALID_REQUEST.search(str(exc)))
    return False


def _secrets(model: Model) -> list[str]:
    """Values that must not appear in a message: the Model's credential params and the
    environment's ``*_KEY`` / ``*_TOKEN`` / ``*_SECRET`` variables, longest first."""
    values = [str(v) for k, v in model.params.items()
              if SECRET_NAME.search(str(k)) and isinstance(v, str) and len(v) >= 4]
    values += [v for k, v in os.environ.items()
               if re.search(r"(KEY|TOKEN|SECRET|PASSWORD)$", k) and len(v) >= 8]
    return sorted(set(values), key=len, reverse=True)


_LITELLM_PREFIX = re.compile(
    r"^(?:litellm\.\w+:\s*)+(?:\w+(?:Error|Exception):\s*)?(?:\w+Exception\s*-\s*)?")


def _server_message(exc: BaseException, secrets: list[str] | tuple[str, ...] = (),
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


class _Transient(Exception):
    """A failed attempt worth another: rate limit, connection, timeout, 5xx."""

    def __init__(self, message: str, cause: BaseException) -> None:
        super().__init__(message)
        self.cause = cause


def _backoff(exc: BaseException, attempt: int, longest: float) -> float:
    """Seconds to wait before retrying: the provider's Retry-After, else exponential with
    jitter; never more than ``longest``."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    with contextlib.suppress(TypeError, ValueError):
        return min(float(str(headers.get("retry-after"))), longest)
    return min(2.0**attempt, longest) * (0.5 + random.random() / 2)


def _short_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "reply"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
