"""The embedded model's llama.cpp runtime: one model per process, one call at a time.

A prompt reuses the KV state of the longest prefix it shares with an earlier prompt, evaluated so
that the reply is bit for bit the one a fresh evaluation gives (``prefixes.py``): temperature 0
(the default) or a fixed seed (default 0) gives the same reply whatever ran before. Environment:
``RAGDIVE_EMBEDDED_THREADS`` (default: see ``_threads``), ``RAGDIVE_EMBEDDED_STATE_MB`` (memory
for prefix states, default 1024). Replies under a grammar are sampled by
``sampling.GrammarSampler``.
"""

from __future__ import annotations

import atexit
import collections
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .weights import MODEL, PROVIDER, model_path

if TYPE_CHECKING:
    import concurrent.futures

    from .prefixes import CallStats, PrefixStates
    from .sampling import GrammarSampler

N_CTX = 4096
DEFAULT_MAX_TOKENS = 512
DEFAULT_TEMPERATURE = 0.0
DEFAULT_SEED = 0


def message_text(content: Any) -> str:
    """Message content as plain text (OpenAI content may be a list of typed parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
        )
    return str(content)


_lock = threading.Lock()  # one model per process; llama.cpp contexts are not thread safe
_llama: Any = None
_prefixes: PrefixStates | None = None
_sampling: GrammarSampler | None = None
_executor: concurrent.futures.ThreadPoolExecutor | None = None
#: the latest model calls of this process, for benchmarks (``call_log``); bounded, so that
#: a long session does not grow it without end
_calls: collections.deque[CallStats] = collections.deque(maxlen=100_000)


def _threads() -> int:
    """``$RAGDIVE_EMBEDDED_THREADS``, else the cores this xdist worker may use."""
    if env := os.environ.get("RAGDIVE_EMBEDDED_THREADS"):
        return max(1, int(env))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    # xdist workers each load their own model and get a share of the cores: more threads than
    # cores make OpenMP's threads wait for each other at every barrier. Measured alone on 2
    # cores, 2 threads decode 20.7 tok/s against 14 for 1 (prefill 60 tok/s either way); with
    # OMP_WAIT_POLICY=PASSIVE, 2 threads decode only 12.7, so libgomp's default (spin briefly,
    # then sleep) is left alone.
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))
    return max(1, cores // workers)


def _state_budget() -> int:
    """Bytes of prompt-prefix states kept: ``$RAGDIVE_EMBEDDED_STATE_MB`` (default 1024)."""
    return int(float(os.environ.get("RAGDIVE_EMBEDDED_STATE_MB") or 1024) * (1 << 20))


def _load_locked() -> Any:
    global _llama, _prefixes, _sampling
    if _llama is None:
        import llama_cpp

        path = model_path()
        _llama = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=N_CTX,
            n_threads=(threads := _threads()),
            n_threads_batch=threads,  # llama-cpp-python's default is every core of the machine
            seed=DEFAULT_SEED,
            verbose=False,
        )
        from .prefixes import PrefixStates
        from .sampling import GrammarSampler

        _prefixes = PrefixStates(_llama, budget=_state_budget())
        _sampling = GrammarSampler(_llama)
        atexit.register(_close)
    return _llama


def load() -> float:
    """Load the model now (it is otherwise loaded by the first call); returns seconds spent."""
    start = time.perf_counter()
    with _lock:
        _load_locked()
    return time.perf_counter() - start


def call_log() -> list[CallStats]:
    """The calls this process made on the model (the latest 100,000): prompt tokens
    evaluated and reused, seconds."""
    return list(_calls)


def _close() -> None:
    global _llama, _prefixes, _sampling
    with _lock:
        if _llama is not None:
            _prefixes = _sampling = None
            _llama.close()
            _llama = None


def _first_token_logprobs(llama: Any, logits: Any, k: int) -> dict[str, Any]:
    """OpenAI-style ``logprobs`` of the first generated position: its ``k`` likeliest tokens."""
    import numpy as np

    shifted = logits - logits.max()
    logprobs = shifted - np.log(np.exp(shifted).sum())
    top = np.argsort(-logprobs)[:k]
    entries = [
        {"token": llama.detokenize([int(i)]).decode("utf-8", "replace"),
         "logprob": float(logprobs[i]), "bytes": None}
        for i in top
    ]
    return {"content": [{**entries[0], "top_logprobs": entries}]}


def generate(
    messages: list[dict[str, Any]], *, top_logprobs: int = 0, **kwargs: Any
) -> dict[str, Any]:
    """One chat completion on the model; with ``top_logprobs`` the reply carries the
    first token's likeliest alternatives (llama.cpp itself only has them with
    ``logits_all``, which would cost a vocabulary of floats per prompt token)."""
    with _lock:
        llama = _load_locked()
        assert _prefixes is not None
        start = time.perf_counter()
        # A prompt is positioned on the longest stored prefix it shares and the rest is
        # evaluated in aligned chunks (see prefixes.py), so the reply is the same whatever
        # ran before.
        try:
            reply = llama.create_chat_completion(messages=messages, **kwargs)
        except ValueError as exc:
            _prefixes.clear()
            if "exceed context window" not in str(exc):
                raise
            import litellm

            raise litellm.ContextWindowExceededError(
                message=f"{MODEL}: the prompt does not fit the {N_CTX}-token context ({exc})",
                model=MODEL,
                llm_provider=PROVIDER,
            ) from exc
        except BaseException:
            _prefixes.clear()
            raise
        if top_logprobs:
            reply["choices"][0]["logprobs"] = _first_token_logprobs(
                llama, _prefixes.last_logits, top_logprobs
            )
        _prefixes.finish()
        stats = _prefixes.last
        stats.completion_tokens = int((reply.get("usage") or {}).get("completion_tokens", 0))
        stats.started, stats.seconds = start, time.perf_counter() - start
        from ..cache import prompt_title

        last = message_text(messages[-1].get("content")) if messages else ""
        stats.prompt, stats.text = prompt_title(last), last[:2000]
        _calls.append(stats)
        return reply


def executor() -> concurrent.futures.ThreadPoolExecutor:
    # A private single-thread pool: queued calls wait here instead of occupying (and blocking) the
    # event loop's default executor, which other code in the test run may need.
    global _executor
    if _executor is None:
        import concurrent.futures

        _executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ragdive-embedded")
    return _executor
