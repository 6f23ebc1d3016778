"""The fixtures a conversation test uses. Override any of them in conftest.py."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .dialogue import RagAdapter
    from .llm import Judges, LLMClient
    from .models import Dialogue, Document


@pytest.fixture(scope="session")
def ragdive_adapter() -> RagAdapter:
    """The RAG system under test. There is no default: define it in conftest.py."""
    pytest.fail(
        textwrap.dedent(
            """\
            pytest-ragdive has no RAG system to talk to. Define the fixture in conftest.py:

                @pytest.fixture(scope="session")
                def ragdive_adapter():
                    return MyRag()  # .answer(question, history) -> pytest_ragdive.RagAnswer
            """
        ),
        pytrace=False,
    )


@pytest.fixture(scope="session")
def ragdive_judges(pytestconfig: pytest.Config) -> Judges:
    """The judge models: ``--ragdive-model``, else the ini models, else the embedded
    offline model when ``pytest-ragdive[embedded]`` is installed."""
    from .plugin import default_judges

    return default_judges(pytestconfig)


@pytest.fixture(scope="session")
def ragdive_client(pytestconfig: pytest.Config) -> LLMClient:
    """The plugin's model client: a RAG system under test whose own model calls go
    through it shares the response cache, the record mode and the limit of calls in
    flight with the judges (so a cached replay needs no model at all)."""
    from .plugin import STATE

    return pytestconfig.stash[STATE].client()


@pytest.fixture
def ragdive_document() -> Document:
    """The source document of the current item; parametrized by the plugin or by
    :func:`pytest_ragdive.document_fixture`."""
    pytest.fail(
        "pytest-ragdive found no documents for this test. Give them with "
        "@ragdive.conversation(documents=...), with "
        "`ragdive_document = ragdive.document_fixture('kb/*.md')` in conftest.py, "
        "or with `ragdive_documents = kb/*.md` in the ini file.",
        pytrace=False,
    )


@pytest.fixture
def ragdive_dialogue(
    request: pytest.FixtureRequest,
    ragdive_adapter: Any,
    ragdive_judges: Judges,
    ragdive_document: Document,
) -> Dialogue:
    """The evaluated dialogue of the current item (the first run's, on update)."""
    from .plugin import STATE

    return request.config.stash[STATE].dialogue_for(
        request.node, ragdive_adapter, ragdive_judges, ragdive_document
    )
