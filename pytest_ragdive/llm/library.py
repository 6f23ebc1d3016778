"""litellm as this package uses it: imported once, with its warnings kept to itself, its
long-lived objects out of the garbage collector's view, and its per-loop worker released."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sys
import warnings
from typing import Any


def import_litellm() -> Any:
    """Import litellm (the offline defaults are set by this package's ``__init__``)."""
    module = sys.modules.get("litellm")
    if module is not None and "litellm" in _frozen:  # done: no process-wide change again
        return module
    with warnings.catch_warnings():
        # litellm's own pydantic models warn at import; they are not the user's concern
        warnings.simplefilter("ignore")
        import litellm
    # litellm builds some pydantic models lazily, each warning about its own typing
    warnings.filterwarnings("ignore", message=".*`ReadOnly` qualifier", category=UserWarning)
    litellm.suppress_debug_info = True
    freeze_imports("litellm")
    return litellm


async def release_loop() -> None:
    """End what litellm keeps on the running event loop, before the loop closes.

    litellm 1.7x-1.8x runs one logging worker per process on the first loop that calls
    it, with a queue bound to that loop: at ``asyncio.run``'s close the worker swallows
    the cancellation and the loop waits for ever, and a later loop finds a queue it
    cannot use. Stopping it and dropping its queue lets the next loop start a fresh one;
    the logging still queued is closed unrun.
    """
    module = sys.modules.get("litellm.litellm_core_utils.logging_worker")
    worker = getattr(module, "GLOBAL_LOGGING_WORKER", None)
    task = getattr(worker, "_worker_task", None)
    if task is None or task.get_loop() is not asyncio.get_running_loop():
        return
    with contextlib.suppress(Exception):
        await asyncio.wait_for(worker.stop(), 2.0)  # type: ignore[union-attr]
    queue = getattr(worker, "_queue", None)
    while queue is not None and not queue.empty():
        # litellm's own success logging, which the plugin does not read; dropped unclosed,
        # each would print "coroutine ... was never awaited" into the user's session
        item = queue.get_nowait()
        coroutine = item.get("coroutine") if isinstance(item, dict) else item
        if asyncio.iscoroutine(coroutine):
            coroutine.close()
    if queue is not None:
        worker._queue = None  # type: ignore[union-attr]


_frozen: set[str] = set()


def freeze_imports(library: str) -> None:
    """Once per library: move what its import created out of the garbage collector's view.

    litellm and ragas leave about half a million long-lived objects; without this every
    full collection, and the several at interpreter exit, walks them all (about 3 s).
    """
    if library not in _frozen:
        _frozen.add(library)
        gc.freeze()
