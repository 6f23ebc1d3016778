"""How well each binary judgement of pytest-ragdive agrees with labelled cases.

    python benchmarks/judges.py                      # the embedded model, every judgement
    python benchmarks/judges.py --model openai/gpt-4o-mini --only correctness
    python benchmarks/judges.py --only validator              # every validator check

The cases are in benchmarks/judges/ (see its README): balanced, written from documents
of several kinds. Each case goes through the same prompt and client as a real run, so
the numbers are those of the package's judges. Prints per judgement the balanced
accuracy, the confusion matrix, the AUC of the judge's probability and seconds per case.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_ragdive.engine import validator
from pytest_ragdive.engine.dialogue import run_blocking
from pytest_ragdive.engine.evaluator import JUDGES, yes_probability
from pytest_ragdive.engine.models import Document, GeneratedTurn, RagAnswer, Turn
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient

HERE = Path(__file__).parent / "judges"
EMBEDDED = "embedded/qwen2.5-coder-1.5b"


def load_cases(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HERE / f"{name}.jsonl").read_text().splitlines() if line]


def documents(folder: Path) -> dict[str, Document]:
    return {p.stem: Document(id=p.stem, text=p.read_text()) for p in sorted(folder.glob("*.md"))}


def turns_of(case: dict[str, Any]) -> tuple[Turn, list[Turn]]:
    """The judged turn and the turns before it, as a dialogue would hold them."""
    earlier = [
        Turn(index=i, generated=GeneratedTurn(rag_input=h["user"], standalone_question=h["user"],
                                              ground_truth="", question_type="follow_up"),
             answer=RagAnswer(answer=h["assistant"]))
        for i, h in enumerate(case.get("history", []), 1)
    ]
    turn = Turn(
        index=len(earlier) + 1,
        generated=GeneratedTurn(rag_input=case["rag_input"],
                                standalone_question=case["standalone_question"],
                                ground_truth=case["ground_truth"],
                                question_type="follow_up" if earlier else "initial"),
        answer=RagAnswer(answer=case["answer"]),
    )
    return turn, earlier


def auc(scores: list[float], labels: list[int]) -> float:
    """Probability that a random positive case scores above a random negative one."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    pairs = [(p > n) + 0.5 * (p == n) for p in pos for n in neg]
    return sum(pairs) / len(pairs) if pairs else float("nan")


def report(name: str, predicted: list[int], labels: list[int], scores: list[float],
           seconds: float) -> dict[str, Any]:
    tp = sum(p and y for p, y in zip(predicted, labels))  # "positive": a score of 1
    tn = sum(not p and not y for p, y in zip(predicted, labels))
    fp = sum(p and not y for p, y in zip(predicted, labels))
    fn = sum(not p and y for p, y in zip(predicted, labels))
    balanced = ((tp / (tp + fn) if tp + fn else 0) + (tn / (tn + fp) if tn + fp else 0)) / 2
    row = {"judgement": name, "cases": len(labels), "balanced_accuracy": round(balanced, 3),
           "tp": tp, "fn": fn, "tn": tn, "fp": fp, "auc": round(auc(scores, labels), 3),
           "s_per_case": round(seconds / max(1, len(labels)), 2)}
    print(f"| {name} | {len(labels)} | {row['balanced_accuracy']:.3f} | {tp} / {fn} | {tn} / {fp} "
          f"| {row['auc']:.3f} | {row['s_per_case']:.2f} |", flush=True)
    return row


def balanced(predicted: list[int], labels: list[int]) -> float:
    pos = [p for p, y in zip(predicted, labels) if y]
    neg = [1 - p for p, y in zip(predicted, labels) if not y]
    return (sum(pos) / max(1, len(pos)) + sum(neg) / max(1, len(neg))) / 2


def best_threshold(p_yes: list[float], labels: list[int], yes_scores_one: bool) -> float:
    """The P(yes) threshold with the best balanced accuracy on these cases."""
    candidates = sorted({0.5, *(round(p, 4) for p in p_yes)})
    return max(candidates, key=lambda t: (
        balanced([int((p >= t) == yes_scores_one) for p in p_yes], labels), -abs(t - 0.5)))


def cross_validated(p_yes: list[float], labels: list[int], groups: list[str],
                    yes_scores_one: bool) -> list[int]:
    """Predictions with a threshold fitted on the other documents' cases only."""
    predicted = []
    for p, group in zip(p_yes, groups):
        rest = [(q, y) for q, y, g in zip(p_yes, labels, groups) if g != group]
        t = best_threshold([q for q, _ in rest], [y for _, y in rest], yes_scores_one)
        predicted.append(int((p >= t) == yes_scores_one))
    return predicted


async def judge_metric(client: LLMClient, model: str, metric: str) -> list[dict[str, Any]]:
    yes_scores_one, threshold = JUDGES[metric].yes_scores_one, JUDGES[metric].threshold
    cases = load_cases(metric)
    probabilities = []
    start = time.perf_counter()
    for case in cases:
        turn, earlier = turns_of(case)
        probabilities.append(await yes_probability(client, model, metric, turn, earlier))
    seconds = time.perf_counter() - start
    labels = [int(case["label"]) for case in cases]
    scores = [p if yes_scores_one else 1 - p for p in probabilities]  # P(score 1)
    rows = [report(f"{metric} (threshold {threshold})",
                   [int((p >= threshold) == yes_scores_one) for p in probabilities],
                   labels, scores, seconds)]
    fitted = best_threshold(probabilities, labels, yes_scores_one)
    groups = [case["document"] for case in cases]
    rows.append(report(f"{metric} (threshold fitted per held-out document; on all: {fitted:.3f})",
                       cross_validated(probabilities, labels, groups, yes_scores_one),
                       labels, scores, seconds))
    return rows


async def validator_checks(
    client: LLMClient, model: str, only: list[str] | None
) -> list[dict[str, Any]]:
    """Every check of the validator on its labelled cases: the exact ones by code, the
    others by the validator model (its P(yes) against the validator's threshold)."""
    docs = documents(HERE / "validator" / "documents")
    cases = [json.loads(line) for line in
             (HERE / "validator" / "cases.jsonl").read_text().splitlines() if line]
    rows = []
    for check in dict.fromkeys(case["check"] for case in cases):
        if only and f"validator.{check}" not in only:
            continue
        chosen = [case for case in cases if case["check"] == check]
        predicted, scores = [], []
        start = time.perf_counter()
        for case in chosen:
            _, earlier = turns_of({**case, **case["candidate"], "answer": ""})
            candidate = GeneratedTurn(**case["candidate"])
            if check in validator.QUESTIONS:
                prompt = validator.check_prompt(check, candidate, docs[case["document"]], earlier)
                p_yes = await client.yes_probability(model, [{"role": "user", "content": prompt}])
                passed = p_yes >= validator.THRESHOLD
            else:
                verdict = validator.exact_verdict(candidate, docs[case["document"]], earlier)
                passed = validator.CATEGORIES[check] not in verdict.categories
                p_yes = float(passed)
            predicted.append(int(passed))
            scores.append(p_yes)
        labels = [int(case["label"]) for case in chosen]
        kind = "model" if check in validator.QUESTIONS else "exact"
        rows.append(report(f"validator.{check} ({kind})", predicted, labels, scores,
                           time.perf_counter() - start))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=EMBEDDED,
                        help="litellm model name (default: %(default)s)")
    parser.add_argument("--only", action="append", help="a judgement to run (repeatable)")
    parser.add_argument("--cache-dir", help="reuse recorded answers (default: a new temp folder)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    chosen = [m for m in JUDGES if not args.only or m in args.only]
    client = LLMClient(ResponseCache(Path(args.cache_dir or tempfile.mkdtemp()), "new"))
    print(f"model {args.model}\n")
    print("| judgement | cases | balanced accuracy | TP / FN | TN / FP | AUC | s per case |")
    print("|---|---|---|---|---|---|---|")

    async def run() -> list[dict[str, Any]]:
        rows = [row for metric in chosen for row in await judge_metric(client, args.model, metric)]
        validator_only = [o for o in args.only or [] if o.startswith("validator")]
        if not args.only or validator_only:
            rows += await validator_checks(client, args.model,
                                           [o for o in validator_only if o != "validator"])
        return rows

    rows = run_blocking(run())
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
