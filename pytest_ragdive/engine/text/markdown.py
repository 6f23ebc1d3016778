"""A document's Markdown tables and lists as sentences, so that facts are chosen from them
and quoted evidence is found in them like any other sentence."""

from __future__ import annotations

import functools
import re

_ROW = re.compile(r"^\s*\|(.*)\|\s*$")
_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?=\S)")
_END = re.compile(r"[.!?:;]$")


def _cells(row: re.Match[str]) -> list[str]:
    return [cell.strip() for cell in row.group(1).split("|")]


def _sentence(text: str) -> str:
    text = text.strip()
    return text if _END.search(text) else f"{text}."


@functools.lru_cache(maxsize=256)
def prose(text: str) -> str:
    """``text`` with each table row a sentence of its own that names its columns ("Day:
    Tuesday, Open: 08:30 to 16:30.") and each list item a sentence without its marker;
    every other line as it is."""
    lines = text.splitlines()
    out: list[str] = []
    header: list[str] = []
    for i, line in enumerate(lines):
        row = _ROW.match(line)
        if row is None:
            header = []
            item = _ITEM.match(line)
            out.append(_sentence(line[item.end():]) if item else line)
        elif _RULE.match(line):
            continue
        elif not header and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            header = _cells(row)
        else:
            cells = _cells(row)
            labelled = [f"{h}: {c}" if h else c for h, c in zip(header, cells) if c]
            out.append(_sentence(", ".join(labelled or cells)))
    return "\n".join(out)
