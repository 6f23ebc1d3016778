"""The in-process probe: one instrumented ``arun_dialogue`` with latency, to check the
critical path against the engine, then all dialogues under the limit and at zero latency,
for the slot hold and the engine's CPU time per model call. It runs in a subprocess of its
own (``bench.py --probe``), so that its imports and patches stay out of the benchmark."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .workload import COMMON, Config

#: the command-line entry that runs :func:`probe` when given ``--probe``
ENTRY = Path(__file__).resolve().parents[1] / "bench.py"


def import_times() -> dict[str, float]:
    """Seconds to import litellm, then ragas' metrics, then one full garbage collection."""
    import gc

    from pytest_ragdive.llm.library import import_litellm

    out: dict[str, float] = {}
    start = time.perf_counter()
    import_litellm()
    out["import_litellm"] = time.perf_counter() - start
    start = time.perf_counter()
    import instructor  # noqa: F401 - what ragas_metrics.RagasMetrics imports first
    import ragas.llms
    import ragas.metrics.collections  # noqa: F401
    out["import_ragas"] = time.perf_counter() - start
    start = time.perf_counter()
    gc.collect()
    out["gc_collect"] = time.perf_counter() - start  # pytest runs 5 at exit
    return out


@dataclass
class Instruments:
    """When each call of the timed model ended, and how long each call held its place among
    the calls in flight."""

    stamps: list[tuple[str, float]] = field(default_factory=list)
    holds: list[float] = field(default_factory=list)

    def install(self) -> None:
        from pytest_ragdive.llm import scripted as testing
        from pytest_ragdive.llm.cached_calls import CachedCalls

        # the fake provider builds its reply once the latency is over, through
        # testing._reply (looked up at call time)
        reply, slot, stamps, holds = testing._reply, CachedCalls._slot, self.stamps, self.holds

        def stamped_reply(model: str, kwargs: Any) -> tuple[str, float | None]:
            if model == "fake/probe-latency":
                stamps.append((testing.schema_name(kwargs), asyncio.get_running_loop().time()))
            return reply(model, kwargs)

        @contextlib.asynccontextmanager
        async def timed_slot(self: Any, model: Any) -> Any:
            async with slot(self, model):
                begin = asyncio.get_running_loop().time()
                try:
                    yield
                finally:
                    holds.append(asyncio.get_running_loop().time() - begin)

        testing._reply = stamped_reply  # type: ignore[assignment]
        CachedCalls._slot = timed_slot  # type: ignore[method-assign]


def waves_after(ends: list[float], gap: float) -> list[list[float]]:
    """End times grouped into waves: a call ending ``gap`` or more after the previous one
    starts a new wave."""
    waves = [[ends[0]]]
    for t in ends[1:]:
        if t - waves[-1][-1] < gap:
            waves[-1].append(t)
        else:
            waves.append([t])
    return waves


@dataclass
class Probe:
    """The engine's dialogues on the conftest's scripted parts, in this process."""

    turns: int
    contexts: int
    model_latency: float
    adapter_latency: float
    documents: int
    concurrency: int
    tmp: Path
    instruments: Instruments
    space: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        exec(COMMON, self.space)  # noqa: S102 - our own source, the conftest's body
        self.docs = self.space["make_documents"](self.documents + 2)

    def model(self, name: str, latency: float = 0.0) -> Any:
        from pytest_ragdive.llm import scripted as testing

        return testing.scripted(self.space["RESPONDERS"], name=name, latency=latency)

    def bot(self, latency: float, answers: list[float] | None = None) -> Any:
        return self.space["Bot"](latency, self.contexts, answers)

    async def one(self) -> dict[str, Any]:
        """One dialogue with latency and no binding limit: its wall time is the critical path
        plus the CPU time spent along it."""
        from pytest_ragdive.llm.cache import ResponseCache
        from pytest_ragdive.llm.client import LLMClient

        ragdive, loop, answers = self.space["ragdive"], asyncio.get_running_loop(), []
        stamps, holds = self.instruments.stamps, self.instruments.holds
        holds.clear()
        client = LLMClient(ResponseCache(self.tmp / "one"), concurrency=10_000)
        t0 = loop.time()
        dialogue = await ragdive.arun_dialogue(
            self.docs[-2], self.bot(self.adapter_latency, answers),
            judges=ragdive.Judges(self.model("probe-latency", self.model_latency)),
            turns=self.turns, client=client)
        out: dict[str, Any] = {
            "one_wall": loop.time() - t0, "one_errors": dialogue.errors,
            "one_calls": dialogue.usage.calls, "one_hits": dialogue.usage.cache_hits,
            "schemas": dict(Counter(schema for schema, _ in stamps))}
        # model calls that ended between one adapter answer and the next, and the waves
        # they ended in (the validator's questions are asked at once: one wave)
        gap = self.model_latency / 2
        per_turn = [sorted(t for _, t in stamps if lo < t <= hi)
                    for lo, hi in itertools.pairwise([t0, *answers])]
        out["calls_per_turn"] = [len(ends) for ends in per_turn]
        out["waves_per_turn"] = [len(waves_after(ends, gap)) if ends else 0 for ends in per_turn]
        # the first turn's calls each held a slot alone when each ended in a wave of its own
        alone = len(per_turn[0]) if out["waves_per_turn"][0] == len(per_turn[0]) else 1
        out["one_hold_alone"] = statistics.mean(holds[:max(alone, 1)])
        # evaluation waves: calls that ended after the last answer, grouped by end time
        waves = waves_after(sorted(t for _, t in stamps if t > answers[-1]), gap)
        out["eval_waves"] = [len(w) for w in waves]
        out["eval_wave_ends"] = [round(w[-1] - answers[-1], 3) for w in waves]
        return out

    async def many(self, n: int, name: str, latency: float, adapter_latency: float,
                   cache: str) -> dict[str, Any]:
        """``n`` dialogues at once under the limit, as the plugin runs them, minus pytest."""
        ragdive, loop = self.space["ragdive"], asyncio.get_running_loop()
        cpu0, t0 = time.process_time(), loop.time()
        done = await ragdive.arun_dialogues(
            self.docs[:n], self.bot(adapter_latency),
            judges=ragdive.Judges(self.model(name, latency)), concurrency=self.concurrency,
            turns=self.turns, cache_dir=self.tmp / cache)
        return {"dialogues": n, "calls": sum(d.usage.calls for d in done),
                "cpu": time.process_time() - cpu0, "wall": loop.time() - t0}

    async def run(self) -> dict[str, Any]:
        ragdive = self.space["ragdive"]
        # warm-up: builds litellm's and instructor's lazy state
        await ragdive.arun_dialogue(self.docs[-1], self.bot(0),
                                    judges=ragdive.Judges(self.model("probe-warm")), turns=2,
                                    cache_dir=self.tmp / "warm")
        out = await self.one()
        holds = self.instruments.holds
        holds.clear()
        many = await self.many(self.documents, "probe-many", self.model_latency,
                               self.adapter_latency, "many")
        out["many"] = {"wall": many["wall"], "cpu": many["cpu"], "calls": many["calls"],
                       "hold_mean": statistics.mean(holds),
                       "hold_median": statistics.median(holds)}
        # engine CPU per model call: the same dialogues with zero latency
        for n, key in ((1, "cpu_one"), (self.documents, "cpu_many")):
            out[key] = await self.many(n, f"probe-fast-{n}", 0.0, 0, key)
        return out


def probe(turns: int, contexts: int, model_latency: float, adapter_latency: float,
          documents: int, concurrency: int) -> dict[str, Any]:
    """Timings and call counts of the engine run in this process (see the module)."""
    out: dict[str, Any] = import_times()
    instruments = Instruments()
    tmp = Path(tempfile.mkdtemp(prefix="ragdive-probe-"))
    run = Probe(turns, contexts, model_latency, adapter_latency, documents, concurrency, tmp,
                instruments)
    instruments.install()
    out.update(asyncio.run(run.run()))
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def run_probe(cfg: Config) -> dict[str, Any]:
    """:func:`probe` for ``cfg``, in a fresh interpreter."""
    args = json.dumps([cfg.turns, cfg.contexts, cfg.model_latency, cfg.adapter_latency,
                       cfg.documents, cfg.concurrency])
    done = subprocess.run([sys.executable, str(ENTRY), "--probe", args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"probe failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
