"""The pytest11 entry point: options, the ``ragdive`` marker and the hooks.

Start-up cost matters here: this module and what it imports load in every pytest run
of a project that has the plugin installed, so models, litellm and ragas are only
imported once a ragdive item actually runs.
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from typing import Any

import pytest

from ..engine.base.settings import MARKER_OPTIONS, SettingError
from . import hookspecs
from .fixtures import (
    ragdive_adapter,
    ragdive_client,
    ragdive_dialogue,
    ragdive_document,
    ragdive_judges,
)
from .marker import MARKER, check_options, marker_items, register_ini_documents
from .options import add_options
from .session import STATE, RagdiveSession

__all__ = [
    "ragdive_adapter", "ragdive_client", "ragdive_dialogue", "ragdive_document", "ragdive_judges",
]

_LITELLM_WARNING = "ignore:.*`ReadOnly` qualifier:UserWarning"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:

    pluginmanager.add_hookspecs(hookspecs)


def _add_roles(config: pytest.Config) -> None:
    """The roles the project's conftests add (``pytest_ragdive_roles``), into the registry."""
    found = [r for roles in config.hook.pytest_ragdive_roles() for r in roles or ()]
    if found:
        from ..engine.roles.registry import add

        try:
            add(found, "pytest_ragdive_roles")
        except SettingError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    _add_roles(config)
    config.addinivalue_line(
        "markers",
        f"{MARKER}({', '.join(MARKER_OPTIONS)}): a RAG-DIVE conversation test, expanded into one "
        f"item per document and checked against its baseline band",
    )
    config.stash[STATE] = session = RagdiveSession(config)
    documents = session.options.ini.get("documents")
    if documents:
        register_ini_documents(config, documents, session.options.ini.get("group"))
    config.pluginmanager.register(SessionHooks(session), "ragdive-session")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(STATE, None)
    if session is not None:
        session.close()
    registry = sys.modules.get("pytest_ragdive.engine.roles.registry")
    if registry is not None:  # a role added for this session only; not imported otherwise
        registry.clear_added()


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
    _add_roles(metafunc.config)  # a conftest beside the module may add them
    try:
        check_options(dict(marker.kwargs), f"{metafunc.definition.nodeid}: ragdive.conversation")
    except SettingError as exc:
        raise pytest.UsageError(str(exc)) from None
    items = marker_items(marker.kwargs, metafunc.definition.path,
                         metafunc.config.stash[STATE].options, metafunc.config.rootpath,
                         f"{metafunc.definition.nodeid}: ragdive.conversation")
    if items is not None:
        metafunc.parametrize("ragdive_document", items, ids=[d.id for d in items])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker(MARKER) is not None:
            # litellm builds pydantic models lazily during calls, each warning about its own
            # typing: silenced for conversation tests only, not the user's whole suite
            item.add_marker(pytest.mark.filterwarnings(_LITELLM_WARNING))
    config.stash[STATE].collected(items)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[STATE].selected(session.items)


@pytest.hookimpl(tryfirst=True)  # returns nothing, so pytest's own setup still runs
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
    if fixturedef.argname in ("ragdive_adapter", "ragdive_judges"):
        request.config.stash[STATE].runs.fixture_scope(fixturedef.argname, fixturedef.scope)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    marked = item.get_closest_marker(MARKER) is not None
    if marked:
        item.config.stash[STATE].check_dialogue(item)
    result = yield
    if marked:
        item.config.stash[STATE].check_band(item)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, Any, Any]:
    result = yield
    # on the xdist controller too: its loop ends once every worker's results are merged; an
    # estimate (--ragdive-estimate) ran no item, so there is nothing to judge
    state = session.config.stash[STATE]
    if state.collection.all_items and not hasattr(session.config, "workerinput") and not (
            session.shouldstop or session.shouldfail or state.estimates is not None):
        from .decision import log

        log(session, state.judge())
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash[STATE]
    if hasattr(session.config, "workerinput"):
        session.config.workeroutput["ragdive"] = state.worker_output()  # type: ignore[attr-defined]
        return
    interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop
    if state.finish(bool(interrupted)) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash[STATE]
    if not hasattr(config, "workerinput"):
        state.summary(terminalreporter)


class SessionHooks:
    """Hooks that need the session: what pytest reported for each item (the xdist
    controller receives its workers' reports here too), and what each worker measured."""

    def __init__(self, session: RagdiveSession) -> None:
        self.session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.session.outcome(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {}).get("ragdive")
        if output:
            self.session.merge(output)
