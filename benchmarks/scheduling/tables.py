"""The benchmark's report: a Markdown table per section and the lines that read it."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

from .runner import PLUGINS_OFF, Measured
from .simulation import Structure, ideal_makespan, quadratic_fit, smallest_limit, structure
from .workload import Config


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table with right-aligned columns."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    out = []
    for n, row in enumerate(cells):
        out.append("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths)) + " |")
        if n == 0:
            out.append("|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    return "\n".join(out)


def probe_lines(base: Config, shape: Structure, p: Mapping[str, Any]) -> list[str]:
    """The critical path from the structure, checked against the in-process probe ``p``."""
    critical = shape.critical_path(base.model_latency, base.adapter_latency)
    lines = [
        (f"critical path of one dialogue, from the engine's structure: "
         f"{base.turns} turns x (generator + validator) = {2 * base.turns} model calls "
         f"+ evaluation depth {shape.eval_depth} (faithfulness: statements then NLI = 2; "
         f"context_precision: {base.contexts} contexts one after the other = {base.contexts};"
         f" the others 1) = {shape.model_chain} x {base.model_latency * 1000:.0f} ms, + "
         f"{shape.adapter_chain} adapter calls x {base.adapter_latency * 1000:.0f} ms "
         f"= {critical:.3f} s; {shape.calls} model calls per dialogue"),
        (f"instrumented in-process arun_dialogue, no limit: wall {p['one_wall']:.3f} s "
         f"(= {p['one_wall'] / critical:.2f} x critical path), {p['one_calls']} calls, "
         f"{p['one_hits']} cache hits; model calls per turn before the adapter call "
         f"{p['calls_per_turn']} in {p['waves_per_turn']} waves; evaluation waves (calls "
         f"ending together) {p['eval_waves']} ending {p['eval_wave_ends']} s after the last "
         f"answer"),
        f"  calls by schema: {p['schemas']}",
    ]
    counted_chain = sum(p["waves_per_turn"]) + len(p["eval_waves"])
    ok = (counted_chain == shape.model_chain and p["one_calls"] == shape.calls
          and not p["one_errors"])
    lines.append(f"  counted from the run: model chain {counted_chain}, calls {p['one_calls']}"
                 f" -> {'matches' if ok else 'DOES NOT MATCH'} the structure "
                 f"({shape.model_chain}, {shape.calls})")
    cpu1, cpun = p["cpu_one"], p["cpu_many"]
    per_call = cpun["cpu"] / cpun["calls"] * 1000
    lines.append(
        f"engine CPU at zero latency, in-process after imports: 1 dialogue {cpu1['calls']} "
        f"calls {cpu1['wall']:.2f} s wall / {cpu1['cpu']:.2f} s CPU; {cpun['dialogues']} "
        f"dialogues {cpun['calls']} calls {cpun['wall']:.2f} s wall / {cpun['cpu']:.2f} s "
        f"CPU = {per_call:.1f} ms CPU per model call")
    return lines


def concurrency_report(base: Config, shape: Structure, p: Mapping[str, Any],
                       measured: Sequence[Measured], repeats: int) -> list[str]:
    """The concurrency table (``measured[0]`` is ``base``), the target and where the time
    of the base run goes."""
    critical = shape.critical_path(base.model_latency, base.adapter_latency)
    rows = []
    for m in measured:
        cfg, run = m.cfg, m.runs[0]
        ideal = ideal_makespan(cfg)
        rows.append([
            cfg.label, cfg.documents, cfg.turns, f"{cfg.model_latency * 1000:.0f}",
            f"{cfg.adapter_latency * 1000:.0f}", cfg.concurrency,
            f"{m.process:.2f}", f"{m.session:.2f}", f"{critical:.2f}", f"{ideal:.2f}",
            f"{m.session / critical:.1f}", f"{m.process / critical:.1f}",
            f"{m.session / ideal:.2f}",
            f"{run.calls / run.dialogues:.0f}", f"{sum(r.hits for r in m.runs)}",
            f"{run.tokens_in / run.dialogues:.0f} / {run.tokens_out / run.dialogues:.0f}",
        ])
    header = ["config", "docs", "turns", "model ms", "adapter ms", "C", "process s",
              "session s", "critical s", "ideal@C s", "session/crit", "process/crit",
              "session/ideal", "calls/dlg", "hits", "tokens in/out per dlg"]
    seq = next(m for m in measured if m.cfg.concurrency == 1)
    c16 = measured[0]
    target = 2 * critical
    needed = smallest_limit(base, target)
    ideal = ideal_makespan(base)
    many = p["many"]
    return [
        "",
        table(header, rows),
        "",
        (f"median of {repeats} run(s) each; 'session' is pytest's own 'in X.XXs', 'process' "
         f"the subprocess wall time; ideal@C: the engine's dependencies under a FIFO limit "
         f"of C calls in flight, zero CPU; hits: cache hits over all runs (0: every call "
         f"waited)."),
        (f"speed-up C=16 over C=1: {seq.session / c16.session:.1f}x (session), "
         f"{seq.process / c16.process:.1f}x (process)"),
        (f"target wall <= 2 x critical path = {target:.2f} s at C=16: "
         f"{'met' if c16.session <= target else 'MISSED'} (session {c16.session:.2f} s, "
         f"{c16.session / critical:.1f}x). No scheduler can meet it at C=16: "
         f"{shape.calls * base.documents} calls x {base.model_latency:g} s / "
         f"{base.concurrency} slots = "
         f"{shape.calls * base.documents * base.model_latency / base.concurrency:.2f}"
         f" s, ideal schedule {ideal:.2f} s = {ideal / critical:.1f}x; the smallest limit "
         f"whose ideal schedule meets it is C={needed}."),
        "",
        f"where the time of the C={base.concurrency} run goes:",
        (f"  {ideal:6.2f} s  ideal schedule, each call holding its slot "
         f"{base.model_latency * 1000:.0f} ms"),
        (f"  {ideal_makespan(base, many['hold_mean']):6.2f} s  ideal schedule with the "
         f"measured mean slot hold of {many['hold_mean'] * 1000:.0f} ms (median "
         f"{many['hold_median'] * 1000:.0f} ms; {p['one_hold_alone'] * 1000:.0f} ms with one "
         f"call in flight): litellm's per-call work (a thread hop to run its sync "
         f"completion(), logging, cost) runs inside the slot and waits for the busy loop"),
        (f"  {many['wall']:6.2f} s  measured in-process: arun_dialogues, "
         f"{base.documents} documents, C={base.concurrency}, imports done "
         f"({many['cpu']:.2f} s CPU for {many['calls']} calls)"),
        (f"  {c16.session:6.2f} s  pytest session (median): + ragas/instructor import on "
         f"the event loop at the first evaluation ({p['import_ragas']:.2f} s alone, it "
         f"stalls every dialogue), pytest per-item work"),
        (f"  {c16.process:6.2f} s  process: + interpreter, pytest and plugins, conftest "
         f"(litellm import {p['import_litellm']:.2f} s), collection, and pytest's 5 x "
         f"gc.collect() at exit ({p['gc_collect']:.2f} s each with litellm and ragas "
         f"loaded)"),
    ]


def what_if_report(measured: Sequence[Measured], critical: float, needed: int,
                   repeats: int) -> str:
    """The what-if table; diffs are against ``measured[0]``, the base as is."""
    base = measured[0]
    rows = [[m.cfg.label, m.cfg.concurrency, f"{m.process:.2f}", f"{m.session:.2f}",
             f"{m.session - base.session:+.2f}" if m.cfg.concurrency == 16 else "",
             f"{m.process - base.process:+.2f}" if m.cfg.concurrency == 16 else "",
             f"{ideal_makespan(m.cfg):.2f}", f"{m.session / critical:.1f}"] for m in measured]
    return "\n".join([
        table(["20 docs x 5 turns, 200/50 ms", "C", "process s", "session s", "session diff",
               "process diff", "ideal@C s", "session/crit"], rows), "",
        (f"median of {repeats} interleaved run(s) each; the changes are simulated from the "
         f"generated conftest; C={needed} is the smallest limit whose ideal schedule meets "
         f"2 x critical path ({2 * critical:.2f} s)."),
    ])


def tokens_report(measured: Sequence[Measured]) -> str:
    """Tokens and calls per dialogue as the turns grow, and how they grow."""
    rows, per_dialogue = [], []
    for m in measured:
        cfg, run = m.cfg, m.runs[0]
        tokens = (run.tokens_in + run.tokens_out) / run.dialogues
        per_dialogue.append((cfg.turns, tokens))
        rows.append([cfg.turns, f"{run.calls / run.dialogues:.0f}",
                     f"{structure(cfg.turns, cfg.contexts).calls}",
                     f"{run.tokens_in / run.dialogues:.0f}",
                     f"{run.tokens_out / run.dialogues:.0f}", f"{tokens:.0f}",
                     f"{tokens / cfg.turns:.0f}", f"{m.session:.2f}"])
    header = ["turns", "calls/dlg", "calls (structure)", "tokens in/dlg", "tokens out/dlg",
              "tokens/dlg", "tokens/turn", "session s"]
    steps = [f"{b - a:.0f}" for (_, a), (_, b) in itertools.pairwise(per_dialogue)]
    (t1, k1), (tn, kn) = per_dialogue[0], per_dialogue[-1]
    lines = [
        table(header, rows), "",
        ("4 documents, zero latency, C=16; token counts are exact and deterministic (the "
         "fake model counts words), so one run each. With turns=1 the multi-turn metrics "
         "are left out."),
        (f"growth: tokens/dialogue x{kn / k1:.2f} for turns x{tn / t1:.0f}; increments per "
         f"2 more turns: {', '.join(steps)} (constant = linear, growing = superlinear)"),
    ]
    if len(per_dialogue) < 3:  # bench.py --tiny: too few sizes to fit
        return "\n".join(lines)
    a, b, c = quadratic_fit(per_dialogue)
    return "\n".join([*lines, (
        f"least-squares fit tokens/dialogue = {a:.0f} + {b:.0f} T + {c:.1f} T^2; the T^2 "
        f"term is {c * tn * tn / kn:.0%} of the total at T={tn}: every prompt grows "
        f"linearly with the turns before it (history), so the dialogue's sum is quadratic "
        f"with a small coefficient next to the per-turn cost of the document and "
        f"templates")])


def startup_report(times: Mapping[str, list[float]], imports: Sequence[float],
                   repeats: int, project: tuple[int, int] = (10, 20)) -> str:
    """Start-up time of each arm, the plugin's overhead (median of paired differences:
    the arms come in pairs, the plugin on and off) and its own import time."""
    arms = list(times)
    rows = []
    for on, off in (arms[:2], arms[2:]):
        diffs = [a - b for a, b in zip(times[on], times[off])]
        for name in (on, off):
            t = times[name]
            rows.append([name, len(t), f"{median(t) * 1000:.0f}", f"{min(t) * 1000:.0f}",
                         f"{max(t) * 1000:.0f}",
                         f"{median(diffs) * 1000:+.0f}" if name == on else ""])
    main_diff = median([a - b for a, b in zip(times["with ragdive"], times["-p no:ragdive"])])
    arms_diff = median(times["with ragdive"]) - median(times["-p no:ragdive"])
    return "\n".join([
        table([f"{project[0] * project[1]} trivial tests", "runs", "median ms", "min ms", "max ms",
               "overhead ms (median of paired diffs)"], rows), "",
        (f"`python -m pytest -q -p no:cacheprovider` in a project of {project[0]} modules "
         f"x {project[1]} trivial tests; 'lean' adds {' '.join(PLUGINS_OFF[2:])} to both arms."),
        (f"plugin start-up overhead: {main_diff * 1000:+.0f} ms (median of {repeats} paired "
         f"differences; medians of the arms differ by {arms_diff * 1000:+.0f} ms); "
         f"importing pytest_ragdive, .plugin and .session after pytest costs "
         f"{median(imports):.1f} ms (python -X importtime, median of {repeats}), most of it "
         f"asyncio, which pytest_ragdive.plugin.session imports at configure through "
         f".runner"),
    ])
