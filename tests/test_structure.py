"""The package's structure, read from its source with ``ast``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_ragdive"


def test_no_untyped_dict_crosses_plugin_modules() -> None:
    """What one plugin module hands another is a typed record (``plugin/records.py``), not a
    ``dict[str, Any]``: no public function, nor public method of a public class, of
    ``plugin/`` takes or returns one (a JSON object handled inside one module may stay)."""
    untyped = re.compile(r"\b(?:dict|Dict|Mapping|MutableMapping)\[str, *Any\]")
    found = []
    for path in sorted((PACKAGE / "plugin").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [(f.name, f) for f in tree.body
                     if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
        functions += [(f"{c.name}.{f.name}", f) for c in tree.body
                      if isinstance(c, ast.ClassDef) and not c.name.startswith("_")
                      for f in c.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)]
        for name, function in functions:
            if name.rsplit(".", 1)[-1].startswith("_"):
                continue
            arguments = function.args
            annotations = [a.annotation for a in [
                *arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                *filter(None, [arguments.vararg, arguments.kwarg])]]
            text = " ".join(ast.unparse(a) for a in [*annotations, function.returns] if a)
            if untyped.search(text):
                found.append(f"{path.name}:{function.lineno} {name}")
    assert not found, "dict[str, Any] in the signature of:\n  " + "\n  ".join(found)
