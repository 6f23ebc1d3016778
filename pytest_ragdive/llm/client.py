"""The one model client. Every model call of pytest-ragdive goes through ``LLMClient``.

It adds to ``litellm.acompletion``: the response cache, structured output validated
against a pydantic schema in the form the model's server accepts (``structured.py``), a
bounded number of calls in flight that adapts to rate limits (``throttle.py``), a per-call
timeout, retries of transient provider errors within a count and a budget of time (a
request the server rejects as invalid fails at once, saying how to fix it), and a usage
ledger per dialogue (``cached_calls.py``). A reply that cannot be used (no valid structure
after every attempt, no yes/no verdict) is marked so in the cache: it is asked again, not
replayed. litellm is imported on the first call
that is not a cache hit; ``stand_in.py`` gives the client litellm's shape.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .cache import ResponseCache, describe, request_key
from .cached_calls import CachedCalls
from .errors import ModelError, ReplyError, RequestRejected, short_error
from .model import Model, as_model
from .replies import p_yes, parse_reply, schema_format
from .structured import (
    MODES,
    ServedModel,
    check_mode,
    reshape,
    wants_structure,
    without_logprobs,
)

T = TypeVar("T", bound=BaseModel)


class LLMClient(CachedCalls):
    """Cached, bounded, retrying access to litellm models.

    ``concurrency`` limits calls in flight across all dialogues sharing this client (and
    each model's calls, fewer while its provider says it is busy); ``timeout`` is per call,
    in seconds; ``retries`` is how often a transient provider error (connection, timeout,
    5xx) is retried, waiting at most ``retry_wait`` seconds between attempts (a waiting
    call gives its place among the calls in flight to others); a busy provider (429, 503,
    529) is retried whatever the count, every call within ``retry_budget`` seconds of
    waits in all; ``structured_output`` is
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
        retry_budget: float = 300.0,
        reply_retries: int = 2,
        structured_output: str = "auto",
    ) -> None:
        super().__init__(cache, concurrency=concurrency, timeout=timeout, retries=retries,
                         retry_wait=retry_wait, retry_budget=retry_budget)
        self.reply_retries = reply_retries
        self.structured_output = check_mode(structured_output, "LLMClient")
        self._served: dict[tuple[str, str, str], ServedModel] = {}

    def served(self, model: str | Model) -> ServedModel:
        """What this client has found out so far about how ``model``'s server takes requests."""
        model = as_model(model)
        setting = model.structured_output or self.structured_output
        return self._served.setdefault((*model.server, setting), ServedModel(setting))

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
        reply, _ = await self.send(request, as_model(model))
        return str(reply["content"])

    def _unusable(self, keys: list[str], error: ReplyError) -> ReplyError:
        """``error``, once the replies of the requests ``keys`` name are marked in the cache
        as replies that could not be used: the next run asks again."""
        self.cache.unusable(keys, str(error))
        return error

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
        its error, up to ``reply_retries`` times; then :class:`ReplyError`, and the replies
        of the attempts are marked unusable in the cache (asked again, never replayed)."""
        messages = list(messages)
        keys: list[str] = []  # of the attempts' requests
        for _ in range(self.reply_retries + 1):
            request = {"model": as_model(model).name, "messages": messages,
                       "temperature": temperature, "seed": seed,
                       "response_format": schema_format(schema), "max_tokens": None}
            reply, request = await self.send(request, as_model(model))
            keys.append(request_key(request))
            text = str(reply["content"])
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
        raise self._unusable(keys, ReplyError(
            f"{as_model(model).name} gave no valid {schema.__name__} in "
            f"{self.reply_retries + 1} attempts; last reply {text[:200]!r} ({error})"
        ))

    async def yes_probability(self, model: str | Model, messages: list[dict[str, Any]]) -> float:
        """P(yes) of a yes/no question, read from the first answer token's likeliest
        alternatives: ``P(yes) / (P(yes) + P(no))``, any case and spacing of the words.

        A provider that returns no logprobs (or rejects them) is read from its text
        instead: 1.0 for a reply whose first word is yes, 0.0 for no (a step, not a
        probability). Any other reply ("Not sure.", "Nothing contradicts it.") is not a
        verdict: the question is asked again, after that reply, up to ``reply_retries``
        times; then :class:`ReplyError`, so the turn is unscored, never a score, and the
        replies are marked unusable in the cache.
        """
        asked = list(messages)
        keys: list[str] = []  # of the attempts' requests
        for _ in range(self.reply_retries + 1):
            request = {
                "model": as_model(model).name, "messages": asked, "temperature": 0.0,
                "seed": 0, "max_tokens": 1, "logprobs": True, "top_logprobs": 20,
            }
            reply, request = await self.send(request, as_model(model))
            keys.append(request_key(request))
            yes = p_yes(reply)
            if yes is not None:
                return yes
            # the same question again, so that the reply is judged on what was asked
            asked = [*asked, {"role": "assistant", "content": str(reply["content"])},
                     {**messages[-1], "content": f"{messages[-1]['content']}\n\n"
                                                 f"Answer with only yes or no."}]
        raise self._unusable(keys, ReplyError(
            f"{as_model(model).name} answered a yes/no question with {reply['content'][:60]!r} "
            f"({self.reply_retries + 1} attempts)"))

    async def send(
        self, request: dict[str, Any], model: Model
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The reply to ``request`` in the form ``model``'s server takes, and the request as
        sent. A form the server rejects (output format, logprobs) is replaced once per
        model and client, when the setting allows it: until a form is known to work, one
        request at a time tries it and the others wait for the outcome, unless the server
        is only busy (a retried failure says nothing of the form: the others go too)."""
        if model.server_id:  # part of the key, never sent (see calling.attempt)
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
                reply = await self.cached(sent, model, on_retry=let_go)
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
        probe = self.semaphore(f"probe {id(served)}", 1)
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
