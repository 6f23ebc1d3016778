"""The user-facing marker and documents fixture helpers. Imported at plugin start-up,
so this module imports nothing heavy."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .metrics import METRICS

if TYPE_CHECKING:
    from .models import Document

MARKER = "ragdive"

#: How the validator treats a turn: "until_valid" checks every attempt and fails the
#: dialogue after max_regenerations rejections; "once" checks the first attempt only and
#: uses one regeneration unchecked, as in the RAG-DIVE paper's experiments.
VALIDATIONS = ("until_valid", "once")

#: Marker option -> what it accepts. Validated at collection by ``check_options``.
OPTIONS = {
    "turns": "an int >= 1",
    "role": "a built-in role (precise, context-aware, forgetful, skeptic) or a sentence",
    "documents": "a list of Documents, or a path or glob",
    "metrics": "a subset of correctness, faithfulness, context_precision, context_recall, "
    "forgetfulness, context_retention",
    "max_regenerations": "an int >= 0",
    "validation": "'until_valid' (check every attempt) or 'once' (the paper's single check)",
    "runs": "an int >= 1 (baseline runs on --ragdive-update)",
}


def conversation(**options: Any) -> pytest.MarkDecorator:
    """Mark a test as a RAG-DIVE conversation test.

    ``@ragdive.conversation(turns=5, role="precise")`` expands the test into one item
    per document; each item holds a conversation with the ``ragdive_adapter`` and
    checks its scores against the recorded baseline band. Options left out come from
    the command line, then the ini file, then the defaults.
    """
    check_options(options)
    return getattr(pytest.mark, MARKER)(**options)


def check_options(options: dict[str, Any], where: str = "ragdive.conversation") -> None:
    """Raise ``pytest.UsageError``-style ``ValueError`` naming a bad option."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(
            f"{where}: unknown option(s) {', '.join(unknown)}; valid options: "
            f"{', '.join(OPTIONS)}"
        )
    for name, minimum in (("turns", 1), ("runs", 1), ("max_regenerations", 0)):
        value = options.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < minimum):
            raise ValueError(f"{where}: {name}={value!r} is not {OPTIONS[name]}")
    validation = options.get("validation")
    if validation is not None and validation not in VALIDATIONS:
        raise ValueError(f"{where}: validation={validation!r} is not {OPTIONS['validation']}")
    role = options.get("role")
    if role is not None and not isinstance(role, str):
        raise ValueError(f"{where}: role={role!r} is not {OPTIONS['role']}")
    metrics = options.get("metrics")
    if metrics is not None and (
        isinstance(metrics, str) or not metrics or set(metrics) - set(METRICS)
    ):
        raise ValueError(f"{where}: metrics={metrics!r} is not {OPTIONS['metrics']}")


def document_fixture(
    source: str | Path | Sequence[Document], *, name: str = "ragdive_document"
) -> Any:
    """A parametrized fixture yielding one :class:`Document` per test item.

    ``ragdive_document = ragdive.document_fixture("kb/*.md")`` in conftest.py makes each
    conversation test run once per document. ``source`` is a list of Documents, or a
    file, folder or glob relative to the conftest.py that defines the fixture.
    """
    from .documents import check_unique, load_documents

    if isinstance(source, (str, Path)):
        import inspect

        caller = Path(inspect.stack()[1].filename).parent
        documents = load_documents(source, root=caller)
    else:
        documents = check_unique(source)

    @pytest.fixture(name=name, params=documents, ids=[d.id for d in documents])
    def _fixture(request: pytest.FixtureRequest) -> Document:
        return request.param

    return _fixture
