"""The user-facing marker and documents fixture helpers. Imported at plugin start-up,
so this module imports nothing heavy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from ..engine.base.settings import MARKER_OPTIONS, SettingError, check_all

if TYPE_CHECKING:
    from ..engine.base.models import Document, DocumentGroup
    from .options import Options

MARKER = "ragdive"


def function_key(item: pytest.Item) -> str:
    """The node id of the test function an item belongs to."""
    return item.nodeid.split("[", 1)[0]


def conversation(**options: Any) -> pytest.MarkDecorator:
    """Mark a test as a RAG-DIVE conversation test.

    ``@ragdive.conversation(turns=5, role="precise")`` expands the test into one item
    per document (or group of documents); each item holds a conversation with the
    ``ragdive_adapter`` and checks its scores against the recorded baseline band. Options
    left out come from the ini file, then the defaults; the command line overrides them
    (see ``pytest_ragdive.engine.base.settings``).
    """
    try:
        check_options(options, "ragdive.conversation")
    except SettingError as exc:
        raise pytest.UsageError(str(exc)) from None
    return getattr(pytest.mark, MARKER)(**options)


def check_options(options: Mapping[str, object], where: str) -> None:
    """Raise :class:`SettingError` naming an unknown option or a bad value."""
    unknown = sorted(set(options) - set(MARKER_OPTIONS))
    if unknown:
        raise SettingError(
            f"{where}: unknown option(s) {', '.join(unknown)}; valid options: "
            f"{', '.join(MARKER_OPTIONS)}"
        )
    # documents are a list of Documents or a path, loaded (and checked) at collection
    check_all({k: v for k, v in options.items() if k != "documents" and v is not None}, where)


def document_fixture(
    source: str | Path | Sequence[Document], *, name: str = "ragdive_document",
    group: int | str | Path | None = None,
) -> Any:
    """A parametrized fixture yielding one :class:`Document` per test item, or with
    ``group`` one :class:`DocumentGroup`.

    ``ragdive_document = ragdive.document_fixture("kb/*.md")`` in conftest.py makes each
    conversation test run once per document. ``source`` is a list of Documents, or a
    file, folder or glob relative to the conftest.py that defines the fixture. ``group=2``
    makes each item a conversation that moves between two documents, paired by the words
    they share; ``group="groups.txt"`` names a file of groups, relative to the conftest.py
    (:mod:`pytest_ragdive.engine.documents.groups`).
    """
    from ..engine.documents.loading import check_unique, load_documents

    __tracebackhide__ = True  # the user's conftest line and the cause, not our frames
    what = repr(str(source)) if isinstance(source, (str, Path)) else "[...]"
    what += "" if group is None else f", group={group!r}"
    import inspect

    relative = isinstance(source, (str, Path)) or group is not None
    caller = Path(inspect.stack()[1].filename).parent if relative else Path()
    try:
        if isinstance(source, (str, Path)):
            documents = load_documents(source, root=caller)
        else:
            documents = check_unique(source)
        items = grouped(documents, group, caller) if group is not None else documents
    except (OSError, ValueError) as exc:
        raise ValueError(f"ragdive.document_fixture({what}): {exc}") from None
    return _fixture_of(items, name)


def _fixture_of(items: Sequence[Document | DocumentGroup], name: str) -> Any:
    @pytest.fixture(name=name, params=list(items), ids=[d.id for d in items])
    def _fixture(request: pytest.FixtureRequest) -> Document | DocumentGroup:
        return request.param

    return _fixture


def grouped(documents: list[Document], group: Any, root: Path
            ) -> Sequence[Document | DocumentGroup]:
    """``documents``, or with ``group`` (a number, or a groups file relative to ``root``)
    their groups (:mod:`pytest_ragdive.engine.documents.groups`)."""
    if group is None or group == "":
        return documents
    from ..engine.documents.groups import group_documents

    return group_documents(documents, group, root=root)


def register_ini_documents(config: pytest.Config, source: str, group: Any = None) -> None:
    """Make ini ``ragdive_documents`` (grouped by ini ``ragdive_document_group``) the default
    ``ragdive_document`` fixture."""
    import types

    try:
        items = grouped(_load(source, config.rootpath), group, config.rootpath)
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"ini ragdive_documents: {exc}") from None
    module = types.ModuleType("pytest_ragdive_ini_documents")
    module.ragdive_document = _fixture_of(items, "ragdive_document")  # type: ignore[attr-defined]
    config.pluginmanager.register(module, "ragdive-ini-documents")


def marker_items(kwargs: Mapping[str, object], test_path: Path, options: Options, rootdir: Path,
                 where: str) -> Sequence[Document | DocumentGroup] | None:
    """The items of a test whose marker gives ``documents`` (a path relative to the test
    module, or a list of Documents) or ``group`` (over the marker's documents, else the ini
    file's; the ini ``group`` applies to the marker's documents too): None when it gives
    neither, and its documents come from a fixture."""
    documents, group = kwargs.get("documents"), kwargs.get("group")
    if documents is None and group is None:
        return None
    root = test_path.parent
    if documents is None:
        documents, root = options.ini.get("documents"), rootdir
        if not documents:
            raise pytest.UsageError(
                f"{where}: group={group!r} groups the documents of documents= or of the ini "
                f"ragdive_documents, and this test has neither; give documents= too, or group "
                f"a document_fixture: ragdive.document_fixture('kb/*.md', group={group!r})")
    if group is None:
        group, group_root = options.ini.get("group"), rootdir
    else:
        group_root = test_path.parent
    try:
        if isinstance(documents, (str, Path)):
            docs = _load(documents, root)
        else:
            from ..engine.documents.loading import check_unique

            docs = check_unique(cast("Sequence[Document]", documents))  # check_options
        return grouped(docs, group, group_root)
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None


def _load(source: str | Path, root: Path) -> list[Document]:
    from ..engine.documents.loading import load_documents

    return load_documents(source, root=root)
