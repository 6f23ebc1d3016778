"""litellm provider ``embedded``: the offline model (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M) in process.

::

    from pytest_ragdive.llm.embedded import provider

    provider.register()
    await litellm.acompletion(model=provider.MODEL, messages=[...], response_format={...})

Importing this module is cheap: litellm and llama_cpp are imported only when the handler is
registered or a call is made. ``acompletion`` runs calls on a private worker thread.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..library import import_litellm
from . import grammar, runtime
from .runtime import DEFAULT_MAX_TOKENS, DEFAULT_SEED, DEFAULT_TEMPERATURE, N_CTX, message_text
from .weights import MODEL, MODEL_NAME, PROVIDER, EmbeddedModelError


def _chat_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    # the GGUF chat template renders plain strings only
    return [{"role": m.get("role", "user"), "content": message_text(m.get("content"))} for m in messages]


def _complete(
    model: str, messages: list, optional_params: Mapping[str, Any] | None, model_response: Any
) -> Any:
    """One chat completion as a ``litellm.ModelResponse`` (fills ``model_response`` if given)."""
    if model not in (MODEL_NAME, MODEL):
        raise EmbeddedModelError(f"unknown embedded model {model!r}; use {MODEL!r}")
    params = dict(optional_params or {})
    if params.get("n", 1) != 1:
        raise EmbeddedModelError(f"{MODEL} returns one choice per call (n={params['n']})")
    tool = grammar.forced_tool(params)
    return _response(_generate(messages, params, tool), tool, model_response)


def _generate(messages: list, params: Mapping[str, Any],
              tool: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The runtime's reply to ``messages`` under litellm's ``params``."""
    response_format: dict[str, Any] | None
    if tool is not None:
        response_format = {"type": "json_object", "schema": tool.get("parameters") or {}}
    else:
        response_format = grammar.to_llama_response_format(params.get("response_format"))
    max_tokens = (
        params.get("max_completion_tokens") or params.get("max_tokens") or DEFAULT_MAX_TOKENS
    )
    temperature = params.get("temperature")
    seed = params.get("seed")
    stop = params.get("stop")
    return runtime.generate(
        _chat_messages(messages),
        grammar=grammar.grammar_for(response_format),
        temperature=DEFAULT_TEMPERATURE if temperature is None else float(temperature),
        seed=DEFAULT_SEED if seed is None else int(seed),
        max_tokens=int(max_tokens),
        stop=[stop] if isinstance(stop, str) else stop,
        **({"top_p": float(params["top_p"])} if params.get("top_p") is not None else {}),
        top_logprobs=int(params.get("top_logprobs") or 1) if params.get("logprobs") else 0,
    )


def _response(reply: Mapping[str, Any], tool: Mapping[str, Any] | None,
              model_response: Any) -> Any:
    """The runtime's ``reply`` as litellm's response: a forced tool's call, or the text."""
    import litellm

    choice = reply["choices"][0]
    text = choice["message"].get("content") or ""
    finish_reason = choice.get("finish_reason") or "stop"
    if tool is not None:
        message = litellm.Message(
            role="assistant",
            content=None,
            tool_calls=[
                {
                    "id": "call_" + hashlib.sha256(text.encode()).hexdigest()[:24],
                    "type": "function",
                    "function": {"name": tool["name"], "arguments": text},
                }
            ],
        )
        finish_reason = "tool_calls" if finish_reason == "stop" else finish_reason
    else:
        message = litellm.Message(role="assistant", content=text)
    usage = reply.get("usage") or {}
    response: Any = model_response if model_response is not None else litellm.ModelResponse()
    response.choices = [
        litellm.Choices(index=0, message=message, finish_reason=finish_reason,
                        logprobs=choice.get("logprobs"))
    ]
    response.created = int(reply.get("created") or time.time())
    response.model = MODEL
    prompt_tokens = int(usage.get("prompt_tokens", 0))
    completion_tokens = int(usage.get("completion_tokens", 0))
    response.usage = litellm.Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
    )
    return response


def _call(model: str, messages: list, optional_params: dict | None, kwargs: dict) -> Any:
    import litellm

    try:
        return _complete(model, messages, optional_params, kwargs.get("model_response"))
    except EmbeddedModelError as exc:
        # litellm reports any other exception from a custom handler as APIConnectionError, which
        # callers treat as transient and retry; a bad request or missing model is not transient.
        raise litellm.BadRequestError(message=str(exc), model=MODEL, llm_provider=PROVIDER) from exc


@functools.lru_cache(maxsize=1)
def _handler() -> Any:
    """The one handler instance (its class subclasses ``litellm.CustomLLM``, defined lazily)."""
    import litellm

    class EmbeddedLLM(litellm.CustomLLM):
        """litellm provider ``embedded``: the offline llama.cpp model, one call at a time."""
        # litellm passes many keyword arguments (api_base, logging_obj, logger_fn, client, ...)
        # whose set changes between releases: take what is needed, swallow the rest.
        def completion(  # type: ignore[override]
            self, model: str, messages: list, optional_params: dict | None = None, **kwargs: Any
        ) -> Any:
            return _call(model, messages, optional_params, kwargs)

        async def acompletion(  # type: ignore[override]
            self, model: str, messages: list, optional_params: dict | None = None, **kwargs: Any
        ) -> Any:
            import asyncio

            call = functools.partial(_call, model, messages, optional_params, kwargs)
            return await asyncio.get_running_loop().run_in_executor(runtime.executor(), call)

        def streaming(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            raise litellm.BadRequestError(
                message=f"{MODEL} does not stream", model=MODEL, llm_provider=PROVIDER
            )

        astreaming = streaming  # type: ignore[assignment]

    return EmbeddedLLM()


def register() -> None:
    """Register provider ``embedded`` with litellm (idempotent, keeps other custom providers)."""
    litellm = import_litellm()
    from litellm.utils import custom_llm_setup

    handler = _handler()
    entries = [e for e in litellm.custom_provider_map if e.get("provider") != PROVIDER]
    litellm.custom_provider_map = [*entries, {"provider": PROVIDER, "custom_handler": handler}]
    # litellm runs custom_llm_setup() at the start of every call; running it now also makes
    # helpers like litellm.get_llm_provider() know the provider before the first call.
    custom_llm_setup()
    if MODEL not in litellm.model_cost:
        litellm.register_model(
            {
                MODEL: {
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                    "max_input_tokens": N_CTX,
                    "max_output_tokens": N_CTX,
                    "max_tokens": N_CTX,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    # without these two litellm logs a warning on registration
                    "cache_creation_input_token_cost": 0.0,
                    "cache_read_input_token_cost": 0.0,
                    "supports_response_schema": True,
                }
            }
        )
