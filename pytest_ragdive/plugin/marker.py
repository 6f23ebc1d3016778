"""The user-facing marker and documents fixture helpers. Imported at plugin start-up,
so this module imports nothing heavy."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..engine.settings import MARKER_OPTIONS, SettingError, check_all

if TYPE_CHECKING:
    from ..engine.models import Document

MARKER = "ragdive"


def function_key(item: pytest.Item) -> str:
    """The node id of the test function an item belongs to."""
    return item.nodeid.split("[", 1)[0]


def conversation(**options: Any) -> pytest.MarkDecorator:
    """Mark a test as a RAG-DIVE conversation test.

    ``@ragdive.conversation(turns=5, role="precise")`` expands the test into one item
    per document; each item holds a conversation with the ``ragdive_adapter`` and
    checks its scores against the recorded baseline band. Options left out come from
    the ini file, then the defaults; the command line overrides them (see
    ``pytest_ragdive.engine.settings``).
    """
    try:
        check_options(options, "ragdive.conversation")
    except SettingError as exc:
        raise pytest.UsageError(str(exc)) from None
    return getattr(pytest.mark, MARKER)(**options)


def check_options(options: dict[str, Any], where: str) -> None:
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
    source: str | Path | Sequence[Document], *, name: str = "ragdive_document"
) -> Any:
    """A parametrized fixture yielding one :class:`Document` per test item.

    ``ragdive_document = ragdive.document_fixture("kb/*.md")`` in conftest.py makes each
    conversation test run once per document. ``source`` is a list of Documents, or a
    file, folder or glob relative to the conftest.py that defines the fixture.
    """
    from ..engine.documents import check_unique, load_documents

    __tracebackhide__ = True  # the user's conftest line and the cause, not our frames
    try:
        if isinstance(source, (str, Path)):
            import inspect

            caller = Path(inspect.stack()[1].filename).parent
            documents = load_documents(source, root=caller)
        else:
            documents = check_unique(source)
    except (OSError, ValueError) as exc:
        what = repr(str(source)) if isinstance(source, (str, Path)) else "[...]"
        raise ValueError(f"ragdive.document_fixture({what}): {exc}") from None

    @pytest.fixture(name=name, params=documents, ids=[d.id for d in documents])
    def _fixture(request: pytest.FixtureRequest) -> Document:
        return request.param

    return _fixture


def register_ini_documents(config: pytest.Config, source: str) -> None:
    """Make ini ``ragdive_documents`` the default ``ragdive_document`` fixture."""
    import types

    try:
        docs = _load(source, config.rootpath)
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"ini ragdive_documents: {exc}") from None
    module = types.ModuleType("pytest_ragdive_ini_documents")
    module.ragdive_document = document_fixture(docs)  # type: ignore[attr-defined]
    config.pluginmanager.register(module, "ragdive-ini-documents")


def marker_documents(source: Any, test_path: Path) -> list[Document]:
    """The documents of ``ragdive.conversation(documents=...)``: a path relative to the test
    module, or a list of Documents."""
    try:
        if isinstance(source, (str, Path)):
            return _load(source, test_path.parent)
        from ..engine.documents import check_unique

        return check_unique(source)
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"ragdive.conversation(documents=...): {exc}") from None


def _load(source: str | Path, root: Path) -> list[Document]:
    from ..engine.documents import load_documents

    return load_documents(source, root=root)
