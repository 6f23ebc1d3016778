"""``python -m pytest_ragdive calibrate --model NAME``: how good a judge model is, measured
on labelled cases, and the profile file the plugin reads (ini ``ragdive_profiles``).

It counts the calls and estimates the tokens and price first (``--dry-run`` stops there),
scores every case through the package's prompts and client (the response cache, retries
and calls in flight as in a test run: a second calibration of the same model replays),
prints each judgement's figures, and writes the model's profile into ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .calibration.cases import CaseError, read, shipped
from .calibration.cost import estimate, price
from .calibration.files import table, write
from .calibration.measure import calibrate
from .calibration.own_messages import conversations
from .engine.base.profile import JUDGEMENTS, ProfileError, Profiles, parse
from .engine.conversation.dialogue import run_blocking
from .llm.cache import ResponseCache
from .llm.client import LLMClient
from .llm.model import Model
from .llm.usage import Usage, usage_scope

if TYPE_CHECKING:
    from .calibration.cases import Case
    from .calibration.measure import Calibration
    from .engine.base.profile import Profile
    from .llm.model import Model

#: what ``--only`` takes besides a judgement: the generator's own follow-up messages
FOLLOW_UPS = "follow_ups"


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "calibrate", help="measure a judge model on labelled cases and write its profile")
    parser.add_argument("--model", required=True, help="litellm model name of the judge")
    parser.add_argument("--api-base", default="", help="the model's server (a served model)")
    parser.add_argument("--api-key-env", default="", metavar="VARIABLE",
                        help="the environment variable holding the key the server wants "
                        "(the key itself never goes on the command line)")
    parser.add_argument("--cases", type=Path, help="your own labelled cases (JSONL, "
                        "docs/judges.md): they replace the shipped ones of their judgements")
    parser.add_argument("--only", action="append", choices=(*JUDGEMENTS, FOLLOW_UPS),
                        help="a judgement to calibrate (repeatable; default: all)")
    parser.add_argument("--out", type=Path, default=Path("ragdive-profiles.json"),
                        help="the profile file to write (default: %(default)s); other "
                        "models' profiles in it are kept")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the estimate of calls, tokens and price only")
    parser.add_argument("--cache-dir", type=Path, default=Path(".ragdive/cache"),
                        help="the response cache (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=8, help="model calls in flight")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per call")


def main(args: argparse.Namespace) -> int:
    """Run the command; 0 on success, 2 when the cases or the profile file are not usable
    (nothing is then written)."""
    try:
        model = Model(args.model, _params(args))
    except KeyError as exc:
        print(f"error: --api-key-env names {exc}, which is not set: export {exc.args[0]}=<the "
              "server's key> and run again", file=sys.stderr)
        return 2
    chosen = args.only or [*JUDGEMENTS, FOLLOW_UPS]
    try:
        own = read(args.cases) if args.cases else []
        if args.out.exists():  # it is written at the end: a bad one fails before any call
            parse(args.out.read_text(encoding="utf-8"), str(args.out))
    except (CaseError, ProfileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    mine = {c.judgement for c in own}
    yours = [c for c in own if c.judgement in chosen]
    cases = yours + shipped([j for j in JUDGEMENTS if j in chosen and j not in mine])
    follow_ups = conversations() if FOLLOW_UPS in chosen else []
    print(f"calibrating {model.label} on {len(cases)} labelled cases"
          + (f" ({len(yours)} of them yours)" if yours else "")
          + (f" and {len(follow_ups)} conversations" if follow_ups else ""))
    print(f"estimate: {estimate(model, cases, follow_ups).describe()}")
    if args.dry_run:
        return 0
    return _run(args, model, cases, follow_ups)


def _params(args: argparse.Namespace) -> dict[str, str]:
    """The model's litellm params: the server and its key, read from the environment."""
    params = {"api_base": args.api_base} if args.api_base else {}
    if args.api_key_env:
        params["api_key"] = os.environ[args.api_key_env]
    return params


def _run(args: argparse.Namespace, model: Model, cases: Sequence[Case],
         follow_ups: Sequence[Case]) -> int:
    client = LLMClient(ResponseCache(args.cache_dir, "new"), concurrency=args.concurrency,
                       timeout=args.timeout)
    with usage_scope(Usage()) as usage:
        result = run_blocking(calibrate(client, model, cases, follow_ups))
    print(_figures(result, Profiles().of(result.model)))
    cost = usage.cost or price(model, usage.prompt_tokens, usage.completion_tokens)
    print(f"spent: {usage.calls} model calls ({usage.cache_hits} answered from the cache), "
          f"{usage.prompt_tokens:,} prompt and {usage.completion_tokens:,} completion tokens"
          + (f", ${cost:.4f}" if cost is not None else ""))
    previous = (parse(args.out.read_text(encoding="utf-8"), str(args.out)).get(result.model)
                if args.out.exists() else None)
    when = (f"{datetime.date.today().isoformat()}, {len(cases)} cases"
            + (f" ({args.cases})" if args.cases else "")
            + (f", {len(follow_ups)} conversations" if follow_ups else ""))
    profile = result.profile(previous, when)
    write(args.out, result.model, profile)
    print(f"\n{table(profile)}\nwrote the profile of {result.model} to {args.out}: commit it "
          f"and set `ragdive_profiles = {args.out}` in the ini file")
    return 0


def _figures(result: Calibration, now: Profile) -> str:
    """Each judgement's figures: AUC, balanced accuracy at the threshold in force now (the
    shipped or plain one) and at the one fitted on the development cases, held out."""
    lines = [("| judgement | cases | AUC development / held-out | now: threshold, development "
              "/ held-out | fitted: threshold, development / held-out; held out [95%] "
              "| informative |"),
             "|---|---|---|---|---|---|"]
    for name, measured in result.judgements.items():
        decided = measured.decide(result.reading)
        current = now.judgement(name).threshold
        fitted = measured.fitted()
        aucs = _pair(measured.auc_of(False), measured.auc_of(True))
        lines.append(
            f"| {name} | {len(measured.scores)} | {aucs} "
            f"| {_cut(current)}, {_pair(*measured.at(current))} "
            f"| {_cut(fitted)}, {_pair(*measured.at(fitted))}; held out {decided.why()} "
            f"| {'yes' if decided.informative else 'no'} |")
    if result.follow_ups is not None:
        kept, asked = result.follow_ups
        lines.append(f"\nfollow-up messages: {kept} of {asked} leaned on the conversation as "
                     f"the model wrote them")
    return "\n".join(lines)


def _cut(threshold: float | None) -> str:
    return "score 1" if threshold is None else f"{threshold:.4g}"


def _pair(first: float | None, second: float | None) -> str:
    return " / ".join("-" if v is None else f"{v:.3f}" for v in (first, second))
