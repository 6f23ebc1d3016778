"""Every command the docs tell a user to run works with the installed wheel, not only in this
repository: the ``--ragdive-*`` options, the ``python -m pytest_ragdive`` commands and their
flags, and the ``python <path>.py`` scripts of README.md and docs/*.md (in ```console and
```bash blocks and in `inline` spans). A command for a clone of this repository (a benchmark)
says so: the words "in a clone of this repository" in its paragraph, or in the one that
introduces its code block. And the README's "What a run prints" is a scripted project's run.

The wheel is built offline from a copy of the package's sources (setuptools' build backend, no
build isolation) and unpacked; its commands run with it first on ``PYTHONPATH``, the
dependencies coming from this environment."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CLONE = "in a clone of this repository"
#: the code blocks whose text a user types
SHELL = {"console", "bash", "sh", "shell"}
#: blocks quoted from a benchmark's output: their caption names the command that measured them
QUOTED = ("example-gate-table",)


@dataclass(frozen=True)
class Command:
    doc: str
    kind: str  # "option", "module" or "script"
    name: str  # --ragdive-x, pytest_ragdive[.mod] [subcommand], or path/to/x.py
    flags: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.doc}: {self.name}{''.join(' ' + f for f in self.flags)}"


def paragraphs(text: str) -> list[tuple[str, str]]:
    """(prose, code) of each paragraph: lines between blank lines (an item of a list is one),
    a fenced block belonging to the paragraph right before it (the words that introduce it).
    ``code`` holds the shell blocks and the `inline` spans, continuation lines joined."""
    for name in QUOTED:
        text = re.sub(rf"<!-- {name}\b.*?<!-- /{name} -->", "", text, flags=re.DOTALL)
    found: list[tuple[list[str], list[str]]] = []
    prose: list[str] = []
    code: list[str] = []
    fence: str | None = None
    for line in text.splitlines():
        if fence is not None:
            if line.strip() == "```":
                fence = None
            elif fence in SHELL:
                code.append(line)
            continue
        if line.lstrip().startswith("```"):
            fence = line.strip()[3:].strip()
            if not prose and not code and found:  # after a blank line: the intro's block
                prose, code = found.pop()
            continue
        if not line.strip() or (re.match(r"\s*(?:[-*]|\d+\.) ", line) and (prose or code)):
            if prose or code:  # a blank line, or the next item of a list
                found.append((prose, code))
            prose, code = [], []
        if line.strip():
            prose.append(line)
    if prose or code:
        found.append((prose, code))
    result = []
    for lines, block in found:
        words = " ".join(lines)
        spans = re.findall(r"`([^`]+)`", words)
        shell = "\n".join(block).replace("\\\n", " ")
        result.append((words, "\n".join([shell, *spans])))
    return result


def commands(doc: Path, text: str | None = None) -> list[Command]:
    """The commands ``doc`` shows a user, but for those it says are for a clone."""
    name = str(doc.relative_to(ROOT)) if doc.is_relative_to(ROOT) else doc.name
    found: list[Command] = []
    for prose, code in paragraphs(doc.read_text(encoding="utf-8") if text is None else text):
        if CLONE in " ".join(prose.split()):
            continue
        code = re.sub(r"[ \t]+", " ", code)
        found += [Command(name, "option", o) for o in re.findall(r"--ragdive-[a-z-]*[a-z]", code)]
        for module, rest in re.findall(r"python3? -m (pytest_ragdive[\w.]*)([^\n`|;&]*)", code):
            rest = rest.split(" #")[0]
            sub = re.match(r" ([a-z][a-z-]*)\b", rest) if module == "pytest_ragdive" else None
            found.append(Command(name, "module", module + (f" {sub[1]}" if sub else ""),
                                 tuple(re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest))))
        found += [Command(name, "script", s)
                  for s in re.findall(r"python3? ((?:[\w.-]+/)*[\w.-]+\.py)\b", code)]
    return found


def shown() -> list[Command]:
    return sorted({c for doc in DOCS for c in commands(doc)}, key=str)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's wheel, built offline from a copy of its sources, unpacked into a folder
    that stands for site-packages."""
    tmp = tmp_path_factory.mktemp("wheel")
    source, dist, site = tmp / "source", tmp / "dist", tmp / "site"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("pytest_ragdive", "prompts"):
        shutil.copytree(ROOT / folder, source / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist.mkdir()
    build = subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta; "
         "print(build_meta.build_wheel(sys.argv[1]))", str(dist)],
        cwd=source, capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    (built,) = dist.glob("*.whl")
    with zipfile.ZipFile(built) as archive:
        archive.extractall(site)
    return site


def run(site: Path, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m module *args`` with the unpacked wheel first on the path (checked), in an
    empty folder."""
    cwd = site.parent / "cwd"
    cwd.mkdir(exist_ok=True)
    script = ("import runpy, sys, pytest_ragdive; from pathlib import Path; "
              "site, module = sys.argv[1:3]; del sys.argv[1:3]; "
              "assert Path(pytest_ragdive.__file__).is_relative_to(site), "
              "pytest_ragdive.__file__; "
              "runpy.run_module(module, run_name='__main__', alter_sys=True)")
    return subprocess.run(
        [sys.executable, "-c", script, str(site), module, *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(site)})


def unknown_options(site: Path, found: list[Command]) -> list[str]:
    """The options of ``found`` that the wheel's plugin does not register (``pytest --help``)."""
    result = run(site, "pytest", "--help", "-p", "no:langsmith_plugin", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stderr[-2000:]
    registered = set(re.findall(r"--ragdive-[a-z-]*[a-z]", result.stdout))
    assert "--ragdive-update" in registered  # the wheel's plugin was loaded
    return [str(c) for c in found if c.kind == "option" and c.name not in registered]


def failing_modules(site: Path, found: list[Command]) -> list[str]:
    """The ``python -m`` commands of ``found`` the wheel cannot run: a module it does not
    ship, a ``pytest_ragdive`` subcommand it does not know or a flag its help does not name."""
    failing = []
    for command in sorted({c for c in found if c.kind == "module"}, key=str):
        module, _, sub = command.name.partition(" ")
        if module != "pytest_ragdive":  # a module of the package, run as it is
            path = site / Path(*module.split("."))
            if not (path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()):
                failing.append(f"{command}: not in the wheel")
            continue
        result = run(site, module, *([sub] if sub else []), "--help")
        if result.returncode != 0:
            failing.append(f"{command}: {result.stderr.strip().splitlines()[-1:]}")
        elif missing := set(command.flags) - set(re.findall(r"--[a-z][a-z-]*", result.stdout)):
            failing.append(f"{command}: no {', '.join(sorted(missing))}")
    return failing


def unshipped_scripts(site: Path, found: list[Command]) -> list[str]:
    return [str(c) for c in found if c.kind == "script" and not (site / c.name).is_file()]


def test_every_ragdive_option_the_docs_show_is_the_wheels(wheel: Path) -> None:
    unknown = unknown_options(wheel, shown())
    assert not unknown, unknown


def test_every_python_m_pytest_ragdive_command_the_docs_show_runs_from_the_wheel(
    wheel: Path,
) -> None:
    found = shown()
    assert {"pytest_ragdive merge", "pytest_ragdive calibrate"} <= {c.name for c in found}
    failing = failing_modules(wheel, found)
    assert not failing, failing


def test_every_script_the_docs_tell_a_user_to_run_ships_in_the_wheel(wheel: Path) -> None:
    missing = unshipped_scripts(wheel, shown())
    assert not missing, (f"{missing}: ship them, or say the command is for a clone "
                         f"(\"{CLONE}\" in its paragraph)")


BROKEN = """\
- **More documents decide more**: `python benchmarks/gate.py --sizing __ragdive__/<module>`
  prints the documents a change needs.
- **More runs**: `python benchmarks/runs.py`, in a clone of this repository.

Then run:

```console
$ python -m pytest_ragdive merge a.json --no-such-flag
$ python -m pytest_ragdive sizing __ragdive__
$ pytest -m ragdive --ragdive-no-such-option
```
"""


def test_a_command_the_wheel_lacks_is_caught_unless_its_paragraph_says_clone(
    wheel: Path,
) -> None:
    """The checks above can fail: a repository script named for users, an unknown option,
    subcommand or flag; and the words "in a clone of this repository" exempt a paragraph
    and the code block it introduces."""
    found = commands(ROOT / "docs" / "broken.md", BROKEN)
    assert unshipped_scripts(wheel, found) == ["docs/broken.md: benchmarks/gate.py"]
    assert unknown_options(wheel, found) == ["docs/broken.md: --ragdive-no-such-option"]
    failing = failing_modules(wheel, found)
    assert failing[0] == "docs/broken.md: pytest_ragdive merge --no-such-flag: no --no-such-flag"
    assert failing[1].startswith("docs/broken.md: pytest_ragdive sizing: ") and "invalid " \
        "choice: 'sizing'" in failing[1] and len(failing) == 2
    cloned = BROKEN.replace("Then run:", f"Then, {CLONE}, run:").replace(
        "prints", "in a clone of this\n  repository prints")
    assert commands(ROOT / "docs" / "broken.md", cloned) == []


def test_the_readmes_unchanged_run_is_what_a_scripted_project_prints(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's "What a run prints": the test its quickstart defines in ``test_bot.py``,
    recorded and checked on a scripted project; every line it shows is printed, in order (the
    time aside)."""
    from conftest import BODY

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = re.search(r"```python\n# test_bot\.py\n.*?\ndef (\w+)\(", readme, re.DOTALL)
    assert quickstart, "the README's quickstart defines no test in test_bot.py"
    block = readme.split("## What a run prints", 1)[1].split("```console\n", 1)[1]
    lines = block.split("```", 1)[0].splitlines()
    assert lines[0] == "$ pytest -m ragdive"
    project.makepyfile(test_bot=BODY.replace("def test_bot(", f"def {quickstart[1]}("))
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    monkeypatch.setenv("COLUMNS", "80")  # the README shows an 80-column terminal
    for ci in ("CI", "BUILD_NUMBER"):
        monkeypatch.delenv(ci, raising=False)
    result = project.runpytest("-m", "ragdive")
    printed = iter(untimed(out) for out in result.stdout.lines)
    for line in lines[1:]:
        assert untimed(line) in printed, (
            f"not printed (in this order): {line!r}\n" + result.stdout.str())


def untimed(line: str) -> str:
    """A line with its run time and the rule around it left out."""
    return re.sub(r"=+", "=", re.sub(r"\bin [\d.]+s\b", "in ...s", line))
