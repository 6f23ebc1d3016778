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
from pathlib import Path
from typing import Any

from .workload import COMMON, Config

#: the command-line entry that runs :func:`probe` when given ``--probe``
ENTRY = Path(__file__).resolve().parents[1] / "bench.py"


def probe(turns: int, contexts: int, model_latency: float, adapter_latency: float,
          documents: int, concurrency: int) -> dict[str, Any]:
    """Timings and call counts of the engine run in this process (see the module)."""
    import gc

    from pytest_ragdive.llm import scripted as testing
    from pytest_ragdive.llm.cache import ResponseCache
    from pytest_ragdive.llm.cached_calls import CachedCalls
    from pytest_ragdive.llm.client import LLMClient
    from pytest_ragdive.llm.library import import_litellm

    out: dict[str, Any] = {}
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

    space: dict[str, Any] = {}
    exec(COMMON, space)  # noqa: S102 - our own source, the conftest's body
    ragdive = space["ragdive"]

    # when each call of the timed model ended: the fake provider builds its reply once
    # the latency is over, through testing._reply (looked up at call time)
    stamps: list[tuple[str, float]] = []
    reply = testing._reply

    def stamped_reply(model: str, kwargs: Any) -> tuple[str, float | None]:
        if model == "fake/probe-latency":
            stamps.append((testing.schema_name(kwargs), asyncio.get_running_loop().time()))
        return reply(model, kwargs)

    testing._reply = stamped_reply  # type: ignore[assignment]

    # how long each model call holds its place among the calls in flight
    holds: list[float] = []
    slot = CachedCalls._slot

    @contextlib.asynccontextmanager
    async def timed_slot(self: Any, model: Any) -> Any:
        async with slot(self, model):
            begin = asyncio.get_running_loop().time()
            try:
                yield
            finally:
                holds.append(asyncio.get_running_loop().time() - begin)

    CachedCalls._slot = timed_slot  # type: ignore[method-assign]
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
                       "hold_mean": statistics.mean(holds),
                       "hold_median": statistics.median(holds)}
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
    """:func:`probe` for ``cfg``, in a fresh interpreter."""
    args = json.dumps([cfg.turns, cfg.contexts, cfg.model_latency, cfg.adapter_latency,
                       cfg.documents, cfg.concurrency])
    done = subprocess.run([sys.executable, str(ENTRY), "--probe", args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"probe failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
