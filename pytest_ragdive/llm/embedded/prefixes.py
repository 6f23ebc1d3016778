"""Prompt prefixes evaluated once: llama.cpp KV states of earlier prompts, reused bit for bit.

The prompts of one dialogue share long prefixes (ragas' instructions and examples, the
source document, the conversation so far). Evaluating a prefix again costs most of a
call on a CPU; reusing its KV state costs a memory copy.

Reuse must not change a reply. llama.cpp's results for a position depend, in the last
bits, on the batch that position was evaluated in, so a prefix reused from another
prompt could give other logits than the same prompt evaluated from scratch. Here every
prompt is evaluated in chunks of ``chunk`` tokens aligned to absolute positions
(0..63, 64..127, ...), starting from an empty context or from a stored state cut back
to such a boundary. The KV entries of a position then depend only on the tokens up to
that chunk's end, never on what ran before, and a reused prefix is the very prefix a
fresh evaluation would compute.
"""

from __future__ import annotations

import ctypes
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: tokens per aligned chunk: measured on 2 cores, prefill is 67 tok/s at 64 against 70 at 512,
#: while a prefix is reused up to its last multiple of the chunk
CHUNK = 64
#: bytes of KV states kept; Qwen2.5-1.5B holds about 28 KB per token, so 1 GiB is ~37k tokens
BUDGET = 1 << 30


@dataclass
class CallStats:
    """What one call evaluated: prompt tokens, how many came from a stored state, seconds."""

    prompt_tokens: int = 0
    reused_tokens: int = 0
    completion_tokens: int = 0
    started: float = 0.0  # time.perf_counter() when the call got the model
    seconds: float = 0.0
    prefill_seconds: float = 0.0  # of ``seconds``, evaluating the prompt; the rest decodes
    prompt: str = ""  # the title of the last user message (cache.prompt_title)
    text: str = ""  # that message, cut at 2,000 characters


class PrefixStates:
    """Hooks into one ``llama_cpp.Llama``: positions each prompt on the best stored prefix
    and evaluates the rest in aligned chunks; :meth:`finish` stores the prompt's state.

    Not thread safe: the caller serializes calls on the model (as ``embedded`` does).
    """

    def __init__(self, llama: Any, *, chunk: int = CHUNK, budget: int = BUDGET) -> None:
        self.llama, self.chunk, self.budget = llama, chunk, budget
        self.states: OrderedDict[tuple[int, ...], Any] = OrderedDict()  # least recent first
        self.bytes = 0
        self.last = CallStats()
        self.last_logits: np.ndarray | None = None
        self._prompt: list[int] = []
        self._armed = False
        self._generate, self._eval = llama.generate, llama.eval
        llama.generate, llama.eval = self._generate_hook, self._eval_hook

    # --------------------------------------------------------------------------- hooks

    def _generate_hook(self, tokens: Sequence[int], **kwargs: Any) -> Iterator[int]:
        self._position(list(tokens))
        yield from self._generate(tokens, **kwargs)

    def _eval_hook(self, tokens: Sequence[int]) -> None:
        if not self._armed:  # a decoded token: always one at a time, the same in any run
            self._eval(tokens)
            return
        self._armed = False
        start = self.llama.n_tokens
        assert start % self.chunk == 0, "a prompt must start at a chunk boundary"
        tokens = list(tokens)
        began = time.perf_counter()
        for i in range(0, len(tokens), self.chunk):
            self._eval(tokens[i : i + self.chunk])
        self.last.prefill_seconds = time.perf_counter() - began
        self.last_logits = np.ctypeslib.as_array(
            self.llama._ctx.get_logits(), shape=(self.llama.n_vocab(),)
        ).copy()

    # ------------------------------------------------------------------------ positioning

    def _position(self, tokens: list[int]) -> None:
        """Make the context hold the longest reusable prefix of ``tokens``, and arm the
        aligned evaluation of the rest. At least the last chunk is always evaluated."""
        llama = self.llama
        limit = (len(tokens) - 1) // self.chunk * self.chunk
        prompt = np.asarray(tokens, dtype=np.int64)
        live = np.asarray(llama.input_ids[: llama.n_tokens], dtype=np.int64)
        best_key, best = None, self._usable(live, prompt, limit)
        for key in self.states:
            usable = self._usable(np.asarray(key, dtype=np.int64), prompt, limit)
            if usable > best:
                best_key, best = key, usable
        if best_key is not None and not self._load(best_key):
            best = 0
        llama._ctx.kv_cache_seq_rm(-1, best, -1)
        llama.n_tokens = best
        self._prompt, self._armed = tokens, True
        self.last = CallStats(prompt_tokens=len(tokens), reused_tokens=best)

    def _usable(self, stored: np.ndarray, prompt: np.ndarray, limit: int) -> int:
        n = min(len(stored), len(prompt))
        differ = np.flatnonzero(stored[:n] != prompt[:n])
        common = int(differ[0]) if differ.size else n
        return min(common, limit) // self.chunk * self.chunk

    # ----------------------------------------------------------------------- state store

    def finish(self) -> None:
        """After a call: cut the context back to the prompt's last chunk boundary (what
        follows was evaluated in another shape) and keep that prefix's state."""
        llama = self.llama
        self._armed = False
        valid = len(self._prompt) // self.chunk * self.chunk
        llama._ctx.kv_cache_seq_rm(-1, valid, -1)
        llama.n_tokens = valid
        if valid:
            self._save(tuple(int(t) for t in llama.input_ids[:valid]))

    def _save(self, key: tuple[int, ...]) -> None:
        if key in self.states:
            self.states.move_to_end(key)
            return
        for old in [k for k in self.states if len(k) < len(key) and key[: len(k)] == k]:
            self._drop(old)  # a prefix of the new state: the new one serves its prompts too
        import llama_cpp

        ctx = self.llama._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        buffer = (ctypes.c_uint8 * size)()
        if llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0) != size:
            return
        self.states[key] = buffer
        self.bytes += size
        while self.bytes > self.budget and len(self.states) > 1:
            self._drop(next(iter(self.states)))

    def _load(self, key: tuple[int, ...]) -> bool:
        import llama_cpp

        buffer = self.states[key]
        llama = self.llama
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        if not llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(buffer), 0):
            self._drop(key)
            llama.n_tokens = 0
            return False
        llama.input_ids[: len(key)] = key
        llama.n_tokens = len(key)
        self.states.move_to_end(key)
        return True

    def _drop(self, key: tuple[int, ...]) -> None:
        self.bytes -= len(self.states.pop(key))

    def clear(self) -> None:
        """Forget every stored state and empty the context."""
        self.states.clear()
        self.bytes = 0
        self.llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        self.llama.n_tokens = 0

