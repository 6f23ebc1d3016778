import tempfile

import pytest

import pytest_ragdive.plugin.aggregate
import pytest_ragdive.plugin.gate
import pytest_ragdive.plugin.report  # noqa: F401
from pytest_ragdive import Dialogue, Document, Judges, RagAnswer, run_dialogue
from pytest_ragdive.llm.scripted import scripted


def _warm_up() -> None:
    """Projects under test run in process (``pytester.runpytest``). pytester removes the
    modules a run imported when it ends, but litellm, ragas and instructor keep registries
    keyed by their own classes and take seconds to import: one scripted dialogue here
    imports all of them once, for every run after it."""

    class Bot:
        def answer(self, question: str, history: list) -> RagAnswer:
            return RagAnswer(answer="A fact.", contexts=["A fact."])

    with tempfile.TemporaryDirectory() as cache:
        dialogue = run_dialogue(Document(id="warm", text="A fact."), Bot(), turns=2,
                                judges=Judges(scripted(name="warm-up")), cache_dir=cache)
    assert not dialogue.errors, dialogue.errors


_warm_up()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``first`` (the suite's longest) start first: under xdist one worker runs
    them while the others run the rest, instead of the run waiting for them at its end."""
    items.sort(key=lambda item: item.get_closest_marker("first") is None)

# A project under test: a scripted judge (the fake provider), a tiny RAG bot whose
# behaviour the BOT_MODE environment variable switches, and two documents.
#: how every project under test ends its conftest: its ``Bot`` is the RAG under test and its
#: scripted ``JUDGE`` every judge
PROJECT_FIXTURES = '''
@pytest.fixture(scope="session")
def ragdive_adapter():
    return Bot()

@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges(JUDGE)
'''
#: the ini of every project under test
PROJECT_INI = "[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n"

#: a role's test module: one dialogue per document, written as ``<document>-<BOT_MODE>.json``
ROLE_TEST = '''
import os
from pathlib import Path
import pytest_ragdive as ragdive

@ragdive.conversation(turns={turns}, runs=1, role="{role}", metrics={metrics!r})
def test_bot(ragdive_dialogue):
    mode = os.environ.get("BOT_MODE", "")
    Path(f"{{ragdive_dialogue.document_id}}-{{mode}}.json").write_text(ragdive_dialogue.model_dump_json())
'''


def scripted_project(pytester: pytest.Pytester, conftest: str, test: str) -> pytest.Pytester:
    """A project under test: its ``conftest``, one test module ``test_bot.py`` and the ini."""
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_bot=test)
    pytester.makeini(PROJECT_INI)
    return pytester


def role_project(pytester: pytest.Pytester, conftest: str, turns: int, role: str,
                 metrics: list[str]) -> pytest.Pytester:
    """A project whose one test holds a ``turns``-turn dialogue in ``role`` per document."""
    return scripted_project(pytester, conftest,
                            ROLE_TEST.format(turns=turns, role=role, metrics=metrics))


def role_dialogue(project: pytest.Pytester, document_id: str, mode: str,
                  monkeypatch: pytest.MonkeyPatch, *args: str) -> Dialogue:
    """The dialogue a :func:`role_project` holds about ``document_id`` with its bot in
    ``mode`` (``BOT_MODE``), recorded as one baseline run with ``args`` on the command line."""
    monkeypatch.setenv("BOT_MODE", mode)
    result = project.runpytest("-m", "ragdive", "--ragdive-update", *args)
    result.assert_outcomes(passed=1)
    return Dialogue.model_validate_json(
        (project.path / f"{document_id}-{mode}.json").read_text())


PROJECT_CONFTEST = '''
import os
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

def yes(messages):
    """P(yes) of a yes/no question: the multi-turn judges find that a reply with no memory
    neither answers what the user meant nor agrees with the conversation; everything else
    passes."""
    prompt = messages[-1]["content"]
    multi_turn = prompt.startswith(("Question:", "The conversation so far:"))
    reply = prompt.rsplit("eply: ", 1)[-1]  # the judged reply ("Reply:", "Latest reply:")
    good = 0.1 if multi_turn and "Reply to check" not in prompt and "(no memory)" in reply else 0.9
    return 1 - good if "contradict something" in prompt else good

JUDGE = scripted({"YesNo": yes}, name="judge")

class Bot:
    def answer(self, question, history):
        mode = os.environ.get("BOT_MODE", "good")
        if mode == "raise":
            raise RuntimeError("index offline")
        if not history:
            memory = "(fresh start)"
        elif mode == "forgetful" or (mode == "forgets late" and len(history) >= 4):
            memory = "(no memory)"
        else:
            memory = f"(recalls {len(history)})"
        return ragdive.RagAnswer(answer=f"{question} -> fact {memory}", contexts=["a fact"])

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="alpha", text="Alpha is a tower built in 1901."),
    ragdive.Document(id="beta", text="Beta is a bridge opened in 1950."),
])
''' + PROJECT_FIXTURES

PROJECT_TEST = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=2)
def test_bot(ragdive_dialogue):
    assert ragdive_dialogue.turns
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("BOT_MODE", "good")
    pytester.makeconftest(PROJECT_CONFTEST)
    pytester.makepyfile(test_bot=PROJECT_TEST)
    pytester.makeini(PROJECT_INI)
    return pytester


#: a test of two turns and three baseline runs, scored on correctness and forgetfulness
BODY = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=3, metrics=["correctness", "forgetfulness"])
def test_bot(ragdive_dialogue):
    pass
'''


@pytest.fixture
def recorded(project: pytest.Pytester) -> pytest.Pytester:
    """The project with ``BODY`` as its test, its bands recorded."""
    project.makepyfile(test_bot=BODY)
    project.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=2)
    return project
