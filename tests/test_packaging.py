"""The install that CI proves is the one the README shows, and the lock fits pyproject.toml."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if "pip install" in line]


def lock() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    main_job, tests = readme_commands()[:2]
    assert tests.endswith("python3 -m pytest")
    assert "-c constraints.txt" in main_job and "-c constraints.txt" in tests
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()


def test_tox_installs_the_locked_set() -> None:
    assert "PIP_CONSTRAINT = {toxinidir}/constraints.txt" in (ROOT / "tox.ini").read_text()


def test_the_lock_pins_every_dependency_within_its_bounds() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *project["optional-dependencies"]["embedded"]]
    pins = lock()
    for line in requirements:
        requirement = Requirement(line)
        version = pins.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is not in constraints.txt: run .ci/lock"
        assert requirement.specifier.contains(version, prereleases=True), (
            f"constraints.txt pins {requirement.name}=={version}, outside {requirement}: "
            f"run .ci/lock"
        )


def test_every_data_file_of_the_package_ships_in_the_wheel() -> None:
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {name: ROOT / Path(*name.split(".")) for name in config["packages"]}
    folders.update({name: ROOT / path for name, path in config["package-dir"].items()})
    missing = []
    for package, folder in folders.items():
        patterns = config["package-data"].get(package, [])
        for path in folder.glob("**/*"):
            inner = path.relative_to(folder)
            owner = max((f for f in folders.values() if f in path.parents), key=lambda f: len(f.parts))
            if (owner == folder and path.is_file() and path.suffix not in (".py", ".pyc")
                    and "__pycache__" not in inner.parts
                    and not any(fnmatch.fnmatch(str(inner), p) for p in patterns)):
                missing.append(f"{package}: {inner}")
    assert not missing, "add these to [tool.setuptools.package-data]"
    assert "pytest_ragdive.plugin" in folders  # the check sees the subpackages


def test_pyproject_lists_every_package_and_only_those() -> None:
    """A package folder left out of ``packages`` is missing from the wheel; one listed that
    no longer exists stops the build."""
    tomllib = pytest.importorskip("tomllib")
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = tuple(setuptools["package-dir"])  # the prompt folders: templates, no code
    listed = {name for name in setuptools["packages"] if not name.startswith(mapped)}
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for init in (ROOT / "pytest_ragdive").rglob("__init__.py")}
    assert listed == found, (f"not listed: {sorted(found - listed)}; "
                             f"listed, not there: {sorted(listed - found)}")


def test_the_files_pyproject_promises_exist() -> None:
    """Every data file named without a pattern ships (``py.typed``), and the license
    pyproject.toml declares is in the LICENSE file."""
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = config["tool"]["setuptools"]
    folders = {name: ROOT / Path(*name.split(".")) for name in setuptools["packages"]}
    folders.update({name: ROOT / path for name, path in setuptools["package-dir"].items()})
    missing = [f"{package}: {name}" for package, names in setuptools["package-data"].items()
               for name in names if not any(c in name for c in "*?[")
               and not (folders[package] / name).is_file()]
    assert not missing, "pyproject.toml ships files that do not exist"
    license_file = ROOT / "LICENSE"
    assert license_file.is_file(), "pyproject.toml declares a license; add the LICENSE file"
    declared = config["project"]["license"]["text"]
    assert license_file.read_text().startswith(f"{declared} License\n")
