#!/usr/bin/env python3
"""Benchmark of pytest-ragdive, run by hand (not a test):

    python benchmarks/bench.py            # everything, about 16 minutes on 2 cores
    python benchmarks/bench.py --quick    # one run per configuration, about 7 minutes
    python benchmarks/bench.py --only startup|concurrency|tokens|what-if
    python benchmarks/bench.py --what-if  # also: the proposed fixes, simulated (+5 minutes)

It writes a throw-away pytest project into a temp dir (a conftest with the scripted fake
model of ``pytest_ragdive.llm.scripted`` answering after a fixed latency, an adapter that
sleeps a fixed latency, N documents, one ``@ragdive.conversation(turns=T)`` test) and
times real ``python -m pytest -m ragdive`` subprocesses on it, each with a fresh
``--ragdive-cache-dir`` (every model call is a miss and waits its latency) and
``--ragdive-update --ragdive-runs 1`` (no baseline needed: each item holds one dialogue
and records its band). See benchmarks/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Plugins that only slow start-up here; none of them takes part in a ragdive run.
#: (ragdive registers its xdist hooks only when xdist is loaded; one process needs none.)
PLUGINS_OFF = [
    "-p", "no:langsmith_plugin", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
    "-p", "no:benchmark", "-p", "no:syrupy", "-p", "no:anyio", "-p", "no:xdist",
    "-p", "no:xdist.looponfail",
]

# --------------------------------------------------------------------------------------
# The generated project. COMMON is both the body of the generated conftest.py and what
# the in-process probe executes, so both run the very same model script and adapter.
# --------------------------------------------------------------------------------------

COMMON = '''
import asyncio
import re

import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import ORDINALS, first_sentence

_TAG = re.compile(r"\\[(doc-\\d+)\\]")
_TURN = re.compile(r"Write turn (\\d+)")


def _where(messages):
    text = str(messages[-1]["content"])
    tag, turn = _TAG.search(text), _TURN.search(text)
    return (tag.group(1) if tag else "doc"), (int(turn.group(1)) if turn else 1)


# The generator's default replies are the same for every document, so later dialogues
# would hit the cache entries of earlier ones (same question, same answer, same ragas
# prompt). These two name the document and the turn, so that every call is a miss.
def first_question(messages):
    tag, _ = _where(messages)
    return {"question": f"What is the topic of {tag}?", "evidence": first_sentence(messages),
            "ground_truth": f"The topic of {tag}."}


def next_question(messages):
    tag, turn = _where(messages)
    nth = ORDINALS[turn - 1]
    return {
        "rag_input": f"{tag}: and the {nth} fact about it?",
        "standalone_question": f"What is the {nth} fact about the topic of {tag}?",
        "evidence": first_sentence(messages),
        "ground_truth": f"More about the topic of {tag}.",
        "question_type": "follow_up",
    }


RESPONDERS = {"FirstQuestion": first_question, "NextQuestion": next_question}

FILLER = ("It was founded long ago and serves many people every day. Its opening hours "
          "change in winter, tickets are sold at the entrance and online, and groups of "
          "more than ten should book a week ahead. ")


def make_documents(n):
    return [ragdive.Document(id=f"doc-{i:02d}", text=f"[doc-{i:02d}] Topic {i}. " + FILLER * 3)
            for i in range(n)]


class Bot:
    """A RAG stand-in: waits ``latency`` seconds, answers with ``contexts`` passages."""

    def __init__(self, latency, contexts, stamps=None):
        self.latency, self.contexts, self.stamps = latency, contexts, stamps

    async def answer(self, question, history):
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.stamps is not None:
            self.stamps.append(asyncio.get_running_loop().time())
        turn = len(history) // 2 + 1
        contexts = [f"Passage {i + 1} retrieved for {question!r}: opening hours change in "
                    f"winter and tickets are sold online." for i in range(self.contexts)]
        return ragdive.RagAnswer(
            answer=f"Answer {turn}: about {question!r}, the knowledge base says that "
                   f"opening hours change in winter.",
            contexts=contexts,
        )
'''

CONFTEST = '''
import pytest
from pytest_ragdive.llm.scripted import scripted

MODEL_LATENCY = {model_latency!r}
ADAPTER_LATENCY = {adapter_latency!r}
CONTEXTS = {contexts!r}
DOCUMENTS = {documents!r}
{common}

MODEL = scripted(RESPONDERS, name="bench", latency=MODEL_LATENCY)


@pytest.fixture(scope="session")
def ragdive_adapter():
    return Bot(ADAPTER_LATENCY, CONTEXTS)


@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges(MODEL)


ragdive_document = ragdive.document_fixture(make_documents(DOCUMENTS))
'''

TEST_MODULE = '''
import pytest_ragdive as ragdive


@ragdive.conversation(turns={turns})
def test_bench(ragdive_dialogue):
    pass
'''


@dataclass(frozen=True)
class Config:
    label: str
    documents: int
    turns: int
    model_latency: float
    adapter_latency: float
    concurrency: int
    contexts: int = 2
    patch: str = ""  # a key of WHAT_IF: code appended to the conftest


#: --what-if: changes to the plugin proposed in benchmarks/README.md, simulated from the
#: generated conftest (the plugin itself is not touched).
WHAT_IF = {
    "import": """
import threading


def _warm():  # what the first evaluation would import on the event loop
    import instructor, ragas.llms, ragas.metrics.collections  # noqa: F401


def pytest_collection_finish(session):
    threading.Thread(target=_warm, daemon=True).start()
""",
    "import+freeze": """
import gc
import threading


def _warm():
    import instructor, ragas.llms, ragas.metrics.collections  # noqa: F401
    gc.freeze()  # the long-lived import graph leaves the collector's work


def pytest_collection_finish(session):
    threading.Thread(target=_warm, daemon=True).start()
""",
}


def make_project(root: Path, cfg: Config) -> Path:
    project = root / (f"p-{cfg.documents}d-{cfg.turns}t-{cfg.model_latency}-"
                      f"{cfg.adapter_latency}-{cfg.contexts}c{cfg.patch and '-' + cfg.patch}")
    if project.exists():
        return project
    project.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "conftest.py").write_text(CONFTEST.format(
        model_latency=cfg.model_latency, adapter_latency=cfg.adapter_latency,
        contexts=cfg.contexts, documents=cfg.documents, common=COMMON)
        + WHAT_IF.get(cfg.patch, ""))
    (project / "test_bench.py").write_text(TEST_MODULE.format(turns=cfg.turns))
    return project


# --------------------------------------------------------------------------------------
# The engine's structure: critical path and an ideal schedule under the concurrency limit
# --------------------------------------------------------------------------------------

def eval_chains(turns: int, contexts: int) -> list[tuple[str, int]]:
    """(metric, sequential model calls) of every judgement of one dialogue, as
    ``pytest_ragdive.engine.evaluator.evaluate`` starts them, all at once.

    From ragas 0.4.3 ``metrics/collections``: Faithfulness.ascore awaits statement
    generation, then NLI over the joined contexts (2 calls in a row); ContextPrecision
    (WithReference).ascore awaits one call per retrieved context in a ``for`` loop (one
    call after the other, not gathered); ContextRecall.ascore makes one call over the
    joined contexts. correctness, forgetfulness and context_retention are one yes/no call
    each (the multi-turn two ask twice, at once); the multi-turn two start at turn 2.
    """
    chains = []
    for turn in range(1, turns + 1):
        chains += [("correctness", 1), ("faithfulness", 2),
                   ("context_precision", contexts), ("context_recall", 1)]
        if turn > 1:
            chains += [("forgetfulness", 1), ("context_retention", 1)]
    return chains


@dataclass(frozen=True)
class Structure:
    model_chain: int        # model calls on the longest dependent chain of one dialogue
    adapter_chain: int      # adapter calls on it
    eval_depth: int         # of which: sequential calls of the slowest judgement
    calls: int              # model calls of one dialogue

    def critical_path(self, model_latency: float, adapter_latency: float) -> float:
        return self.model_chain * model_latency + self.adapter_chain * adapter_latency


def structure(turns: int, contexts: int) -> Structure:
    """Per turn: generator call, then validator call (no rejections with the default
    replies), then the adapter call; after the last turn, every judgement at once, so
    the evaluation adds the longest judgement chain."""
    chains = eval_chains(turns, contexts)
    depth = max(n for _, n in chains)
    return Structure(model_chain=2 * turns + depth, adapter_chain=turns, eval_depth=depth,
                     calls=2 * turns + sum(n for _, n in chains))


def ideal_makespan(cfg: Config, hold: float | None = None) -> float:
    """Makespan of ``cfg.documents`` dialogues started together, with the engine's
    dependencies, a FIFO limit of ``cfg.concurrency`` model calls in flight (the
    LLMClient semaphore; adapter calls are outside it) and zero CPU time: the best
    any scheduler of this engine could do. ``hold``: seconds a call keeps its slot,
    instead of the model latency (to price in per-call overhead inside the limit)."""
    hold = cfg.model_latency if hold is None else hold
    now, seq = 0.0, 0
    events: list[tuple[float, int, Callable[[], None]]] = []
    free, waiting = cfg.concurrency, deque()
    finished: list[float] = []

    def at(delay: float, fn: Callable[[], None]) -> None:
        nonlocal seq
        heapq.heappush(events, (now + delay, seq, fn))
        seq += 1

    def model(then: Callable[[], None]) -> None:
        nonlocal free
        if free:
            free -= 1
            at(hold, lambda: release(then))
        else:
            waiting.append(then)

    def release(then: Callable[[], None]) -> None:
        nonlocal free
        if waiting:
            nxt = waiting.popleft()
            at(hold, lambda: release(nxt))
        else:
            free += 1
        then()

    def chain(steps: Sequence[str], then: Callable[[], None]) -> None:
        def step(i: int) -> None:
            if i == len(steps):
                then()
            elif steps[i] == "m":
                model(lambda: step(i + 1))
            else:
                at(cfg.adapter_latency, lambda: step(i + 1))
        step(0)

    def dialogue() -> None:
        chains = eval_chains(cfg.turns, cfg.contexts)
        left = len(chains)

        def joined() -> None:
            nonlocal left
            left -= 1
            if left == 0:
                finished.append(now)

        def evaluate() -> None:
            for _, n in chains:
                chain("m" * n, joined)

        chain("mma" * cfg.turns, evaluate)

    for _ in range(cfg.documents):
        dialogue()
    while events:
        now, _, fn = heapq.heappop(events)
        fn()
    return max(finished)


# --------------------------------------------------------------------------------------
# Running pytest
# --------------------------------------------------------------------------------------

SESSION = re.compile(r" in ([\d.]+)s")
OUTCOME = re.compile(r"(\d+) (passed|failed)")
SUMMARY = re.compile(
    r"dialogues (\d+), turns (\d+), validator rejections (\d+) .*model calls (\d+), "
    r"cache hits (\d+), tokens (\d+) in / (\d+) out")


@dataclass
class Run:
    process: float
    session: float
    dialogues: int
    turns: int
    rejections: int
    calls: int
    hits: int
    tokens_in: int
    tokens_out: int
    failed: int = 0


def run_pytest(project: Path, cfg: Config, cache: Path) -> Run:
    """One pytest run; every item must pass."""
    command = [sys.executable, "-m", "pytest", "-m", "ragdive", "-q", *PLUGINS_OFF,
               "--ragdive-update", "--ragdive-runs", "1", "--ragdive-cache-dir", str(cache),
               "--ragdive-concurrency", str(cfg.concurrency)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    process = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    session = SESSION.search(lines[-1]) if lines else None
    outcomes = {kind: int(n) for n, kind in OUTCOME.findall(lines[-1] if lines else "")}
    summary = next((m for m in map(SUMMARY.search, lines) if m), None)
    complete = done.returncode == 0 and outcomes == {"passed": cfg.documents}
    if session is None or summary is None or not complete:
        raise SystemExit(f"pytest failed for {cfg}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    d, t, r, c, h, ti, to = map(int, summary.groups())
    if h:  # the cache is fresh: a hit means two requests were equal and one never waited
        raise SystemExit(f"{h} cache hits with a fresh cache for {cfg}: the script repeats "
                         f"requests (see first_question/next_question in COMMON)")
    return Run(process, float(session.group(1)), d, t, r, c, h, ti, to, outcomes.get("failed", 0))


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    out = []
    for n, row in enumerate(cells):
        out.append("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths)) + " |")
        if n == 0:
            out.append("|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|")
    return "\n".join(out)


@dataclass
class Measured:
    cfg: Config
    runs: list[Run] = field(default_factory=list)

    @property
    def session(self) -> float:
        return median([r.session for r in self.runs])

    @property
    def process(self) -> float:
        return median([r.process for r in self.runs])


def measure(root: Path, cfg: Config, repeats: int) -> Measured:
    return measure_all(root, [cfg], repeats, interleave=False)[0]


def measure_all(root: Path, configs: Sequence[Config], repeats: int, interleave: bool = True) -> list[Measured]:
    """``repeats`` runs of each config; interleaved, load drifts hit all configs alike."""
    results = [Measured(cfg) for cfg in configs]
    order = ([(i, m) for i in range(repeats) for m in results] if interleave
             else [(i, m) for m in results for i in range(repeats)])
    for i, result in order:
        cfg = result.cfg
        project = make_project(root, cfg)
        cache = project / f"cache-{cfg.concurrency}-{i}-{time.monotonic_ns()}"
        run = run_pytest(project, cfg, cache)
        shutil.rmtree(cache, ignore_errors=True)
        result.runs.append(run)
        print(f"  {cfg.label}: run {i + 1}/{repeats}: process {run.process:.2f}s, "
              f"session {run.session:.2f}s, {run.calls} calls, {run.hits} cache hits"
              f"{f', {run.failed} failed' if run.failed else ''} (load {load()})", flush=True)
    return results


# --------------------------------------------------------------------------------------
# In-process probe: one instrumented arun_dialogue with latency, to check the critical
# path against the engine, and the engine's CPU time per model call.
# --------------------------------------------------------------------------------------

def probe(turns: int, contexts: int, model_latency: float, adapter_latency: float,
          documents: int, concurrency: int) -> dict[str, Any]:
    import gc

    from pytest_ragdive.llm import scripted as testing
    from pytest_ragdive.llm.cache import ResponseCache
    from pytest_ragdive.llm.client import LLMClient, import_litellm

    out: dict[str, Any] = {}
    start = time.perf_counter()
    import_litellm()
    out["import_litellm"] = time.perf_counter() - start
    start = time.perf_counter()
    import instructor  # noqa: F401 - what evaluator._RagasMetrics imports first
    import ragas.llms
    import ragas.metrics.collections  # noqa: F401
    out["import_ragas"] = time.perf_counter() - start
    start = time.perf_counter()
    gc.collect()
    out["gc_collect"] = time.perf_counter() - start  # pytest runs 5 at exit

    space: dict[str, Any] = {}
    exec(COMMON, space)  # noqa: S102 - our own source, the conftest's body
    ragdive = space["ragdive"]

    # when each call of the timed model ended: the fake provider builds its reply once
    # the latency is over, through testing._reply (looked up at call time)
    stamps: list[tuple[str, float]] = []
    reply = testing._reply

    def stamped_reply(model: str, kwargs: Any) -> str:
        if model == "fake/probe-latency":
            stamps.append((testing.schema_name(kwargs), asyncio.get_running_loop().time()))
        return reply(model, kwargs)

    testing._reply = stamped_reply  # type: ignore[assignment]

    # how long each model call holds its slot of the concurrency limit
    holds: list[float] = []
    call = LLMClient._call

    async def timed_call(self: Any, request: Any, model: Any) -> Any:
        begin = asyncio.get_running_loop().time()
        try:
            return await call(self, request, model)
        finally:
            holds.append(asyncio.get_running_loop().time() - begin)

    LLMClient._call = timed_call  # type: ignore[method-assign]
    tmp = Path(tempfile.mkdtemp(prefix="ragdive-probe-"))
    docs = space["make_documents"](documents + 2)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        # warm-up: builds litellm's and instructor's lazy state
        warm = testing.scripted(space["RESPONDERS"], name="probe-warm")
        await ragdive.arun_dialogue(docs[-1], space["Bot"](0, contexts),
                                    judges=ragdive.Judges(warm), turns=2,
                                    cache_dir=tmp / "warm")
        # 1. one dialogue with latency and no binding limit: its wall time is the
        #    critical path plus the CPU time spent along it
        answers: list[float] = []
        holds.clear()
        model = testing.scripted(space["RESPONDERS"], name="probe-latency",
                                 latency=model_latency)
        client = LLMClient(ResponseCache(tmp / "one"), concurrency=10_000)
        t0 = loop.time()
        dialogue = await ragdive.arun_dialogue(
            docs[-2], space["Bot"](adapter_latency, contexts, answers),
            judges=ragdive.Judges(model), turns=turns, client=client)
        out["one_wall"] = loop.time() - t0
        out["one_errors"] = dialogue.errors
        out["one_calls"] = dialogue.usage.calls
        out["one_hits"] = dialogue.usage.cache_hits
        out["one_hold_alone"] = statistics.mean(holds[:2 * turns])  # one call in flight
        out["schemas"] = {}
        for schema, _ in stamps:
            out["schemas"][schema] = out["schemas"].get(schema, 0) + 1
        # model calls that ended between one adapter answer and the next
        bounds = [t0, *answers]
        out["calls_per_turn"] = [sum(1 for _, t in stamps if lo < t <= hi)
                                 for lo, hi in itertools.pairwise(bounds)]
        # evaluation waves: calls that ended after the last answer, grouped by end time
        ends = sorted(t for _, t in stamps if t > answers[-1])
        waves = [[ends[0]]]
        for t in ends[1:]:
            if t - waves[-1][-1] < model_latency / 2:
                waves[-1].append(t)
            else:
                waves.append([t])
        out["eval_waves"] = [len(w) for w in waves]
        out["eval_wave_ends"] = [round(w[-1] - answers[-1], 3) for w in waves]
        # 2. all dialogues at once under the limit, as the plugin runs them, minus pytest
        holds.clear()
        model = testing.scripted(space["RESPONDERS"], name="probe-many", latency=model_latency)
        cpu0, t0 = time.process_time(), loop.time()
        many = await ragdive.arun_dialogues(
            docs[:documents], space["Bot"](adapter_latency, contexts),
            judges=ragdive.Judges(model), concurrency=concurrency, turns=turns,
            cache_dir=tmp / "many")
        out["many"] = {"wall": loop.time() - t0, "cpu": time.process_time() - cpu0,
                       "calls": sum(d.usage.calls for d in many),
                       "hold_mean": statistics.mean(holds), "hold_median": statistics.median(holds)}
        # 3. engine CPU per model call: the same dialogues with zero latency
        for n, key in ((1, "cpu_one"), (documents, "cpu_many")):
            fast = testing.scripted(space["RESPONDERS"], name=f"probe-fast-{n}")
            cpu0, t0 = time.process_time(), loop.time()
            many = await ragdive.arun_dialogues(
                docs[:n], space["Bot"](0, contexts), judges=ragdive.Judges(fast),
                concurrency=concurrency, turns=turns, cache_dir=tmp / key)
            out[key] = {"dialogues": n, "calls": sum(d.usage.calls for d in many),
                        "cpu": time.process_time() - cpu0, "wall": loop.time() - t0}

    asyncio.run(main())
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_probe(cfg: Config) -> dict[str, Any]:
    args = json.dumps([cfg.turns, cfg.contexts, cfg.model_latency, cfg.adapter_latency,
                       cfg.documents, cfg.concurrency])
    done = subprocess.run([sys.executable, __file__, "--probe", args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"probe failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------

def section_concurrency(root: Path, repeats: int) -> str:
    base = Config("C=16", documents=20, turns=5, model_latency=0.2, adapter_latency=0.05,
                  concurrency=16)
    configs = [
        base,
        Config("C=1 (sequential)", 20, 5, 0.2, 0.05, concurrency=1),
        # not asked for: a limit that never binds, to see the engine's own overhead
        Config("C=1000 (no limit)", 20, 5, 0.2, 0.05, concurrency=1000),
    ]
    shape = structure(base.turns, base.contexts)
    critical = shape.critical_path(base.model_latency, base.adapter_latency)
    print(f"\n== concurrency (load {load()}) ==", flush=True)
    print(f"probing the engine in-process ({base.documents} documents, {base.turns} turns, "
          f"{base.contexts} contexts, C={base.concurrency}) ...", flush=True)
    p = run_probe(base)
    lines = [
        f"critical path of one dialogue, from the engine's structure: "
        f"{base.turns} turns x (generator + validator) = {2 * base.turns} model calls "
        f"+ evaluation depth {shape.eval_depth} (faithfulness: statements then NLI = 2; "
        f"context_precision: {base.contexts} contexts one after the other = {base.contexts};"
        f" the others 1) = {shape.model_chain} x {base.model_latency * 1000:.0f} ms, + "
        f"{shape.adapter_chain} adapter calls x {base.adapter_latency * 1000:.0f} ms "
        f"= {critical:.3f} s; {shape.calls} model calls per dialogue",
        f"instrumented in-process arun_dialogue, no limit: wall {p['one_wall']:.3f} s "
        f"(= {p['one_wall'] / critical:.2f} x critical path), {p['one_calls']} calls, "
        f"{p['one_hits']} cache hits; model calls per turn before the adapter call "
        f"{p['calls_per_turn']}; evaluation waves (calls ending together) "
        f"{p['eval_waves']} ending {p['eval_wave_ends']} s after the last answer",
        f"  calls by schema: {p['schemas']}",
    ]
    counted_chain = sum(p["calls_per_turn"]) + len(p["eval_waves"])
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
    for line in lines:
        print(line, flush=True)

    measured = [measure(root, cfg, repeats) for cfg in configs]
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
    needed = next(c for c in range(1, 10_000) if ideal_makespan(
        Config("", base.documents, base.turns, base.model_latency, base.adapter_latency, c))
        <= target)
    many = p["many"]
    lines += [
        "",
        table(header, rows),
        "",
        f"median of {repeats} run(s) each; 'session' is pytest's own 'in X.XXs', 'process' "
        f"the subprocess wall time; ideal@C: the engine's dependencies under a FIFO limit of "
        f"C calls in flight, zero CPU; hits: cache hits over all runs (0: every call waited).",
        f"speed-up C=16 over C=1: {seq.session / c16.session:.1f}x (session), "
        f"{seq.process / c16.process:.1f}x (process)",
        f"target wall <= 2 x critical path = {target:.2f} s at C=16: "
        f"{'met' if c16.session <= target else 'MISSED'} (session {c16.session:.2f} s, "
        f"{c16.session / critical:.1f}x). No scheduler can meet it at C=16: "
        f"{shape.calls * base.documents} calls x {base.model_latency:g} s / {base.concurrency}"
        f" slots = {shape.calls * base.documents * base.model_latency / base.concurrency:.2f}"
        f" s, ideal schedule {ideal_makespan(base):.2f} s = "
        f"{ideal_makespan(base) / critical:.1f}x; the smallest limit whose ideal schedule "
        f"meets it is C={needed}.",
        "",
        f"where the time of the C={base.concurrency} run goes:",
        f"  {ideal_makespan(base):6.2f} s  ideal schedule, each call holding its slot "
        f"{base.model_latency * 1000:.0f} ms",
        f"  {ideal_makespan(base, many['hold_mean']):6.2f} s  ideal schedule with the "
        f"measured mean slot hold of {many['hold_mean'] * 1000:.0f} ms (median "
        f"{many['hold_median'] * 1000:.0f} ms; {p['one_hold_alone'] * 1000:.0f} ms with one "
        f"call in flight): litellm's per-call work (a thread hop to run its sync "
        f"completion(), logging, cost) runs inside the slot and waits for the busy loop",
        f"  {many['wall']:6.2f} s  measured in-process: arun_dialogues, "
        f"{base.documents} documents, C={base.concurrency}, imports done "
        f"({many['cpu']:.2f} s CPU for {many['calls']} calls)",
        f"  {c16.session:6.2f} s  pytest session (median): + ragas/instructor import on "
        f"the event loop at the first evaluation ({p['import_ragas']:.2f} s alone, it "
        f"stalls every dialogue), pytest per-item work",
        f"  {c16.process:6.2f} s  process: + interpreter, pytest and plugins, conftest "
        f"(litellm import {p['import_litellm']:.2f} s), collection, and pytest's 5 x "
        f"gc.collect() at exit ({p['gc_collect']:.2f} s each with litellm and ragas loaded)",
    ]
    return "\n".join(lines)


def section_what_if(root: Path, repeats: int) -> str:
    """The C=16 configuration with the proposed changes simulated from the conftest."""
    base = Config("as is", 20, 5, 0.2, 0.05, concurrency=16)
    critical = structure(base.turns, base.contexts).critical_path(0.2, 0.05)
    needed = next(c for c in range(1, 10_000) if ideal_makespan(
        Config("", base.documents, base.turns, base.model_latency, base.adapter_latency, c))
        <= 2 * critical)
    configs = [
        base,
        Config("ragas imported in a thread at collection", 20, 5, 0.2, 0.05, 16,
               patch="import"),
        Config("  + gc.freeze() after the imports", 20, 5, 0.2, 0.05, 16,
               patch="import+freeze"),
        Config(f"C={needed} as is", 20, 5, 0.2, 0.05, needed),
        Config(f"C={needed} + import thread + gc.freeze()", 20, 5, 0.2, 0.05, needed,
               patch="import+freeze"),
    ]
    print(f"\n== what if (load {load()}) ==", flush=True)
    measured = measure_all(root, configs, repeats)
    rows = [[m.cfg.label, m.cfg.concurrency, f"{m.process:.2f}", f"{m.session:.2f}",
             f"{m.session - measured[0].session:+.2f}" if m.cfg.concurrency == 16 else "",
             f"{m.process - measured[0].process:+.2f}" if m.cfg.concurrency == 16 else "",
             f"{ideal_makespan(m.cfg):.2f}", f"{m.session / critical:.1f}"] for m in measured]
    return "\n".join([
        table(["20 docs x 5 turns, 200/50 ms", "C", "process s", "session s", "session diff",
               "process diff", "ideal@C s", "session/crit"], rows), "",
        f"median of {repeats} interleaved run(s) each; the changes are simulated from the "
        f"generated conftest; C={needed} is the smallest limit whose ideal schedule meets "
        f"2 x critical path ({2 * critical:.2f} s).",
    ])


def section_tokens(root: Path, repeats: int) -> str:
    print(f"\n== tokens (load {load()}) ==", flush=True)
    rows, per_dialogue = [], []
    for turns in (1, 3, 5, 7):
        cfg = Config(f"turns={turns}", documents=4, turns=turns, model_latency=0.0,
                     adapter_latency=0.0, concurrency=16)
        m = measure(root, cfg, repeats)
        run = m.runs[0]
        tokens = (run.tokens_in + run.tokens_out) / run.dialogues
        per_dialogue.append((turns, tokens))
        rows.append([turns, f"{run.calls / run.dialogues:.0f}",
                     f"{structure(turns, cfg.contexts).calls}",
                     f"{run.tokens_in / run.dialogues:.0f}",
                     f"{run.tokens_out / run.dialogues:.0f}", f"{tokens:.0f}",
                     f"{tokens / turns:.0f}", f"{m.session:.2f}"])
    header = ["turns", "calls/dlg", "calls (structure)", "tokens in/dlg", "tokens out/dlg",
              "tokens/dlg", "tokens/turn", "session s"]
    steps = [f"{b - a:.0f}" for (_, a), (_, b) in itertools.pairwise(per_dialogue)]
    (t1, k1), (tn, kn) = per_dialogue[0], per_dialogue[-1]
    a, b, c = quadratic_fit(per_dialogue)
    return "\n".join([
        table(header, rows), "",
        "4 documents, zero latency, C=16; token counts are exact and deterministic (the "
        "fake model counts words), so one run each. With turns=1 the multi-turn metrics "
        "are left out.",
        f"growth: tokens/dialogue x{kn / k1:.2f} for turns x{tn / t1:.0f}; increments per "
        f"2 more turns: {', '.join(steps)} (constant = linear, growing = superlinear)",
        f"least-squares fit tokens/dialogue = {a:.0f} + {b:.0f} T + {c:.1f} T^2; the T^2 "
        f"term is {c * tn * tn / kn:.0%} of the total at T={tn}: every prompt grows "
        f"linearly with the turns before it (history), so the dialogue's sum is quadratic "
        f"with a small coefficient next to the per-turn cost of the document and templates",
    ])


def quadratic_fit(points: Sequence[tuple[float, float]]) -> tuple[float, float, float]:
    """Least squares y = a + b x + c x^2 (normal equations, Gauss-Jordan)."""
    rows = [[sum(x ** (i + j) for x, _ in points) for j in range(3)]
            + [sum(y * x ** i for x, y in points)] for i in range(3)]
    for col in range(3):
        pivot = rows[col][col]
        rows[col] = [v / pivot for v in rows[col]]
        for other in range(3):
            if other != col:
                factor = rows[other][col]
                rows[other] = [v - factor * w for v, w in zip(rows[other], rows[col])]
    return rows[0][3], rows[1][3], rows[2][3]


def section_startup(root: Path, repeats: int) -> str:
    print(f"\n== start-up (load {load()}) ==", flush=True)
    project = root / "startup"
    project.mkdir(exist_ok=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    for module in range(10):
        body = "".join(f"def test_{module}_{n}():\n    pass\n\n\n" for n in range(20))
        (project / f"test_trivial_{module}.py").write_text(body)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    lean = [*command, *PLUGINS_OFF]  # the same without the other installed plugins
    arms = {
        "with ragdive": command, "-p no:ragdive": [*command, "-p", "no:ragdive"],
        "lean, with ragdive": lean, "lean, -p no:ragdive": [*lean, "-p", "no:ragdive"],
    }
    times: dict[str, list[float]] = {name: [] for name in arms}
    for name, argv in arms.items():  # warm the file system cache
        subprocess.run(argv, cwd=project, capture_output=True, check=True)
    for i in range(repeats):
        # each pair back to back, alternating which goes first, so that load drifts
        # hit both arms alike; the difference is taken pair by pair
        for pair in (list(arms)[:2], list(arms)[2:]):
            for name in (pair if i % 2 == 0 else pair[::-1]):
                start = time.perf_counter()
                done = subprocess.run(arms[name], cwd=project, capture_output=True, text=True, check=False)
                times[name].append(time.perf_counter() - start)
                if done.returncode != 0 or "200 passed" not in done.stdout:
                    raise SystemExit(f"start-up run failed:\n{done.stdout[-2000:]}")
    # the plugin's own import cost, without the noise of whole pytest runs
    imports = []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c",
             "import pytest, _pytest.config; import pytest_ragdive.plugin, "
             "pytest_ragdive.plugin.session"], capture_output=True, text=True, check=True)
        total = 0
        for line in done.stderr.splitlines():
            parts = [part.strip() for part in line.split("|")]
            if len(parts) == 3 and parts[2] in ("pytest_ragdive", "pytest_ragdive.plugin.hooks",
                                                "pytest_ragdive.plugin.session"):
                total += int(parts[1])
        imports.append(total / 1000)
    rows = []
    for on, off in (list(arms)[:2], list(arms)[2:]):
        diffs = [a - b for a, b in zip(times[on], times[off])]
        for name in (on, off):
            t = times[name]
            rows.append([name, len(t), f"{median(t) * 1000:.0f}", f"{min(t) * 1000:.0f}",
                         f"{max(t) * 1000:.0f}",
                         f"{median(diffs) * 1000:+.0f}" if name == on else ""])
    main_diff = median([a - b for a, b in zip(times["with ragdive"], times["-p no:ragdive"])])
    return "\n".join([
        table(["200 trivial tests", "runs", "median ms", "min ms", "max ms",
               "overhead ms (median of paired diffs)"], rows), "",
        f"`python -m pytest -q -p no:cacheprovider` in a project of 10 modules x 20 trivial "
        f"tests; 'lean' adds {' '.join(PLUGINS_OFF[2:])} to both arms.",
        f"plugin start-up overhead: {main_diff * 1000:+.0f} ms (median of {repeats} paired "
        f"differences; medians of the arms differ by "
        f"{(median(times['with ragdive']) - median(times['-p no:ragdive'])) * 1000:+.0f} ms); "
        f"importing pytest_ragdive, .plugin and .session after pytest costs "
        f"{median(imports):.1f} ms (python -X importtime, median of {repeats}), most of it "
        f"asyncio, which pytest_ragdive.plugin.session imports at configure through .runner",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--only", choices=("startup", "concurrency", "tokens", "what-if"))
    parser.add_argument("--what-if", action="store_true",
                        help="also run the C=16 case with the proposed fixes simulated")
    parser.add_argument("--keep", action="store_true", help="keep the generated projects")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(*json.loads(args.probe))))
        return
    root = Path(tempfile.mkdtemp(prefix="ragdive-bench-"))
    print(f"projects in {root}; {os.cpu_count()} cores; python {sys.version.split()[0]}; "
          f"load {load()}", flush=True)
    sections = {
        "startup": lambda: section_startup(root, 5 if args.quick else 11),
        "concurrency": lambda: section_concurrency(root, 1 if args.quick else 3),
        "tokens": lambda: section_tokens(root, 1),
        "what-if": lambda: section_what_if(root, 1 if args.quick else 3),
    }
    reports = []
    try:
        for name, run in sections.items():
            if args.only == name or (args.only is None and name != "what-if") or (
                    name == "what-if" and args.what_if):
                reports.append(f"## {name}\n\n{run()}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("\n\n" + "\n\n".join(reports) + f"\n\n(load at the end {load()})")


if __name__ == "__main__":
    main()
