"""How well each judgement of pytest-ragdive agrees with labelled cases.

    python benchmarks/judges.py                      # the embedded model, every judgement
    python benchmarks/judges.py --model openai/gpt-4o-mini --only correctness
    python benchmarks/judges.py --only multi_turn --only ragas --only validator
    python benchmarks/judges.py --only premise       # premise_corrected (role mistaken)
    python benchmarks/judges.py --only clarified     # clarified (role vague)

The cases are in benchmarks/judges/ (see its README): balanced, written from documents of
several kinds. Each goes through the package's own prompts and client, so the numbers are
those of the package's judges. Printed per judgement: balanced accuracy at the package's
threshold, on the development cases, with a threshold fitted on the other documents' (or
sources') cases, and on the held-out set; the confusion matrix; the AUC; seconds per case;
for the two multi-turn judges also how often their verdicts disagree, and what the negated
question of a debiased judge buys.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from judge_cases import HERE, best_threshold, documents, held_out, load, pearson, row, turns_of

from pytest_ragdive.engine import validator
from pytest_ragdive.engine.dialogue import run_blocking
from pytest_ragdive.engine.models import GeneratedTurn, RagAnswer, Turn
from pytest_ragdive.engine.questions import EXACT_YES, JUDGES, combine, judge_prompts
from pytest_ragdive.engine.ragas_metrics import RagasMetrics
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.model import Model

EMBEDDED = "embedded/qwen2.5-coder-1.5b"
MULTI_TURN = ("forgetfulness", "context_retention")
SECTIONS = ("correctness", "multi_turn", "subject", "ragas", "validator", "premise",
            "clarified")
#: the cases' documents, whose headings say what a turn asks about (evaluator.subject_of)
SOURCES = documents(HERE / "documents", HERE / "heldout" / "documents",
                    HERE / "subject" / "documents")


async def answers(client: LLMClient, model: str, metric: str, cases: list[dict[str, Any]],
                  told: bool = True) -> tuple[list[list[float]], float]:
    """P(yes) of each of the judge's questions (the question, and its negation if it has
    one) per case, and the seconds they took; ``told``: the judge is told what the case's
    document is about (its heading), as the package tells it."""
    start, out = time.perf_counter(), []
    for case in cases:
        turn, earlier = turns_of(case)
        source = SOURCES.get(case.get("document", "")) if told else None
        subject = source.subject if source else None
        out.append([await client.yes_probability(model, [{"role": "user", "content": prompt}])
                    for prompt in judge_prompts(metric, turn, earlier, subject)])
    return out, time.perf_counter() - start


def score_one(metric: str, p_yes: float) -> float:
    """P(score 1) from the judge's P(yes)."""
    return p_yes if JUDGES[metric].yes_scores_one else 1 - p_yes


def verdicts(metric: str, probabilities: list[float]) -> list[int]:
    judge = JUDGES[metric]
    return [int((p >= judge.threshold) == judge.yes_scores_one) for p in probabilities]


def report_judge(metric: str, label: str, dev: list[dict[str, Any]], dev_answers: list[list[float]],
                 seconds: float, heldout: list[dict[str, Any]] | None = None,
                 heldout_answers: list[list[float]] | None = None,
                 group: str = "document") -> list[dict[str, Any]]:
    threshold = JUDGES[metric].threshold
    p_yes = [combine(metric, a) for a in dev_answers]
    labels = [int(c[label]) for c in dev]
    scores = [score_one(metric, p) for p in p_yes]
    rows = [row(f"{metric}, threshold {threshold} (the package's)", verdicts(metric, p_yes),
                labels, scores, seconds),
            row(f"{metric}, threshold fitted per held-out {group}",
                held_out(scores, labels, [c[group] for c in dev]), labels, scores)]
    if JUDGES[metric].per_part:  # what the calls about the key's parts buy
        whole = [score_one(metric, a[0]) for a in dev_answers]
        rows.append(row(f"{metric}, the whole key alone (no parts), fitted per held-out {group}",
                        held_out(whole, labels, [c[group] for c in dev]), labels, whole))
    elif len(dev_answers[0]) == 2:  # what the second call (negation or answer key) buys
        second = "answer key" if JUDGES[metric].against_key else "negation"
        asked = [score_one(metric, a[0]) for a in dev_answers]
        rows.append(row(f"{metric}, the question alone (no {second}), fitted per held-out {group}",
                        held_out(asked, labels, [c[group] for c in dev]), labels, asked))
    if heldout is not None and heldout_answers is not None:
        p_held = [combine(metric, a) for a in heldout_answers]
        rows.append(row(f"{metric}, threshold {threshold}, **held-out set**",
                        verdicts(metric, p_held), [int(c[label]) for c in heldout],
                        [score_one(metric, p) for p in p_held]))
    return rows


def agreement(name: str, cases: list[dict[str, Any]],
              by_metric: dict[str, list[list[float]]]) -> dict[str, Any]:
    """How often the two multi-turn verdicts disagree ("kept the thread" against
    "consistent"), against how often the labels do, and the correlation of the scores."""
    def p_yes(metric: str) -> list[float]:
        return [combine(metric, a) for a in by_metric[metric]]

    forgot = verdicts("forgetfulness", p_yes("forgetfulness"))
    kept = [1 - v for v in forgot]
    consistent = verdicts("context_retention", p_yes("context_retention"))
    labelled = [(1 - c["forgetfulness"], c["context_retention"]) for c in cases]
    f_scores = [1 - score_one("forgetfulness", p) for p in p_yes("forgetfulness")]
    r_scores = [score_one("context_retention", p) for p in p_yes("context_retention")]
    figures = {
        "set": name, "cases": len(cases),
        "verdicts_disagree": sum(k != c for k, c in zip(kept, consistent)),
        "labels_disagree": sum(k != c for k, c in labelled),
        "both_right_where_labels_disagree": sum(
            (k, c) == lab for k, c, lab in zip(kept, consistent, labelled) if lab[0] != lab[1]),
        "verdict_correlation": round(pearson(kept, consistent), 3),
        "score_correlation": round(pearson(f_scores, r_scores), 3),
    }
    print(f"| {name} | {len(cases)} | {figures['verdicts_disagree']} "
          f"| {figures['labels_disagree']} "
          f"| {figures['both_right_where_labels_disagree']} | {figures['verdict_correlation']:.3f} "
          f"| {figures['score_correlation']:.3f} |", flush=True)
    return figures


async def multi_turn(client: LLMClient, model: str) -> list[dict[str, Any]]:
    dev = load(HERE / "multi_turn.jsonl")
    heldout = load(HERE / "heldout" / "multi_turn.jsonl")
    rows, got = [], {}
    for metric in MULTI_TURN:
        dev_answers, seconds = await answers(client, model, metric, dev)
        held_answers, _ = await answers(client, model, metric, heldout)
        got[metric] = (dev_answers, held_answers)
        rows += report_judge(metric, metric, dev, dev_answers, seconds, heldout, held_answers)
    print("\n| set | cases | verdicts disagree | labels disagree | both verdicts right where the "
          "labels disagree | correlation of verdicts | correlation of scores |\n"
          "|---|---|---|---|---|---|---|")
    for name, cases, index in (("development", dev, 0), ("held-out", heldout, 1)):
        rows.append(agreement(name, cases, {m: got[m][index] for m in MULTI_TURN}))
    return rows


async def subject(client: LLMClient, model: str) -> list[dict[str, Any]]:
    """forgetfulness where the stand-alone question does not say which of two similar
    services it means ("Who operates the line?") and the reply answers about the other one:
    told the document's heading, as the package asks it, and not told."""
    cases = load(HERE / "subject" / "forgetfulness.jsonl")
    labels = [int(c["forgetfulness"]) for c in cases]
    rows = []
    for told in (True, False):
        got, seconds = await answers(client, model, "forgetfulness", cases, told)
        p_yes = [combine("forgetfulness", a) for a in got]
        rows.append(row(f"forgetfulness at {JUDGES['forgetfulness'].threshold}, "
                        f"{'told' if told else 'not told'} the document's subject",
                        verdicts("forgetfulness", p_yes), labels,
                        [score_one("forgetfulness", p) for p in p_yes], seconds))
    return rows


async def correctness(client: LLMClient, model: str) -> list[dict[str, Any]]:
    """Correctness over every source of cases, and held out by source."""
    cases = [{"source": "short", **c} for c in load(HERE / "correctness.jsonl")]
    cases += load(HERE / "correctness_sources.jsonl")
    got, seconds = await answers(client, model, "correctness", cases)
    rows = report_judge("correctness", "label", cases, got, seconds, group="source")
    p_yes = [combine("correctness", a) for a in got]
    labels = [int(c["label"]) for c in cases]
    sources = [c["source"] for c in cases]
    fitted = held_out(p_yes, labels, sources)  # each source with a threshold from the others
    for source in dict.fromkeys(sources):
        chosen = [i for i, s in enumerate(sources) if s == source]
        mine = [p_yes[i] for i in chosen], [labels[i] for i in chosen]
        rows.append(row(f"correctness, source `{source}`, the package's threshold",
                        verdicts("correctness", mine[0]), mine[1], mine[0]))
        rows.append(row(f"correctness, source `{source}`, threshold fitted on the other sources",
                        [fitted[i] for i in chosen], mine[1], mine[0]))
    return rows


async def ragas_metrics(client: LLMClient, model: str) -> list[dict[str, Any]]:
    """The three ragas metrics on statement-level and per-context cases; a score is
    taken as 1 when it is 1: every claim supported, the context useful, every statement
    of the reference found (a label-0 case has exactly one claim, context or statement
    that fails)."""
    metrics = RagasMetrics(client, Model(model))
    rows = []
    for metric in ("faithfulness", "context_precision", "context_recall"):
        cases = load(HERE / "ragas" / f"{metric}.jsonl")
        start, scores = time.perf_counter(), []
        for case in cases:
            turn = Turn(index=1, generated=GeneratedTurn(
                rag_input=case["question"], standalone_question=case["question"],
                ground_truth=case.get("reference", ""), question_type="initial"),
                answer=RagAnswer(answer=case.get("response", ""), contexts=case["contexts"]))
            judgement = await metrics.job(metric, turn)()
            scores.append(0.5 if judgement.score is None else judgement.score)
        labels = [int(c["label"]) for c in cases]
        rows.append(row(f"{metric} (ragas), score 1", [int(s >= 0.999) for s in scores],
                        labels, scores, time.perf_counter() - start))
    return rows


async def validator_checks(client: LLMClient, model: str) -> list[dict[str, Any]]:
    """Every check of the validator on its labelled cases: the exact ones by code, the
    others by the validator model (its P(yes) against the validator's threshold)."""
    docs = documents(HERE / "validator" / "documents")
    cases = load(HERE / "validator" / "cases.jsonl")
    rows = []
    for check in dict.fromkeys(case["check"] for case in cases):
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
        rows.append(row(f"validator.{check} ({kind})", predicted, labels, scores,
                        time.perf_counter() - start))
    return rows


async def premise(client: LLMClient, model: str) -> list[dict[str, Any]]:
    """premise_corrected on its cases, with a threshold fitted per held-out document."""
    cases = load(HERE / "premise.jsonl")
    got, seconds = await answers(client, model, "premise_corrected", cases)
    return report_judge("premise_corrected", "label", cases, got, seconds)


#: clarified's other wording, measured on the same cases: one question for both good
#: answers, read against the answer key (benchmarks/README.md has the first run's others)
CLARIFIED_TRIED = {
    "give each or ask": "Does the reply give the answer for each case, or ask which one they mean?",
}


def fitted_on_development(name: str, dev: list[dict[str, Any]], dev_p: list[float],
                          held: list[dict[str, Any]], held_p: list[float]) -> list[dict[str, Any]]:
    """A judgement's rows with its threshold fitted on the development documents: there,
    per held-out development document, and on the held-out documents."""
    dev_labels = [int(c["label"]) for c in dev]
    held_labels = [int(c["label"]) for c in held]
    fitted = best_threshold(dev_p, dev_labels)
    return [
        row(f"{name}, at {fitted:.4g}, fitted on the development documents",
            [int(p >= fitted) for p in dev_p], dev_labels, dev_p),
        row(f"{name}, fitted per held-out development document",
            held_out(dev_p, dev_labels, [c["document"] for c in dev]), dev_labels, dev_p),
        row(f"{name}, at {fitted:.4g}, **held-out documents**",
            [int(p >= fitted) for p in held_p], held_labels, held_p),
    ]


async def clarified(client: LLMClient, model: str) -> list[dict[str, Any]]:
    """clarified on its development documents and its held-out ones, as the package scores
    it (a reply that gives every reading's answer is a yes by code, another is judged) and
    in the other wording tried, each judge's threshold fitted on the development documents;
    the code alone, and with a question mark for a question, for comparison."""
    cases = load(HERE / "clarified.jsonl")
    split = {"dev": [c for c in cases if c["split"] == "development"],
             "held": [c for c in cases if c["split"] == "held-out"]}
    check = EXACT_YES["clarified"][0]
    exact = {k: [float(check(turns_of(c)[0])) for c in chosen] for k, chosen in split.items()}
    package, rows = JUDGES["clarified"], []
    tried = {"ask which one, and its negation (the package's)": package,
             **{name: replace(package, question=question, negation=None, against_key=True)
                for name, question in CLARIFIED_TRIED.items()}}
    for name, judge in tried.items():
        JUDGES["clarified"] = judge
        try:
            got = {k: (await answers(client, model, "clarified", chosen))[0]
                   for k, chosen in split.items()}
        finally:
            JUDGES["clarified"] = package
        second = "the answer key" if judge.against_key else "the negation"
        for how, read in ((f"with {second}", lambda a: combine("clarified", a)),
                          ("the question alone", lambda a: a[0])):
            p = {k: [max(e, read(a)) for e, a in zip(exact[k], got[k])] for k in split}
            if judge is package and how.startswith("with"):
                rows += [row(f"clarified as the package scores it, at {package.threshold} "
                             f"(the package's), {where} documents",
                             [int(x >= package.threshold) for x in p[k]],
                             [int(c["label"]) for c in split[k]], p[k])
                         for k, where in (("dev", "development"), ("held", "**held-out**"))]
            rows += fitted_on_development(f"clarified, exact or {name}, {how}", split["dev"],
                                          p["dev"], split["held"], p["held"])
    for k, where in (("dev", "development"), ("held", "held-out")):
        labels = [int(c["label"]) for c in split[k]]
        asks = [float("?" in c["answer"]) for c in split[k]]
        rows.append(row(f"clarified, exact alone: the reply gives every reading's answer, "
                        f"{where} documents", [int(e) for e in exact[k]], labels, exact[k]))
        rows.append(row(f"clarified, exact or the reply holds a question mark (code, for "
                        f"comparison), {where} documents",
                        [int(max(e, a)) for e, a in zip(exact[k], asks)], labels,
                        [max(e, a) for e, a in zip(exact[k], asks)]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=EMBEDDED,
                        help="litellm model name (default: %(default)s)")
    parser.add_argument("--only", action="append", choices=SECTIONS,
                        help="a section to run (repeatable; default: all)")
    parser.add_argument("--cache-dir", help="reuse recorded answers (default: a new temp folder)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a model call may take (default: %(default)s; a loaded "
                             "machine needs more)")
    args = parser.parse_args(argv)
    client = LLMClient(ResponseCache(Path(args.cache_dir or tempfile.mkdtemp()), "new"),
                       timeout=args.timeout)
    runs = {"correctness": correctness, "multi_turn": multi_turn, "subject": subject,
            "ragas": ragas_metrics,
            "validator": validator_checks, "premise": premise, "clarified": clarified}
    print(f"model {args.model}")

    async def run() -> list[dict[str, Any]]:
        rows = []
        for section in args.only or SECTIONS:
            print("\n| judgement | cases | balanced accuracy | TP / FN | TN / FP | AUC "
                  "| s per case |\n|---|---|---|---|---|---|---|")
            rows += await runs[section](client, args.model)
        return rows

    rows = run_blocking(run())
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
