"""Greedy decoding under a grammar, checking the likeliest token first.

llama-cpp-python puts the grammar in front of the sampler chain, so every generated token
runs the grammar over all ~151k vocabulary entries: on 2 cores that took 30-40 ms a token,
a third of the decode time of a JSON reply. At temperature 0 the reply is the likeliest
token the grammar allows, so it is enough to ask the grammar about the likeliest token
first and to filter the whole vocabulary only when it is refused. The token chosen is the
one the chain chooses (the first maximum, among the allowed tokens), so the reply is the
same bit for bit; sampling at a temperature above 0 keeps llama-cpp-python's chain.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np


class GreedyGrammar:
    """Hooks into one ``llama_cpp.Llama``: greedy calls with a grammar sample through
    :meth:`_sample_hook`; everything else goes to llama-cpp-python unchanged."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self._grammar_sampler: Any = None  # llama.cpp grammar state of the current reply
        self._grammar: Any = None
        self.enabled = True  # False: every token through llama-cpp-python's chain (tests)
        self.refused = 0  # tokens for which the likeliest was refused (benchmarks)
        self._generate, self._sample = llama.generate, llama.sample
        llama.generate, llama.sample = self._generate_hook, self._sample_hook

    def _generate_hook(self, tokens: Sequence[int], **kwargs: Any) -> Iterator[int]:
        self._free()  # a reply starts the grammar from its root
        try:
            yield from self._generate(tokens, **kwargs)
        finally:
            self._free()

    def _sample_hook(self, *, grammar: Any = None, temp: float = 0.8, idx: int | None = None,
                     **kwargs: Any) -> int:
        if not self.enabled or grammar is None or temp != 0.0 or idx is None or kwargs.get("logits_processor"):
            return int(self._sample(grammar=grammar, temp=temp, idx=idx, **kwargs))
        import llama_cpp

        llama = self.llama
        if self._grammar_sampler is None or self._grammar is not grammar:
            self._free()
            self._grammar = grammar
            self._grammar_sampler = llama_cpp.llama_sampler_init_grammar(
                llama._model.vocab, grammar._grammar.encode(), grammar._root.encode()
            )
        n_vocab = llama.n_vocab()
        logits = np.ctypeslib.as_array(
            llama._ctx.get_logits_ith(idx - llama.n_tokens), shape=(n_vocab,)
        )
        token = int(np.argmax(logits))
        if not self._allows(token, float(logits[token])):
            self.refused += 1
            token = self._best_allowed(logits)
        llama_cpp.llama_sampler_accept(self._grammar_sampler, token)
        return token

    def _allows(self, token: int, logit: float) -> bool:
        import llama_cpp

        one = (llama_cpp.llama_token_data * 1)(llama_cpp.llama_token_data(token, logit, 0.0))
        candidates = llama_cpp.llama_token_data_array(one, 1, -1, False)
        llama_cpp.llama_sampler_apply(self._grammar_sampler, ctypes.byref(candidates))
        return not math.isinf(one[0].logit)

    def _best_allowed(self, logits: np.ndarray) -> int:
        """The first maximum among the tokens the grammar allows (llama.cpp's greedy rule)."""
        import llama_cpp

        data = np.zeros(len(logits), dtype=[("id", np.int32), ("logit", np.float32),
                                            ("p", np.float32)])
        data["id"] = np.arange(len(logits), dtype=np.int32)
        data["logit"] = logits
        candidates = llama_cpp.llama_token_data_array(
            data.ctypes.data_as(llama_cpp.llama_token_data_p), len(data), -1, False
        )
        llama_cpp.llama_sampler_apply(self._grammar_sampler, ctypes.byref(candidates))
        allowed = data["logit"][: candidates.size]
        return int(data["id"][int(np.argmax(allowed))])

    def _free(self) -> None:
        if self._grammar_sampler is not None:
            import llama_cpp

            llama_cpp.llama_sampler_free(self._grammar_sampler)
        self._grammar_sampler, self._grammar = None, None
