"""The package's layers: imports point one way, plugin -> adapters -> engine -> llm (the
calibration command's work beside the plugin, above the engine), inside the engine one stage
order, and never in a circle.

Every import statement counts, also those inside functions and under TYPE_CHECKING: a
lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_ragdive"

#: layer -> the layers (and third-party roots) it must not import
FORBIDDEN = {
    "adapters": ("pytest_ragdive.plugin", "pytest", "_pytest", "syrupy", "xdist"),
    "engine": ("pytest_ragdive.plugin", "pytest_ragdive.adapters", "pytest_ragdive.calibration",
               "pytest", "_pytest", "syrupy", "xdist"),
    "calibration": ("pytest_ragdive.plugin", "pytest_ragdive.adapters", "pytest", "_pytest",
                    "syrupy", "xdist"),
    "llm": ("pytest_ragdive.plugin", "pytest_ragdive.engine", "pytest_ragdive.adapters",
            "pytest", "_pytest", "syrupy"),
}


def module_name(path: Path) -> str:
    parts = ["pytest_ragdive", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` imports."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if node.module:
                found.add(base)
            # "from . import bands" imports a module, not a name
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def with_parents(name: str) -> set[str]:
    """``name`` and the packages whose ``__init__`` importing it runs first."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


def graph() -> dict[str, set[str]]:
    """module -> the package's modules that importing it runs: those it imports and their
    parent packages (whose ``__init__`` runs first)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for target in imports(path) for m in with_parents(target)
                   if m in modules and m != name and not name.startswith(m + ".")}
            for name, path in modules.items()}


def test_the_package_has_three_layers() -> None:
    layers = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert {"adapters", "engine", "llm", "plugin"} <= layers


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    wrong = []
    for path in (PACKAGE / layer).rglob("*.py"):
        for target in imports(path):
            if any(target == f or target.startswith(f + ".") for f in FORBIDDEN[layer]):
                wrong.append(f"{module_name(path)} imports {target}")
    assert not wrong


#: the engine's packages from the ground up: each imports only those before it. The roles
#: extend the stages, so they stand above them.
STAGES = ("base", "text", "documents", "generation", "validation", "evaluation", "roles",
          "conversation")
#: the imports that still run upward, each until the roles are plug-ins (issue 63): the
#: stages read the registered roles, and base's settings validate a role's name
UPWARD = {
    ("pytest_ragdive.engine.base.settings", "pytest_ragdive.engine.roles.registry"),
    ("pytest_ragdive.engine.evaluation.binary", "pytest_ragdive.engine.roles"),
    ("pytest_ragdive.engine.evaluation.binary", "pytest_ragdive.engine.roles.registry"),
    ("pytest_ragdive.engine.evaluation.evaluator", "pytest_ragdive.engine.roles"),
    ("pytest_ragdive.engine.evaluation.evaluator", "pytest_ragdive.engine.roles.registry"),
    ("pytest_ragdive.engine.generation.generator", "pytest_ragdive.engine.roles.role"),
    ("pytest_ragdive.engine.validation.validator", "pytest_ragdive.engine.roles.role"),
}


def stage(module: str) -> int | None:
    parts = module.split(".")
    if parts[:2] != ["pytest_ragdive", "engine"] or len(parts) < 3:
        return None
    return STAGES.index(parts[2]) if parts[2] in STAGES else None


def upward() -> set[tuple[str, str]]:
    """(module, target) of every import from an engine stage to a later one."""
    found = set()
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    for path in (PACKAGE / "engine").rglob("*.py"):
        name = module_name(path)
        for target in imports(path) & modules:
            here, there = stage(name), stage(target)
            if here is not None and there is not None and there > here:
                found.add((name, target))
    return found


def test_every_engine_package_is_a_stage() -> None:
    packages = {p.name for p in (PACKAGE / "engine").iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(STAGES)


def test_the_engine_stages_import_only_downward() -> None:
    assert upward() <= UPWARD, sorted(upward() - UPWARD)
    assert UPWARD <= upward(), f"no longer upward, drop from UPWARD: {sorted(UPWARD - upward())}"


def circles(edges: dict[str, set[str]]) -> list[str]:
    found = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                found.append(" -> ".join([*path[path.index(nxt):], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def test_no_import_circle() -> None:
    assert not circles(graph())


def test_the_checks_see_imports_and_circles() -> None:
    edges = graph()
    assert "pytest_ragdive.engine.base.models" in edges["pytest_ragdive.engine.conversation.dialogue"]
    assert "pytest_ragdive.llm.client" in edges["pytest_ragdive.engine.conversation.dialogue"]
    assert "pytest_ragdive.plugin.bands" in edges["pytest_ragdive.plugin.aggregate"]
    # importing pytest_ragdive.llm.embedded.weights (in a function) runs
    # pytest_ragdive.llm.embedded first
    assert "pytest_ragdive.llm.embedded" in edges["pytest_ragdive.plugin.fixtures"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a -> b -> c -> a"]


LOADED = '''
import sys

def pytest_sessionfinish(session):
    mine = sorted(m for m in sys.modules if m.startswith("pytest_ragdive"))
    print("\\nloaded:", " ".join(mine))
    print("third-party:", " ".join(sorted(m for m in ("litellm", "ragas", "llama_cpp", "numpy")
                                          if m in sys.modules)) or "none")
'''


def test_a_plain_pytest_run_loads_no_model_layer(pytester: pytest.Pytester) -> None:
    """A project's tests that are not conversation tests pay for the plugin's hooks,
    options and marker only: no model, no litellm, no ragas."""
    pytester.makeconftest(LOADED)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    loaded = next(line for line in result.outlines if line.startswith("loaded:")).split()[1:]
    assert not [m for m in loaded if m.startswith("pytest_ragdive.llm.embedded")], loaded
    assert "pytest_ragdive.llm.client" not in loaded
    result.stdout.fnmatch_lines(["third-party: none"])
