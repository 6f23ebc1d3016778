#!/usr/bin/env python3
"""Remove the example's response-cache entries that no committed replay reads.

    python benchmarks/prune_cache.py            # list what would go
    python benchmarks/prune_cache.py --delete

After a re-recording, a cache folder keeps the entries of calls that are no longer made
(another prompt, a check that is no longer asked). This replays, in process, the example's
update and check at the baseline's seeds (``.ragdive/cache``) and every session of ``gate.py``
(``.ragdive/unseen``) under both rules and the beyond suite's update (``.ragdive/beyond``),
notes every entry read, and removes the others. The sessions run in a copy of the example, so
the committed band files are left as they are.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"
sys.path.insert(0, str(EXAMPLE))

from recorded import CHECKS, UNSEEN, VARIANTS

BEYOND = ".ragdive/beyond"

from pytest_ragdive.llm.cache import ResponseCache, request_key


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--delete", action="store_true")
    args = parser.parse_args(argv)
    read: set[Path] = set()
    load = ResponseCache.load

    def noting(self: ResponseCache, request: dict) -> dict | None:
        reply = load(self, request)
        if reply is not None:
            read.add(self.path(request_key(request)).resolve())
        return reply

    ResponseCache.load = noting  # type: ignore[method-assign]
    sessions: list[tuple[dict[str, str], str, int, str | None, str, list[str]]] = [
        ({}, ".ragdive/cache", 0, None, "update", []),
        ({}, ".ragdive/cache", 0, None, "permutation", []),
        ({}, BEYOND, 0, None, "update", ["beyond"])]
    sessions += [(VARIANTS[c.variant], UNSEEN, c.seed, c.select, rule, []) for c in CHECKS
                 for rule in ("permutation", "band")]
    copy = Path(tempfile.mkdtemp()) / "example"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    os.chdir(copy)
    for env, cache, seed, select, rule, paths in sessions:
        rule_args = ["--ragdive-update"] if rule == "update" else [f"--ragdive-verdict={rule}"]
        with mock.patch.dict(os.environ, env):  # the bot reads its knobs
            pytest.main([*paths, "-m", "ragdive", "-q", "-p", "no:xdist",
                         "--ragdive-record-mode=none", f"--ragdive-cache-dir={cache}",
                         f"--ragdive-seed={seed}", *rule_args,
                         *(["-k", select] if select else [])])
    folders = (".ragdive/cache", UNSEEN, BEYOND)
    unread = [EXAMPLE / p.relative_to(copy) for folder in folders
              for p in sorted((copy / folder).rglob("*.json")) if p.resolve() not in read]
    by_folder = {f: sum(1 for p in unread if f in str(p)) for f in folders}
    print(f"\n{len(read)} entries read, {len(unread)} not read {by_folder}")
    for path in unread:
        if args.delete:
            path.unlink()
        else:
            print(f"  {path.relative_to(EXAMPLE)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
