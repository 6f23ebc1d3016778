"""Sampling under a grammar without filtering the whole vocabulary at every token.

llama-cpp-python puts the grammar in front of its sampler chain, so every generated token
runs the grammar over all ~151k vocabulary entries: on 2 cores that took 30-40 ms a token,
a third of the decode time of a JSON reply. Yet the chain only ever looks at the likeliest
tokens the grammar allows: one at temperature 0, ``top_k`` when sampling. So the grammar
is asked about the likeliest tokens first, and the whole vocabulary is filtered only when
too few of them are allowed or two of them tie. The tokens the chain then works on are the
very ones, in the same order, that it gets after filtering everything, so a reply is the
same bit for bit (``tests/test_embedded.py`` compares both ways on the real model).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

#: likeliest tokens asked about first; when fewer than top_k + 1 of them are allowed, the
#: whole vocabulary is filtered
WINDOW = 256


class GrammarSampler:
    """Hooks into one ``llama_cpp.Llama``: a reply under a grammar with llama-cpp-python's
    plain chain (no penalties, no mirostat, no logits processors) samples here; anything
    else goes to llama-cpp-python unchanged."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self._grammar_sampler: Any = None  # llama.cpp grammar state of the current reply
        self._chain: Any = None  # the chain after the grammar (top-k ... dist), when sampling
        self._grammar: Any = None
        self.enabled = True  # False: every token through llama-cpp-python's chain (tests)
        self.filtered = 0  # tokens for which the whole vocabulary was filtered (benchmarks)
        self._generate, self._sample = llama.generate, llama.sample
        llama.generate, llama.sample = self._generate_hook, self._sample_hook

    def _generate_hook(self, tokens: Sequence[int], **kwargs: Any) -> Iterator[int]:
        self._free()  # a reply starts the grammar from its root and the seed anew
        try:
            yield from self._generate(tokens, **kwargs)
        finally:
            self._free()

    def _sample_hook(self, **kwargs: Any) -> int:
        grammar, temp, idx = kwargs.get("grammar"), kwargs.get("temp", 0.8), kwargs.get("idx")
        plain = (
            kwargs.get("logits_processor") is None and not kwargs.get("mirostat_mode")
            and kwargs.get("repeat_penalty", 1.0) == 1.0
            and not kwargs.get("frequency_penalty") and not kwargs.get("presence_penalty")
        )
        if not (self.enabled and grammar is not None and idx is not None and plain
                and temp >= 0.0):
            return int(self._sample(**kwargs))
        import llama_cpp

        llama = self.llama
        if self._grammar_sampler is None or self._grammar is not grammar:
            self._free()
            self._grammar = grammar
            self._grammar_sampler = llama_cpp.llama_sampler_init_grammar(
                llama._model.vocab, grammar._grammar.encode(), grammar._root.encode()
            )
        logits = np.ctypeslib.as_array(
            llama._ctx.get_logits_ith(idx - llama.n_tokens), shape=(llama.n_vocab(),)
        )
        if temp == 0.0:
            token = self._greedy(logits)
        else:
            token = self._sampled(logits, kwargs)
        llama_cpp.llama_sampler_accept(self._grammar_sampler, token)
        if self._chain is not None:
            llama_cpp.llama_sampler_accept(self._chain.sampler, token)
        return token

    def _greedy(self, logits: np.ndarray) -> int:
        """The first maximum among the allowed tokens (llama.cpp's greedy rule)."""
        token = int(np.argmax(logits))
        if self._filter(np.array([token]), logits)[0]:
            return token
        self.filtered += 1
        allowed = self._filter(None, logits)
        return int(np.argmax(np.where(allowed, logits, -np.inf)))

    def _sampled(self, logits: np.ndarray, kwargs: dict[str, Any]) -> int:
        """What top-k, typical, top-p, min-p, temperature and the seeded draw choose among the
        allowed tokens."""
        top_k = int(kwargs.get("top_k", 40))
        if self._chain is None:
            from llama_cpp import _internals

            chain = _internals.LlamaSampler()
            chain.add_top_k(top_k)
            chain.add_typical(float(kwargs.get("typical_p", 1.0)), 1)
            chain.add_top_p(float(kwargs.get("top_p", 0.95)), 1)
            chain.add_min_p(float(kwargs.get("min_p", 0.05)), 1)
            chain.add_temp(float(kwargs["temp"]))
            chain.add_dist(self.llama._seed)
            self._chain = chain
        ids = None
        if 0 < top_k < WINDOW:
            window = np.argpartition(-logits, WINDOW)[:WINDOW]
            window = window[np.argsort(-logits[window], kind="stable")]
            allowed = window[self._filter(window, logits)]
            best = logits[allowed[: top_k + 1]]
            # the top_k allowed, strictly ordered and above the next allowed token (which is
            # at least as likely as any token outside the window): what filtering everything
            # would keep, in the order it would keep them
            if len(allowed) > top_k and np.all(np.diff(best) < 0):
                ids = allowed[:top_k]
        if ids is None:
            self.filtered += 1
            mask = self._filter(None, logits)
            ids = np.arange(len(logits))
            values = np.where(mask, logits, -np.inf).astype(np.float32)
        else:
            values = logits[ids]
        data = _token_data(ids, values)
        return _apply(self._chain.sampler, data)

    def _filter(self, ids: np.ndarray | None, logits: np.ndarray) -> np.ndarray:
        """Which of ``ids`` (None: every token) the grammar allows next."""
        ids = np.arange(len(logits)) if ids is None else ids
        data = _token_data(ids, logits[ids])
        _apply(self._grammar_sampler, data)
        return np.asarray(np.isfinite(data["logit"]))

    def _free(self) -> None:
        if self._grammar_sampler is not None:
            import llama_cpp

            llama_cpp.llama_sampler_free(self._grammar_sampler)
        if self._chain is not None:
            self._chain.close()
        self._grammar_sampler = self._chain = self._grammar = None


def _token_data(ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """A ``llama_token_data`` array (id, logit, p) of ``ids`` with ``logits``."""
    data = np.zeros(len(ids), dtype=[("id", np.int32), ("logit", np.float32), ("p", np.float32)])
    data["id"] = ids
    data["logit"] = logits
    return data


def _apply(sampler: Any, data: np.ndarray) -> int:
    """Run a llama.cpp sampler over ``data`` in place; the token it selected (-1: none)."""
    import llama_cpp

    candidates = llama_cpp.llama_token_data_array(
        data.ctypes.data_as(llama_cpp.llama_token_data_p), len(data), -1, False
    )
    llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
    return int(candidates.data[candidates.selected].id) if candidates.selected >= 0 else -1
