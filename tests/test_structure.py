"""The package's structure, read from its source with ``ast``."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_ragdive"
ENGINE = PACKAGE / "engine"
#: the engine's packages: the paper's three stages, the dialogue that runs them, the roles,
#: and what they share
STAGES = {"generation", "validation", "evaluation"}
ENGINE_PACKAGES = STAGES | {"conversation", "roles", "base", "documents", "text"}
LONGEST_FUNCTION = 60
LONGEST_MODULE = 320


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_every_engine_module_is_in_its_stage_role_or_shared_package() -> None:
    top = {p.name for p in ENGINE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert top == {"__init__.py", *ENGINE_PACKAGES}, (
        "engine/ holds only its packages; put a module into the one whose job it does")
    for name in ENGINE_PACKAGES:
        init = ENGINE / name / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"engine/{name}/__init__.py says what the package does and hands on"
        assert not [n for n in ast.parse(init.read_text(encoding="utf-8")).body
                    if not isinstance(n, ast.Expr)], f"engine/{name}/__init__.py holds no code"
        assert {p.parent for p in (ENGINE / name).rglob("*.py")} == {ENGINE / name}
    for stage in STAGES:
        doc = ast.get_docstring(ast.parse((ENGINE / stage / "__init__.py").read_text()))
        assert doc and doc.startswith("Stage ") and "Hands on" in " ".join(doc.split())


def test_every_built_in_role_is_one_module_behind_the_protocol() -> None:
    from pytest_ragdive.engine.roles import registry
    from pytest_ragdive.engine.roles.role import Role

    modules = {p.stem for p in (ENGINE / "roles").glob("*.py")} - {"__init__", "registry", "role"}
    by_module = {r.__class__.__module__.rsplit(".", 1)[-1] for r in registry.BUILTIN}
    assert by_module == modules and all(isinstance(r, Role) for r in registry.BUILTIN)
    # a role's own metric is the only place its judge is written
    from pytest_ragdive.engine.base.metrics import ROLE_METRICS
    assert ROLE_METRICS == {r.metric.name: r.name for r in registry.BUILTIN if r.metric}


def test_no_function_or_module_is_too_long() -> None:
    long = [f"{p.relative_to(ROOT)}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1} lines)"
            for p in sorted(PACKAGE.rglob("*.py")) for f in _functions(p)
            if (f.end_lineno or 0) - f.lineno + 1 > LONGEST_FUNCTION]
    big = [f"{p.relative_to(ROOT)} ({n} lines)" for p in sorted(PACKAGE.rglob("*.py"))
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > LONGEST_MODULE]
    assert not long and not big, "split these:\n  " + "\n  ".join(long + big)


#: the most parameters a function takes; what one step hands the next is one typed value
MOST_PARAMETERS = 8
#: the public signatures users call with keywords, which stay as they are
WIDE_PUBLIC = {"pytest_ragdive/engine/conversation/dialogue.py:arun_dialogue",
               "pytest_ragdive/adapters/http.py:__init__"}


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    given = function.args
    names = [*given.posonlyargs, *given.args, *given.kwonlyargs]
    return len(names) - bool(names and names[0].arg in ("self", "cls"))


def test_no_function_takes_more_than_eight_parameters() -> None:
    wide = [f"{where} ({_parameters(f)} parameters)"
            for p in sorted(PACKAGE.rglob("*.py")) for f in _functions(p)
            if _parameters(f) > MOST_PARAMETERS
            and (where := f"{p.relative_to(ROOT)}:{f.name}") not in WIDE_PUBLIC]
    assert not wide, "pass a typed value instead:\n  " + "\n  ".join(wide)


def test_the_layout_map_in_the_docs_is_the_tree() -> None:
    spec = importlib.util.spec_from_file_location("layout", ROOT / "docs" / "layout.py")
    assert spec and spec.loader
    layout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layout)
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert layout.written(index) == index, "docs/index.md is out of date: python docs/layout.py --write"


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
