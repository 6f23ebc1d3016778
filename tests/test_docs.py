"""Docs that cannot drift: every option, ini name, file, link, module and ``python -m``
command that the README and the docs name exists, and the tables they quote from a benchmark
or from pyproject.toml are the files' own. Nothing heavy is imported: modules are found with
``importlib.util.find_spec`` and read as source."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md",
        *sorted((ROOT / "docs").glob("*.md"))]
#: folders a path may start with: this repository's, or the package's and the tests' own
ANCHORS = [ROOT, ROOT / "pytest_ragdive", ROOT / "tests", ROOT / "benchmarks", ROOT / "docs"]
TOP = {"pytest_ragdive", "docs", "benchmarks", "tests", "example_project", "prompts", ".ci",
       "engine", "llm", "plugin", "adapters", "faults", "ci", "scheduling", "judge_cases",
       "beyond"}
#: files a doc links before they land (another change writes them)
PENDING = {ROOT / "docs" / "judges.md"}
GATE_TABLE = ROOT / "benchmarks" / "results" / "gate.md"


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def rel(doc: Path) -> str:
    return str(doc.relative_to(ROOT))


def named(pattern: str) -> Iterable[tuple[Path, str]]:
    """(doc, match) for every match of ``pattern`` in every doc."""
    for doc in DOCS:
        for match in re.findall(pattern, text(doc)):
            yield doc, match


class _Registry:
    """A stand-in for pytest's parser: it keeps the names the plugin registers."""

    def __init__(self) -> None:
        self.options: set[str] = set()
        self.ini: set[str] = set()

    def getgroup(self, *args: Any) -> _Registry:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.update(names)

    def addini(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.ini.add(name)


def registered() -> _Registry:
    """What the plugin registers: its options and ini names, as pytest would see them."""
    from pytest_ragdive.plugin.options import add_options

    registry = _Registry()
    add_options(registry)  # type: ignore[arg-type]
    return registry


def unknown_options(options: set[str]) -> list[str]:
    return sorted({f"{rel(d)}: {m}" for d, m in named(r"--ragdive-[a-z-]*[a-z]")
                   if m not in options})


def test_every_command_line_option_the_docs_name_is_registered() -> None:
    assert not unknown_options(registered().options), unknown_options(registered().options)


def test_a_removed_option_would_be_caught() -> None:
    """The check above fails when an option the docs name is no longer registered."""
    options = registered().options - {"--ragdive-json"}
    assert not unknown_options(registered().options), unknown_options(registered().options)
    assert any(m.endswith(": --ragdive-json") for m in unknown_options(options))


def test_every_ini_name_and_fixture_the_docs_name_exists() -> None:
    from pytest_ragdive.plugin import hooks

    known = registered().ini | set(hooks.__all__)
    missing = sorted({f"{rel(d)}: {m}" for d, m in named(r"\bragdive_[a-z_]*[a-z]\b")
                      if m not in known})
    assert not missing, missing


def _exists(path: str, doc: Path) -> bool:
    path = path.split("::", 1)[0].split("#", 1)[0].rstrip("/")
    candidates = [doc.parent / path, *(anchor / path for anchor in ANCHORS)]
    return any(c.exists() or c in PENDING for c in candidates)


def test_every_file_the_docs_name_exists() -> None:
    missing = []
    for doc, span in named(r"`([^`\s]+)`"):
        first = span.split("/", 1)[0]
        if "/" in span and first in TOP and not re.search(r"[<*{$]", span) \
                and not _exists(span, doc):
            missing.append(f"{rel(doc)}: {span}")
    assert not missing, missing


def test_every_test_the_docs_name_exists() -> None:
    missing = []
    for doc, (path, name) in named(r"`?([\w/]+\.py)::(\w+)"):
        files = [a / path for a in ANCHORS if (a / path).is_file()]
        if not files and path.split("/", 1)[0] not in TOP:
            continue  # a file of the reader's project: test_bot.py::test_bot
        if not any(re.search(rf"def {name}\b", text(f)) for f in files):
            missing.append(f"{rel(doc)}: {path}::{name}")
    assert not missing, missing


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    plain = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return plain.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    found: set[str] = set()
    outside_code = re.sub(r"```.*?```", "", text(doc), flags=re.DOTALL)
    for heading in re.findall(r"^#{1,6} (.+)$", outside_code, re.MULTILINE):
        base, n = slug(heading), 0
        while (f"{base}-{n}" if n else base) in found:
            n += 1
        found.add(f"{base}-{n}" if n else base)
    return found


def test_every_relative_link_and_its_anchor_resolves() -> None:
    broken = []
    for doc, target in named(r"\]\(([^)\s]+)\)"):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if file in PENDING and not file.exists():
            continue
        if not file.exists() or (anchor and anchor not in anchors(file)):
            broken.append(f"{rel(doc)}: {target}")
    assert not broken, broken


def locate(dotted: str) -> tuple[Path | None, list[str]]:
    """The source file of the longest module prefix of ``dotted`` and the names left over,
    found without importing anything."""
    parts = dotted.split(".")
    spec = importlib.util.find_spec(parts[0])
    if spec is None or spec.origin is None:
        return None, parts
    source, places = Path(spec.origin), list(spec.submodule_search_locations or [])
    for i, part in enumerate(parts[1:], start=1):
        folder = next((Path(p) / part for p in places if (Path(p) / part).is_dir()), None)
        module = next((Path(p) / f"{part}.py" for p in places if (Path(p) / f"{part}.py")
                       .is_file()), None)
        if folder is not None and (folder / "__init__.py").exists():
            source, places = folder / "__init__.py", [str(folder)]
        elif module is not None:
            source, places = module, []
        else:
            return source, parts[i:]
    return source, []


def defines(source: Path, name: str) -> bool:
    """Whether a module's source defines ``name`` at top level (or serves it lazily)."""
    tree = ast.parse(text(source))
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef,
                                                         ast.AsyncFunctionDef))}
    names |= {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
              for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
              if isinstance(t, ast.Name)}
    lazy = {c.value for c in ast.walk(tree) if isinstance(c, ast.Constant)}
    return name in names or name in lazy


def test_every_module_the_docs_name_is_importable_by_name() -> None:
    missing = []
    for doc, dotted in named(r"\b(pytest_ragdive(?:\.\w+)+)"):
        source, rest = locate(dotted)
        if source is None or len(rest) > 1 or (rest and not defines(source, rest[0])):
            missing.append(f"{rel(doc)}: {dotted}")
    assert not missing, missing


def test_every_python_m_entry_point_exists_with_its_options() -> None:
    from pytest_ragdive.__main__ import main

    missing = []
    for doc, (module, rest) in named(r"python3? -m ([\w.]+)([^\n`]*)"):
        source, left = locate(module)
        if source is None or left:
            missing.append(f"{rel(doc)}: python -m {module}")
        elif module == "pytest_ragdive":
            command = (re.findall(r"^ ([a-z]+)", rest) or ["--help"])[0]
            usage = io.StringIO()
            with contextlib.redirect_stdout(usage), pytest.raises(SystemExit) as done:
                main([command, "--help"] if command != "--help" else ["--help"])
            flags = set(re.findall(r"--[a-z][a-z-]*", rest))
            if done.value.code != 0 or not flags <= set(re.findall(r"--[a-z-]+", usage.getvalue())):
                missing.append(f"{rel(doc)}: python -m pytest_ragdive{rest}")
    assert not missing, missing


def test_every_benchmark_script_and_its_options_exist() -> None:
    missing = []
    for doc, (script, rest) in named(r"python3? (benchmarks/[\w/]+\.py)([^\n`]*)"):
        path = ROOT / script
        flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest.split(" -- ")[0]))
        if not path.is_file() or any(f'"{f}"' not in text(path) for f in flags):
            missing.append(f"{rel(doc)}: python {script}{rest}")
    assert not missing, missing


def block(doc: Path, name: str) -> str | None:
    """The text between ``<!-- name -->`` and ``<!-- /name -->``, if the doc has them."""
    match = re.search(rf"<!-- {re.escape(name)} -->\n(.*?)<!-- /{name.split(':')[0]} -->",
                      text(doc), re.DOTALL)
    return match[1] if match else None


def test_the_example_gate_table_is_the_file_gate_py_writes() -> None:
    blocks = {rel(doc): block(doc, "example-gate-table") for doc in DOCS}
    shown = {name: b for name, b in blocks.items() if b is not None}
    assert "README.md" in shown, "the README lost its <!-- example-gate-table --> block"
    if not GATE_TABLE.exists():
        assert all(not b.strip() for b in shown.values()), (
            f"{GATE_TABLE.relative_to(ROOT)} is missing: run python benchmarks/gate.py "
            f"--markdown {GATE_TABLE.relative_to(ROOT)} --fill README.md benchmarks/README.md")
        pytest.skip("the example's gate table is not measured yet (a placeholder)")
    for name, content in shown.items():
        assert content == text(GATE_TABLE), (
            f"{name}'s table is not {GATE_TABLE.relative_to(ROOT)}: run python benchmarks/"
            f"gate.py --markdown ... --fill {name}, or copy the file into the block")


def profile_table(model: str) -> str:
    """The rows of a judge model's profile as benchmarks/README.md shows them."""
    profile = json.loads(text(ROOT / "pytest_ragdive" / "engine" / "base" / "profiles.json"))
    rows = [("| judgement | cases | balanced accuracy [95% CI] | AUC | threshold | informative "
             "| measured on |"), "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, j in sorted(profile["profiles"][model]["judgements"].items()):
        ci = f" [{j['interval'][0]:.3f}, {j['interval'][1]:.3f}]" if j["interval"] else ""
        auc = f"{j['auc']:.3f}" if j["auc"] is not None else "–"
        threshold = f"{j['threshold']:g}" if j["threshold"] is not None else "–"
        rows.append(f"| {name} | {j['cases']} | {j['balanced_accuracy']:.3f}{ci} | {auc} | "
                    f"{threshold} | {'yes' if j['informative'] else 'no'} | {j['measured']} |")
    return "\n".join(rows) + "\n"


def test_the_judges_table_is_the_shipped_profile() -> None:
    model = "embedded/qwen2.5-coder-1.5b"
    shown = block(ROOT / "benchmarks" / "README.md", f"profile-table: {model}")
    expected = profile_table(model)
    assert shown == expected, f"benchmarks/README.md's profile table should be:\n{expected}"


def test_the_compatibility_table_is_pyproject_and_the_lock() -> None:
    tomllib = pytest.importorskip("tomllib")
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads(text(ROOT / "pyproject.toml"))["project"]
    needs = {canonicalize_name(r.name): str(r.specifier) for r in map(Requirement, [
        *project["dependencies"], *project["optional-dependencies"]["embedded"]])}
    pins = dict(line.split("==") for line in text(ROOT / "constraints.txt").splitlines()
                if line and not line.startswith("#"))
    pins = {canonicalize_name(k): v for k, v in pins.items()}
    rows = re.findall(r"^\| (.+?) \| `(.+?)` \| (.+?) \|", text(ROOT / "docs/compatibility.md"),
                      re.MULTILINE)
    assert rows
    for name, allows, runs in rows:
        package = canonicalize_name(name.split(" ")[0])
        if package == "python":
            assert allows == project["requires-python"]
            continue
        assert allows == needs[package], name
        assert runs == pins[package], name


def test_every_module_of_the_package_is_on_the_layout_map() -> None:
    index = text(ROOT / "docs" / "index.md")
    layout = index.split("## Layout", 1)[1].split("```", 2)[1]
    modules = {p.stem for p in (ROOT / "pytest_ragdive").rglob("*.py") if p.stem != "__init__"}
    missing = sorted(m for m in modules if not re.search(rf"\b{m}\b", layout))
    assert not missing, f"docs/index.md's layout map leaves out {missing}"


def test_the_package_docstring_names_the_layers_the_layer_test_checks() -> None:
    layers = re.findall(r"``(\w+)``", text(ROOT / "pytest_ragdive" / "__init__.py")
                        .split('"""')[1])[:4]
    order = re.search(r"plugin -> adapters -> engine -> llm", text(ROOT / "tests/test_layers.py"))
    assert order and layers == ["plugin", "adapters", "engine", "llm"], layers


def test_the_readme_is_short_and_quotes_no_dated_measurement() -> None:
    readme = text(ROOT / "README.md")
    prose = re.sub(r"```.*?```|<!-- (\S+) -->.*?<!-- /\1 -->", "", readme, flags=re.DOTALL)
    assert len(readme.split()) <= 1200, "README.md is over 1,200 words"
    assert not re.findall(r"\b20\d\d-\d\d-\d\d\b", prose), "dated measurements belong in " \
        "benchmarks/README.md's tables"
    assert len(text(ROOT / "docs" / "concepts.md").split()) <= 3000
