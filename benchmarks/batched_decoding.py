"""Decoding throughput of the embedded model with 1, 2 and 4 sequences in one llama.cpp batch.

    python benchmarks/batched_decoding.py                # k = 1, 2, 4 sequences, 64 steps each
    python benchmarks/batched_decoding.py --tiny         # smoke test: k = 1, 2; 4 steps

Issue #52: decoding on a CPU is memory-bound (each step reads all the weights), so k sequences
decoded in one batch should cost little more than one. The model is loaded once with
``n_seq_max`` 4 (llama.cpp's default KV layout: one stream per sequence). For each k the KV cache
is cleared; k copies of one prompt (the start of the example's bike-share page and a question, in
Qwen's chat format, about 270 tokens; identical tokens, last one included, under seq_id 0 … k-1)
are prefilled in one ``llama_decode`` call; then one untimed step and ``--tokens`` timed greedy
steps, each one batch of one token per sequence (end of turn does not stop them). Prefill and
decode (argmax included) are timed apart. Identical prompts must give identical greedy tokens in every sequence, which proves
the batch decodes k sequences: asserted. Uses llama-cpp-python's low-level API, as ``Llama()``
takes no ``n_seq_max``.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import logging
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import llama_cpp
import numpy as np

from pytest_ragdive.llm.embedded.runtime import _threads
from pytest_ragdive.llm.embedded.weights import MODEL, MODEL_FILE, model_path

PAGE = Path(__file__).resolve().parents[1] / "example_project" / "kb" / "bike-share.md"
QUESTION = "How much does a library card holder pay for a year of CityCycle, and what is included?"
Entry = tuple[int, int, int, bool]  # token, position, seq_id, whether its logits are wanted
Ctx: TypeAlias = llama_cpp.llama_context_p
Batch: TypeAlias = llama_cpp.llama_batch


@dataclass
class Run:
    prefill_s: float
    decode_s: float
    tokens: list[list[int]]  # greedy tokens per sequence


def prompt_text() -> str:
    page = "\n\n".join(PAGE.read_text(encoding="utf-8").split("\n\n")[:3])
    return (
        "<|im_start|>system\nAnswer from the document only.<|im_end|>\n"
        f"<|im_start|>user\n{page}\n\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
    )


def tokenize(vocab: llama_cpp.llama_vocab_p, text: str) -> list[int]:
    data = text.encode("utf-8")
    buf = (llama_cpp.llama_token * (len(data) + 8))()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, len(buf), True, True)
    assert n >= 0, "tokenizer buffer too small"
    return list(buf[:n])


def text_of(vocab: llama_cpp.llama_vocab_p, tokens: list[int]) -> str:
    buf, pieces = ctypes.create_string_buffer(256), []
    for token in tokens:
        n = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, True)
        pieces.append(buf.raw[:n])
    return b"".join(pieces).decode("utf-8", errors="replace")


def decode(ctx: Ctx, batch: Batch, entries: list[Entry]) -> None:
    for i, (token, pos, seq, logits) in enumerate(entries):
        batch.token[i], batch.n_seq_id[i] = token, 1
        batch.pos[i] = pos  # type: ignore[call-overload]  # the binding types pos as nested
        batch.seq_id[i][0], batch.logits[i] = seq, logits
    batch.n_tokens = len(entries)
    if (rc := llama_cpp.llama_decode(ctx, batch)) != 0:
        raise RuntimeError(f"llama_decode returned {rc} for {len(entries)} tokens")
    llama_cpp.llama_synchronize(ctx)


def argmax(ctx: Ctx, i: int, n_vocab: int) -> int:
    return int(np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, i), (n_vocab,)).argmax())


def run(ctx: Ctx, batch: Batch, prompt: list[int], k: int, steps: int, n_vocab: int) -> Run:
    llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
    last = len(prompt) - 1
    start = time.perf_counter()
    decode(ctx, batch, [(t, p, s, p == last) for s in range(k) for p, t in enumerate(prompt)])
    tokens = [[argmax(ctx, s * len(prompt) + last, n_vocab)] for s in range(k)]
    prefill_s = time.perf_counter() - start
    for step in range(steps + 1):  # step 0, untimed, sets llama.cpp up for batches of k tokens
        if step == 1:
            start = time.perf_counter()
        decode(ctx, batch, [(tokens[s][-1], len(prompt) + step, s, True) for s in range(k)])
        for s in range(k):
            tokens[s].append(argmax(ctx, s, n_vocab))
    decode_s = time.perf_counter() - start
    assert all(t == tokens[0] for t in tokens), f"k={k}: the sequences diverged: {tokens}"
    return Run(prefill_s, decode_s, tokens)


def machine() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((x.split(":", 1)[1].strip() for x in lines if x.startswith("model name")), "?")
    return f"{os.cpu_count()} cores, {platform.machine()}, {cpu}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64, help="decode steps per run (default 64)")
    parser.add_argument("--threads", type=int, default=_threads(), help="default: the runtime's")
    parser.add_argument("--tiny", action="store_true", help="smoke test: k = 1, 2; 4 tokens")
    args = parser.parse_args()
    ks, steps = ((1, 2), 4) if args.tiny else ((1, 2, 4), args.tokens)

    # silence llama.cpp's log (its failures are return codes, checked)
    logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL + 1)
    llama_cpp.llama_backend_init()
    path = str(model_path()).encode()
    model = llama_cpp.llama_model_load_from_file(path, llama_cpp.llama_model_default_params())
    assert model, f"cannot load {MODEL_FILE}"
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    prompt = tokenize(vocab, prompt_text())
    params = llama_cpp.llama_context_default_params()
    params.n_seq_max = max(ks)
    params.n_ctx = max(ks) * 256 * -(-(len(prompt) + steps + 2) // 256)  # n_ctx / n_seq_max each
    params.n_batch = max(ks) * len(prompt)  # one prefill call holds every copy of the prompt
    params.n_threads = params.n_threads_batch = args.threads
    ctx = llama_cpp.llama_init_from_model(model, params)
    assert ctx, "llama_init_from_model failed"
    batch = llama_cpp.llama_batch_init(params.n_batch, 0, 1)
    runs = {k: run(ctx, batch, prompt, k, steps, n_vocab) for k in ks}
    reply = text_of(vocab, runs[1].tokens[0])  # batch, context and model are freed at exit

    date = datetime.datetime.now(datetime.UTC).strftime("%F")
    command = " ".join(["python", "benchmarks/batched_decoding.py", *sys.argv[1:]])
    print(
        f"`{command}` · {date} · {machine()} · {MODEL} ({MODEL_FILE}) · {args.threads} threads"
        f" · prompt {len(prompt)} tokens, {steps} decode steps"
        f" · llama-cpp-python {llama_cpp.__version__}\n"
    )
    print("| sequences | prefill tok/s | decode tok/s (all sequences) | per sequence | vs 1 |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    base = steps / runs[1].decode_s
    for k, r in runs.items():
        total = k * steps / r.decode_s
        prefill = k * len(prompt) / r.prefill_s
        print(f"| {k} | {prefill:.1f} | {total:.1f} | {total / k:.1f} | {total / base:.2f}× |")
    same = ", ".join(f"k={k}: {r.tokens[0] == runs[1].tokens[0]}" for k, r in runs.items())
    print(
        "\nper sequence = decode steps/s. Greedy tokens identical in every sequence of every batch"
        f" (asserted). Same tokens as k=1: {same}. Reply begins: {reply!r}"
    )


if __name__ == "__main__":
    main()
