"""Every Sphinx-style reference in the package's docstrings and comments (``:mod:``,
``:func:``, ``:class:``, ...) names something that exists: a module moved or a function
renamed fails here, not in a reader's hands."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_ragdive"
REFERENCE = re.compile(r":(mod|func|class|meth|attr|data|obj|exc):`~?([^`<>]+)`")


def module_name(path: Path) -> str:
    parts = ["pytest_ragdive", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _bound(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body binds: definitions, assignments, imports."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.If):
            names |= _bound(node.body) | _bound(node.orelse)
    return names


def modules() -> set[str]:
    return {module_name(path) for path in PACKAGE.rglob("*.py")}


def index() -> set[str]:
    """The full names of the package's modules, their names and their classes' members."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found.add(module)
        found.update(f"{module}.{name}" for name in _bound(tree.body))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found.update(f"{module}.{node.name}.{name}" for name in _bound(node.body))
    return found


def resolves(reference: str, names: set[str]) -> bool:
    target = reference.strip().lstrip("~.").removesuffix("()")
    if not target.startswith("pytest_ragdive") and "." in target:
        root = target.split(".")[0]
        if importlib.util.find_spec(root) is not None and root not in {
                n.split(".")[1] for n in names if n.count(".") >= 1}:
            return True  # another library's name
    return target in names or any(n.endswith(f".{target}") for n in names)


def references() -> list[tuple[str, str, str]]:
    """(module, role, target) of every reference in the package's source."""
    return [(module_name(path), role, target)
            for path in sorted(PACKAGE.rglob("*.py"))
            for role, target in REFERENCE.findall(path.read_text(encoding="utf-8"))]


def test_every_reference_names_something_that_exists() -> None:
    names, only_modules = index(), modules()
    broken = [f"{module}: :{role}:`{ref}`" for module, role, ref in references()
              if not resolves(ref, only_modules if role == "mod" else names)]
    assert not broken, "\n".join(broken)


def test_the_check_reads_references_and_finds_a_broken_one() -> None:
    names = index()
    assert len(references()) > 50
    assert not resolves(".profiles", modules())  # a module's name, not any name
    assert resolves("~.settings.Setting", names)
    assert resolves("pytest_ragdive.engine.conversation.dialogue.arun_dialogue", names)
    assert resolves("pydantic.BaseModel", names)
    assert not resolves(".profile_files", names)
    assert not resolves("~.questions.ask", names)
