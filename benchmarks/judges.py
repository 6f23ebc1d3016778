"""How well each judgement of pytest-ragdive agrees with labelled cases.

    python benchmarks/judges.py                      # the embedded model, every judgement
    python benchmarks/judges.py --model openai/gpt-4o-mini --only correctness
    python benchmarks/judges.py --only multi_turn --only ragas --only validator
    python benchmarks/judges.py --only premise       # premise_corrected (role mistaken)
    python benchmarks/judges.py --only clarified     # clarified (role vague)

The cases ship with the package (pytest_ragdive/judge_cases, see its README): balanced,
written from documents of several kinds. Each is scored by the package's calibration core
(``pytest_ragdive.calibration.measure``, what ``python -m pytest_ragdive calibrate`` runs),
through the package's own prompts and client, so the numbers are those of the package's
judges. Printed per judgement: balanced accuracy at the threshold of the model's judge
profile (the shipped one for the embedded model, else the plain reading), on the
development cases, with a threshold fitted on the other documents' (or sources') cases, and
on the held-out set; the confusion matrix; the AUC; seconds per case; for the two multi-turn
judges also how often their verdicts disagree, and what the second call of a judge buys.
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

import judge_reading as reading
from judge_cases import HERE, best_threshold, documents, held_out, load, row
from judge_reading import (
    agreement,
    answers,
    labels,
    report_judge,
    score_one,
    split,
    threshold,
    verdicts,
)

from pytest_ragdive.calibration import measure as calibration
from pytest_ragdive.calibration.cases import (
    Case,
    Exchange,
    earlier_turns,
    shipped,
    shipped_file,
)
from pytest_ragdive.engine.base.models import DocumentGroup, GeneratedTurn
from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.engine.evaluation.binary import BINARY_JUDGES, combine, exact_yes
from pytest_ragdive.engine.evaluation.ragas_metrics import RagasMetrics
from pytest_ragdive.engine.roles import mistaken, switching, vague
from pytest_ragdive.engine.roles.registry import role
from pytest_ragdive.engine.roles.role import Role
from pytest_ragdive.engine.validation import validator
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.model import Model

MULTI_TURN = ("forgetfulness", "context_retention")
SECTIONS = ("correctness", "multi_turn", "subject", "ragas", "validator", "premise",
            "clarified")


def role_of(turn: GeneratedTurn) -> Role:
    """The role that wrote a labelled turn, by what marks its turns."""
    if turn.premise:
        return mistaken.ROLE
    if turn.readings:
        return vague.ROLE
    return switching.ROLE if turn.topic_shift else role("precise")


async def multi_turn(client: LLMClient) -> list[dict[str, Any]]:
    rows, got, sets = [], {}, {}
    for metric in MULTI_TURN:
        cases = shipped([metric])
        dev, heldout = split(cases, False), split(cases, True)
        dev_answers, seconds = await answers(client, dev)
        held_answers, _ = await answers(client, heldout)
        got[metric], sets[metric] = (dev_answers, held_answers), (dev, heldout)
        rows += report_judge(metric, dev, dev_answers, seconds, heldout, held_answers)
    print("\n| set | cases | verdicts disagree | labels disagree | both verdicts right where the "
          "labels disagree | correlation of verdicts | correlation of scores |\n"
          "|---|---|---|---|---|---|---|")
    for name, index in (("development", 0), ("held-out", 1)):
        rows.append(agreement(name, {m: sets[m][index] for m in MULTI_TURN},
                              {m: got[m][index] for m in MULTI_TURN}))
    return rows


async def subject(client: LLMClient) -> list[dict[str, Any]]:
    """forgetfulness where the stand-alone question does not say which of two similar
    services it means ("Who operates the line?") and the reply answers about the other one:
    told the document's heading, as the package asks it, and not told."""
    cases = list(shipped_file("subject/forgetfulness.jsonl"))
    rows = []
    for told in (True, False):
        got, seconds = await answers(client, cases, told)
        p_yes = [combine("forgetfulness", a) for a in got]
        rows.append(row(f"forgetfulness at {threshold('forgetfulness')}, "
                        f"{'told' if told else 'not told'} the document's subject",
                        verdicts("forgetfulness", p_yes), labels(cases),
                        [score_one("forgetfulness", p) for p in p_yes], seconds))
    return rows


async def correctness(client: LLMClient) -> list[dict[str, Any]]:
    """Correctness over every source of cases, and held out by source."""
    cases = shipped(["correctness"])
    got, seconds = await answers(client, cases)
    rows = report_judge("correctness", cases, got, seconds, group="source")
    p_yes = [combine("correctness", a) for a in got]
    sources = [c.group for c in cases]
    fitted = held_out(p_yes, labels(cases), sources)  # each source with a threshold from the others
    for source in dict.fromkeys(sources):
        chosen = [i for i, s in enumerate(sources) if s == source]
        mine = [p_yes[i] for i in chosen], [labels(cases)[i] for i in chosen]
        rows.append(row(f"correctness, source `{source}`, the package's threshold",
                        verdicts("correctness", mine[0]), mine[1], mine[0]))
        rows.append(row(f"correctness, source `{source}`, threshold fitted on the other sources",
                        [fitted[i] for i in chosen], mine[1], mine[0]))
    return rows


async def ragas_metrics(client: LLMClient) -> list[dict[str, Any]]:
    """The three ragas metrics on statement-level and per-context cases; a score is
    taken as 1 when it is 1: every claim supported, the context useful, every statement
    of the reference found (a label-0 case has exactly one claim, context or statement
    that fails)."""
    metrics = RagasMetrics(client, reading.MODEL)
    rows = []
    for metric in ("faithfulness", "context_precision", "context_recall"):
        cases = shipped([metric])
        start = time.perf_counter()
        scores = [await calibration.score(client, reading.MODEL, case, metrics) for case in cases]
        got = [0.5 if s is None else s for s in scores]
        ones = [int(s >= calibration.RAGAS_ONE) for s in got]
        rows.append(row(f"{metric} (ragas), score 1", ones, labels(cases), got,
                        time.perf_counter() - start))
    return rows


async def validator_checks(client: LLMClient) -> list[dict[str, Any]]:
    """Every check of the validator on its labelled cases: the exact ones by code, the
    others by the validator model (its P(yes) against its profile's threshold)."""
    docs = documents(HERE / "validator" / "documents")
    records = load(HERE / "validator" / "cases.jsonl")
    model_cases = {case.id: case for case in shipped(
        [f"validator.{c}" for c in validator.QUESTIONS])}
    rows = []
    for check in dict.fromkeys(record["check"] for record in records):
        chosen = [record for record in records if record["check"] == check]
        predicted, scores = [], []
        start = time.perf_counter()
        for record in chosen:
            if check in validator.QUESTIONS:
                p_yes = await calibration.score(client, reading.MODEL, model_cases[record["id"]])
                passed = p_yes is not None and p_yes >= threshold(f"validator.{check}")
            else:
                candidate = GeneratedTurn(**record["candidate"])
                earlier = earlier_turns(Exchange(**h) for h in record["history"])
                role = role_of(candidate)
                verdict = validator.exact_verdict(
                    candidate, DocumentGroup.of(docs[record["document"]]), earlier, role=role)
                category = role.categories.get(check) or validator.CATEGORIES[check]
                passed = category not in verdict.categories
                p_yes = float(passed)
            predicted.append(int(passed))
            scores.append(p_yes or 0.0)
        kind = "model" if check in validator.QUESTIONS else "exact"
        rows.append(row(f"validator.{check} ({kind})", predicted,
                        [int(r["label"]) for r in chosen], scores, time.perf_counter() - start))
    return rows


async def premise(client: LLMClient) -> list[dict[str, Any]]:
    """premise_corrected on its cases, with a threshold fitted per held-out document."""
    cases = shipped(["premise_corrected"])
    got, seconds = await answers(client, cases)
    return report_judge("premise_corrected", cases, got, seconds)


#: clarified's other wording, measured on the same cases: one question for both good
#: answers, read against the answer key (benchmarks/README.md has the first run's others)
CLARIFIED_TRIED = {
    "give each or ask": "Does the reply give the answer for each case, or ask which one they mean?",
}


def fitted_on_development(name: str, dev: list[Case], dev_p: list[float],
                          held: list[Case], held_p: list[float]) -> list[dict[str, Any]]:
    """A judgement's rows with its threshold fitted on the development documents: there,
    per held-out development document, and on the held-out documents."""
    fitted = best_threshold(dev_p, labels(dev))
    return [
        row(f"{name}, at {fitted:.4g}, fitted on the development documents",
            [int(p >= fitted) for p in dev_p], labels(dev), dev_p),
        row(f"{name}, fitted per held-out development document",
            held_out(dev_p, labels(dev), [c.group for c in dev]), labels(dev), dev_p),
        row(f"{name}, at {fitted:.4g}, **held-out documents**",
            [int(p >= fitted) for p in held_p], labels(held), held_p),
    ]


async def clarified(client: LLMClient) -> list[dict[str, Any]]:
    """clarified on its development documents and its held-out ones, as the package scores
    it (a reply that gives every reading's answer is a yes by code, another is judged) and
    in the other wording tried, each judge's threshold fitted on the development documents;
    the code alone, and with a question mark for a question, for comparison."""
    cases = shipped(["clarified"])
    parts = {"dev": split(cases, False), "held": split(cases, True)}
    check = exact_yes("clarified")[0]
    exact = {k: [float(check(c.turns()[0])) for c in chosen] for k, chosen in parts.items()}
    package, rows, cut = BINARY_JUDGES["clarified"], [], threshold("clarified")
    tried = {"ask which one, and its negation (the package's)": package,
             **{name: replace(package, question=question, negation=None, against_key=True)
                for name, question in CLARIFIED_TRIED.items()}}
    for name, judge in tried.items():
        BINARY_JUDGES["clarified"] = judge
        try:
            got = {k: (await answers(client, chosen))[0] for k, chosen in parts.items()}
        finally:
            BINARY_JUDGES["clarified"] = package
        second = "the answer key" if judge.against_key else "the negation"
        for how, read in ((f"with {second}", lambda a: combine("clarified", a)),
                          ("the question alone", lambda a: a[0])):
            p = {k: [max(e, read(a)) for e, a in zip(exact[k], got[k])] for k in parts}
            if judge is package and how.startswith("with"):
                rows += [row(f"clarified as the package scores it, at {cut} "
                             f"(the package's), {where} documents",
                             [int(x >= cut) for x in p[k]], labels(parts[k]), p[k])
                         for k, where in (("dev", "development"), ("held", "**held-out**"))]
            rows += fitted_on_development(f"clarified, exact or {name}, {how}", parts["dev"],
                                          p["dev"], parts["held"], p["held"])
    for k, where in (("dev", "development"), ("held", "held-out")):
        asks = [float("?" in (c.answer or "")) for c in parts[k]]
        rows.append(row(f"clarified, exact alone: the reply gives every reading's answer, "
                        f"{where} documents", [int(e) for e in exact[k]], labels(parts[k]),
                        exact[k]))
        rows.append(row(f"clarified, exact or the reply holds a question mark (code, for "
                        f"comparison), {where} documents",
                        [int(max(e, a)) for e, a in zip(exact[k], asks)], labels(parts[k]),
                        [max(e, a) for e, a in zip(exact[k], asks)]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=reading.EMBEDDED,
                        help="litellm model name (default: %(default)s)")
    parser.add_argument("--only", action="append", choices=SECTIONS,
                        help="a section to run (repeatable; default: all)")
    parser.add_argument("--cache-dir", help="reuse recorded answers (default: a new temp folder)")
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds a model call may take (default: %(default)s; a loaded "
                             "machine needs more)")
    args = parser.parse_args(argv)
    reading.MODEL = Model(args.model)
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
            rows += await runs[section](client)
        return rows

    rows = run_blocking(run())
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
