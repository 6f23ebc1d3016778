"""Secrets never reach an output: not a repr, a failure message, the terminal, JUnit XML,
the cache, a band file or a report."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragdive.engine.base.judges import Judges
from pytest_ragdive.llm.model import Model
from pytest_ragdive.llm.secrets import mask

KEY = "AIza" + "SyD-fake-but-shaped-like-a-key-0123456"  # built: no key-shaped text on disk


def test_reprs_hide_credentials() -> None:
    model = Model("gemini/flash", {"api_key": KEY, "api_base": "https://user:hunter22@host/v1"})
    judges = Judges(model, validator=Model("openai/x", {"extra_headers": {"token": KEY}}))
    for text in (repr(model), repr(judges), str(judges.models)):
        assert KEY not in text and "hunter22" not in text
    assert "gemini/flash" in repr(model)


@pytest.mark.parametrize("leak", [f"key={KEY}", f"Bearer {KEY}", KEY, "sk" + "-" + "a" * 40])
def test_provider_messages_are_masked(leak: str) -> None:
    assert mask(f"400 invalid credential {leak} for project") .count("***") >= 1
    assert leak not in mask(f"400 invalid credential {leak} for project")


PROJECT = '''
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted
from pytest_ragdive.llm.scripted_errors import http_error

KEY = "{key}"

def refuse(messages):
    raise http_error(400, f"API key not valid: {{KEY}} (project 42)")

class Bot:
    def answer(self, question, history):
        return ragdive.RagAnswer(answer="It is 120 m.", contexts=["120 m"])

@pytest.fixture(scope="session")
def ragdive_adapter():
    return Bot()

@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges(ragdive.Model(scripted({{"YesNo": refuse}}, name="leaky"),
                                        {{"api_key": KEY}}))

ragdive_document = ragdive.document_fixture([ragdive.Document(id="a", text="A is 120 m.")])
'''


def test_a_key_echoed_by_the_provider_is_in_no_output(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROJECT.format(key=KEY))
    pytester.makepyfile(test_bot="""
        import pytest_ragdive as ragdive

        @ragdive.conversation(turns=1, runs=1, metrics=["correctness"])
        def test_bot(ragdive_dialogue):
            assert ragdive_dialogue.scores["correctness"] >= 0.5
    """)
    result = pytester.runpytest("-m", "ragdive", "--ragdive-update", "-v",
                                "--junitxml=junit.xml", "--ragdive-json=run.json",
                                "--ragdive-report=report.html")
    result.assert_outcomes(failed=1)
    assert "rejected the request as invalid" in result.stdout.str()
    outputs = {"terminal": result.stdout.str() + result.stderr.str()}
    for path in Path(pytester.path).rglob("*"):
        if path.is_file() and path.suffix in (".json", ".xml", ".html"):
            outputs[str(path.relative_to(pytester.path))] = path.read_text(errors="replace")
    assert {"junit.xml", "run.json", "report.html"} <= set(outputs)
    assert [where for where, text in outputs.items() if KEY in text] == []


def test_a_reply_without_choices_names_the_provider_and_shows_no_key_with_locals(
    pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(PROJECT.format(key=KEY).replace(
        "raise http_error(400, f\"API key not valid: {KEY} (project 42)\")",
        "return NO_CHOICES").replace("import scripted\n", "import NO_CHOICES, scripted\n"))
    pytester.makepyfile(test_bot="""
        import pytest_ragdive as ragdive

        @ragdive.conversation(turns=1)
        def test_bot(ragdive_dialogue):
            pass
    """)
    result = pytester.runpytest("-m", "ragdive", "--ragdive-update", "-l",
                                "--junitxml=junit.xml", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the provider answered without a reply (no 'choices' in*"])
    output = result.stdout.str() + result.stderr.str()
    assert "IndexError" not in output
    assert KEY not in output and KEY not in (pytester.path / "junit.xml").read_text()
