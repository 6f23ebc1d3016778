"""The layout map of docs/index.md, generated from the package tree: every package and module
with the first sentence of its docstring.

    python docs/layout.py          # print the map
    python docs/layout.py --write  # put it into docs/index.md, between its markers

``tests/test_structure.py`` fails when docs/index.md holds another map than this one.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_ragdive"
INDEX = ROOT / "docs" / "index.md"
START, END = "<!-- layout: python docs/layout.py --write -->", "<!-- /layout -->"
WIDTH = 100
NAME_COLUMN = 24


def summary(path: Path) -> str:
    """The first sentence of the module's docstring, on one line; of a package's, what comes
    before its list of modules (": ...")."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(doc.split())
    text = re.sub(r":\w+:`[~.]*(?:[\w.]*\.)?([\w]+)`", r"\1", text)  # :mod:`..x.y` -> y
    text = text.replace("``", "`")
    match = re.match(r"(.+?[.!?])(?:\s|$)", text)
    sentence = match.group(1) if match else text
    if path.name == "__init__.py" and ": " in sentence:
        sentence = sentence.split(": ", 1)[0] + "."
    return sentence


def lines(folder: Path, depth: int = 0) -> list[str]:
    """The map of ``folder``: its modules, then its packages, each with its summary."""
    out: list[str] = []
    modules = sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
    packages = sorted(p for p in folder.iterdir() if (p / "__init__.py").exists())
    for path, label in [*((m, m.stem) for m in modules),
                        *((p / "__init__.py", f"{p.name}/") for p in packages)]:
        indent = "  " * (depth + 1)
        head = f"{indent}{label}".ljust(NAME_COLUMN)
        wrapped = textwrap.wrap(summary(path), WIDTH - NAME_COLUMN) or [""]
        out.append(f"{head}{wrapped[0]}".rstrip())
        out += [" " * NAME_COLUMN + rest for rest in wrapped[1:]]
        if path.name == "__init__.py":
            out += lines(path.parent, depth + 1)
    return out


def layout() -> str:
    """The whole map, as docs/index.md shows it."""
    body = "\n".join(["pytest_ragdive/", *lines(PACKAGE)])
    return f"{START}\n```\n{body}\n```\n{END}"


def written(index: str) -> str:
    """``index`` with its map replaced by :func:`layout`."""
    start, end = index.index(START), index.index(END) + len(END)
    return index[:start] + layout() + index[end:]


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        INDEX.write_text(written(INDEX.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(layout())
