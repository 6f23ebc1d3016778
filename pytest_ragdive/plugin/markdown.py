"""A run's verdicts as Markdown (``--ragdive-markdown``): for GitHub's job summary
(``$GITHUB_STEP_SUMMARY``) or a pull-request comment.

Per test function: its verdict, a row per metric (verdict, change, p-value, mean against the
aggregate band), its floors and ceilings, then the places to look: the items whose first run
left their band, with the turn and the judge's reason, and the items that failed. Text that
came from a model, a document or the bot goes into fenced blocks, so it renders as text, never
as Markdown or HTML; a long run is cut to fit a comment and says where the rest is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .run_record import ItemRecord, RunRecord, TestRecord

__all__ = ["LIMIT", "render"]

#: Characters at most: GitHub takes 65,536 in a comment and 1 MiB in a job summary.
LIMIT = 60_000
#: Places to look shown per test; the HTML report has them all.
PLACES = 12

_MARK = {"regressed": "❌", "inconclusive": "⚠️", "passed": "✅", "improved": "✅",
         "recorded": "📝", "skipped": "➖"}


def render(run: RunRecord, unused: Sequence[str] = (), limit: int = LIMIT) -> str:
    """The Markdown of ``run``; ``unused`` lists band files no collected test owns."""
    tests = sorted(run.tests, key=lambda t: (not t.failed, t.key))
    parts = [_headline(tests), _overview(tests)]
    parts += [_test(test) for test in tests]
    if unused:
        update = "(update)" in run.settings.get("seeds", "")
        verb = "removed" if update else "unused (`--ragdive-update` removes them)"
        parts.append(f"**{len(unused)} band file(s) no test owns, {verb}:**\n" + _fence(unused))
    parts.append(_footer(run))
    text = "\n\n".join(p for p in parts if p) + "\n"
    if len(text) > limit:
        cut = text.rfind("\n\n", 0, limit - 200)
        text = (text[:cut] + "\n\n… cut to fit a comment: the HTML report "
                "(`--ragdive-report`) has every test.\n")
    return text


def _headline(tests: list[TestRecord]) -> str:
    failed = [t for t in tests if t.failed]
    if not tests:
        return "### ragdive: no conversation test ran"
    if failed:
        return f"### ❌ ragdive: {len(failed)} of {len(tests)} test(s) failed"
    shaky = sum(t.status == "inconclusive" for t in tests)
    tail = f" ({shaky} inconclusive, not failed)" if shaky else ""
    return f"### ✅ ragdive: {len(tests)} test(s) passed{tail}"


def _overview(tests: list[TestRecord]) -> str:
    rows = ["| test | verdict | documents | items failed |", "|---|---|---|---|"]
    for test in tests:
        status = _status(test)
        failed = sum(i.failed for i in test.items)
        mark = "❌" if _missed(test) else _MARK.get(status, "")
        rows.append(f"| {_code(test.key)} | {mark} {status} | "
                    f"{len(test.items)} of {len(test.collected) or len(test.items)} | "
                    f"{failed} |")
    return "\n".join(rows)


def _status(test: TestRecord) -> str:
    status = test.status or ("failed" if test.failed else "passed")
    missed = _missed(test)
    if missed:  # beside the baseline's verdict, which may have passed
        return f"{', '.join(missed)} (baseline: {status})"
    return status


def _missed(test: TestRecord) -> list[str]:
    """The floors and ceilings that failed the test: "correctness below its floor"."""
    return [f"{m.metric} {m.outcome} its {m.kind}" for m in test.limits if m.failed]


def _limits(test: TestRecord) -> str:
    """Its floors and ceilings, each with the mean held to it."""
    if not test.limits:
        return ""
    lines = [f"- {'❌' if m.failed else '✅' if m.met else '⚠️'} {_cell(m.describe())}"
             + ("" if m.met or m.failed else " (an update: recorded all the same)")
             for m in test.limits]
    return "Floors and ceilings (absolute, on the mean over its documents):\n" + "\n".join(lines)


def _test(test: TestRecord) -> str:
    lines = [f"#### {_code(test.key)}: {_status(test)}"]
    if test.design:
        lines.append(f"Over {_cell(test.design)}.")
    rows = _metric_rows(test)
    if rows:
        lines.append("\n".join(rows))
    why = [f"- **{v.metric}** {v.verdict}: {_cell(v.reason)}" for v in test.verdicts
           if v.verdict != "not worse"]
    if why:
        lines.append("\n".join(why))
    if test.limits:
        lines.append(_limits(test))
    if test.note:
        lines.append(_fence([test.note]))
    places = _places(test.items)
    if places:
        lines.append("Where to look (first runs outside their item band):\n" + _fence(places))
    failures = [f"{i.nodeid}\n  {_first_lines(i.message)}" for i in test.items if i.failed]
    if failures:
        lines.append("Items that failed:\n" + _fence(failures))
    return "\n\n".join(lines)


def _metric_rows(test: TestRecord) -> list[str]:
    verdicts = {v.metric: v for v in test.verdicts}
    means = {m.name: m for m in test.metrics}
    names = [*verdicts, *(n for n in means if n not in verdicts)]
    if not names:
        return []
    rows = ["| metric | verdict | candidate − baseline | p | mean | aggregate band |",
            "|---|---|---|---|---|---|"]
    for name in names:
        v, m = verdicts.get(name), means.get(name)
        band = f"[{m.band.min:.3f}, {m.band.max:.3f}]" if m and m.band else "–"
        rows.append(
            f"| {name} | {(v.verdict if v else m.verdict if m else '–')} | "
            f"{f'{v.delta:+.3f}' if v else '–'} | {f'{v.p:.4f}' if v else '–'} | "
            f"{f'{m.value:.3f}' if m and m.value is not None else '–'} | {band} |")
    return rows


def _places(items: Iterable[ItemRecord]) -> list[str]:
    places = [f"{i.nodeid}\n" + "\n".join(_indent(p) for p in i.result.left_band)
              for i in items if i.result and i.result.left_band]
    if len(places) > PLACES:
        places = [*places[:PLACES], f"… and {len(places) - PLACES} more in the HTML report"]
    return places


def _indent(problem: str) -> str:
    """A problem's first line under its item, the lines that explain it under that."""
    first, *rest = [line.strip() for line in problem.strip().splitlines()] or [""]
    return "\n".join([f"  {first}", *(f"    {line}" for line in rest)])


def _first_lines(message: str, lines: int = 4, width: int = 400) -> str:
    kept = [line for line in message.strip().splitlines() if line.strip()][:lines]
    return "\n  ".join(kept)[:width] or "(no message)"


def _footer(run: RunRecord) -> str:
    shown = ("seeds", "record mode", "verdict", "alpha", "evaluator", "plugin")
    facts = [f"{key} {run.settings[key]}" for key in shown if run.settings.get(key)]
    facts.append(f"{run.duration_s:.0f} s")
    return "<sub>" + " · ".join(_cell(f) for f in facts) + "</sub>"


def _fence(blocks: Sequence[str]) -> str:
    """``blocks`` as one fenced text block: a fence longer than any backtick run inside,
    so that nothing in it can close the block."""
    body = "\n".join(blocks)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def _code(text: str) -> str:
    """``text`` as inline code (a node id), its backticks and pipes made harmless."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def _cell(text: str) -> str:
    """Plain text for a table cell or a line: no pipes, tags or line breaks."""
    return (re.sub(r"\s+", " ", text).replace("|", "\\|").replace("<", "&lt;")
            .replace(">", "&gt;").strip())
