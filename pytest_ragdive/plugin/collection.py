"""The conversation items of a session, by test function: those collected and those chosen
to run, the band files they are checked against, and the baseline folders an update
cleans of unused bands (as syrupy reports and removes unused snapshots)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TypedDict

import pytest

from .marker import function_key


class Collected(TypedDict):
    """What a worker tells the xdist controller of its collection (plain data)."""

    all_items: dict[str, list[str]]
    chosen: dict[str, list[str]]
    aggregate_files: dict[str, str]
    expected_files: list[str]
    scopes: dict[str, list[str] | None]
    roots: list[str]


class Collection:
    def __init__(self) -> None:
        # function key -> node ids; "all" before deselection, "chosen" after
        self.all_items: dict[str, list[str]] = {}
        self.chosen: dict[str, list[str]] = {}
        self.aggregate_files: dict[str, str] = {}
        self.expected_files: set[str] = set()
        self.scopes: dict[str, list[str] | None] = {}  # baseline dir -> functions, None = all
        self.roots: set[str] = set()  # the __ragdive__ folders beside collected modules
        self._items: dict[str, list[pytest.Item]] = {}

    def add(self, item: pytest.Item, partial: set[str]) -> None:
        """A collected conversation item; ``partial`` holds the files the command line
        names single tests of (their baseline folders are cleaned of those tests only)."""
        from . import bands

        key = function_key(item)
        self.all_items.setdefault(key, []).append(item.nodeid)
        path = bands.item_path(item)
        self.expected_files.add(str(path))
        self.roots.add(str(path.parent.parent))
        self.aggregate_files[key] = str(bands.aggregate_path(item))
        self.expected_files.add(self.aggregate_files[key])
        is_partial = any(Path(p).resolve() == item.path.resolve() for p in partial)
        functions = self.scopes.setdefault(str(path.parent), [] if is_partial else None)
        if functions is not None:
            functions.append(path.name.split("[", 1)[0].removesuffix(".json"))

    def choose(self, item: pytest.Item) -> None:
        """A conversation item that is to run (after deselection)."""
        self.chosen.setdefault(function_key(item), []).append(item.nodeid)
        self._items.setdefault(function_key(item), []).append(item)

    def later(self, item: pytest.Item) -> list[pytest.Item]:
        """The chosen items of ``item``'s test function that run after it."""
        items = self._items.get(function_key(item), [])
        return items[items.index(item) + 1:] if item in items else []

    def output(self) -> Collected:
        """What a worker tells the xdist controller of its collection."""
        return {
            "all_items": self.all_items,
            "chosen": self.chosen,
            "aggregate_files": self.aggregate_files,
            "expected_files": sorted(self.expected_files),
            "scopes": self.scopes,
            "roots": sorted(self.roots),
        }

    def merge(self, output: Collected) -> None:
        # every worker collects the same items; one copy of the collection is enough
        self.all_items = output["all_items"]
        self.chosen = output["chosen"]
        self.aggregate_files = output["aggregate_files"]
        self.expected_files = set(output["expected_files"])
        self.scopes = output["scopes"]
        self.roots = set(output.get("roots", []))

    def orphaned(self) -> list[str]:
        """Band files whose test module is gone: in a ``__ragdive__/<module>/`` folder beside
        a collected module, where ``<module>.py`` no longer exists (deleted or renamed)."""
        found: list[str] = []
        for root in sorted(Path(r) for r in self.roots):
            if not root.is_dir():
                continue
            for folder in sorted(p for p in root.iterdir() if p.is_dir()):
                if not (root.parent / f"{folder.name}.py").exists():
                    found += [str(f) for f in sorted(folder.glob("*.json"))]
        return found


def remove(paths: Iterable[str]) -> None:
    """Delete unused band files, and their module's folder once it is empty."""
    folders = set()
    for path in map(Path, paths):
        path.unlink(missing_ok=True)
        folders.add(path.parent)
    for folder in folders:
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
