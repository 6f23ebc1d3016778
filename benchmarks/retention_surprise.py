"""Context retention read from the reply's own token probabilities (a measurement, not a judge
the package ships): how much less likely the conversation makes the reply's least likely
tokens than the stand-alone question alone does.

    python benchmarks/retention_surprise.py            # development and held-out cases

A reply that contradicts what the conversation said ("its 45-second heat-up" after "90
seconds") should be a surprise given the conversation and not without it. Per case: the
log-probability of each reply token given the conversation and the message, less the same
given only the stand-alone question; the score is the mean of the two lowest differences
(lower: less consistent). The embedded model directly (llama.cpp with every position's
logits), about 6 s a case on 2 cores. Printed: AUC and balanced accuracy with a threshold
fitted on the development cases, per held-out document, and on the held-out set.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from judge_cases import HERE, auc, balanced, best_threshold, held_out, load

SYSTEM = "You are a helpful assistant that answers questions about a document."


def _chat(messages: list[dict[str, str]]) -> str:
    """The model's chat template (Qwen's), up to the assistant's reply."""
    shown = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return shown + "<|im_start|>assistant\n"


def _logprobs(llm: Any, prompt: str, reply: str) -> np.ndarray:
    """log P of each token of ``reply`` after ``prompt``."""
    before = llm.tokenize(prompt.encode(), add_bos=False, special=True)
    tokens = llm.tokenize(reply.encode(), add_bos=False, special=False)
    llm.reset()
    llm.eval(before + tokens)
    logits = np.array(llm.scores[len(before) - 1:len(before) + len(tokens) - 1])
    logits -= logits.max(axis=1, keepdims=True)
    return logits[np.arange(len(tokens)), tokens] - np.log(np.exp(logits).sum(axis=1))


def surprise(llm: Any, case: dict[str, Any]) -> float:
    system = [{"role": "system", "content": SYSTEM}]
    conversation = [*system, *(m for h in case["history"] for m in (
        {"role": "user", "content": h["user"]}, {"role": "assistant", "content": h["assistant"]}))]
    given = _logprobs(llm, _chat([*conversation, {"role": "user", "content": case["rag_input"]}]),
                      case["answer"])
    alone = _logprobs(llm, _chat([*system, {"role": "user", "content": case["standalone_question"]}]),
                      case["answer"])
    return float(np.sort(given - alone)[:2].mean())


def main() -> int:
    import llama_cpp

    from pytest_ragdive.llm.embedded.weights import model_path

    llm = llama_cpp.Llama(model_path=str(model_path()), n_ctx=4096, n_threads=2,
                          n_threads_batch=2, logits_all=True, verbose=False)
    dev = load(HERE / "multi_turn.jsonl")
    held = load(HERE / "heldout" / "multi_turn.jsonl")
    scores = {name: [surprise(llm, c) for c in cases] for name, cases in (("dev", dev), ("held", held))}
    labels = {"dev": [c["context_retention"] for c in dev],
              "held": [c["context_retention"] for c in held]}
    fitted = best_threshold(scores["dev"], labels["dev"])
    per_document = held_out(scores["dev"], labels["dev"], [c["document"] for c in dev])
    for name, predicted in (("development, fitted there", [int(s >= fitted) for s in scores["dev"]]),
                            ("development, fitted per held-out document", per_document),
                            ("held-out set, the development threshold",
                             [int(s >= fitted) for s in scores["held"]])):
        key = "held" if name.startswith("held") else "dev"
        print(f"{name}: balanced accuracy {balanced(predicted, labels[key]):.3f}, "
              f"AUC {auc(scores[key], labels[key]):.3f} (threshold {fitted:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
