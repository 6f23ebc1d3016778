"""``--ragdive-estimate``: what a session would take, printed without a model call, and how
close it comes to the calls of a real run of the same project."""

from __future__ import annotations

import re

import pytest
from conftest import PROJECT_FIXTURES, PROJECT_INI, scripted_project

from pytest_ragdive import Document, DocumentGroup
from pytest_ragdive.engine.base.settings import scored_metrics
from pytest_ragdive.engine.conversation.expected import expected_calls
from pytest_ragdive.engine.validation.validator import QUESTIONS
from pytest_ragdive.llm.scripted import calls
from pytest_ragdive.plugin.estimate_time import HOSTED, seconds

#: a project whose bot answers from three retrieved passages, as a top-3 retriever does (the
#: estimate's assumption), about two documents of a few facts; every judge is scripted
CONFTEST = '''
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

JUDGE = scripted(name="estimated")

class Bot:
    def answer(self, question, history):
        passages = [f"Passage {i} retrieved for {question!r} after {len(history)} messages."
                    for i in range(3)]
        return ragdive.RagAnswer(answer=f"About {question!r}: a fact.", contexts=passages)

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="tower", text="# Alpha Tower\\n\\nAlpha is a tower built in 1901. "
                     "It is 120 metres tall. Its lift opens at 9:00 every day."),
    ragdive.Document(id="bridge", text="# Beta Bridge\\n\\nBeta is a bridge opened in 1950. "
                     "It is 800 metres long. A car pays 2 marks to cross it."),
])
''' + PROJECT_FIXTURES

TEST = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=3, runs=1)
def test_bot(ragdive_dialogue):
    assert ragdive_dialogue.turns
'''

MODEL = "fake/estimated"


def _calls(result: pytest.RunResult, pattern: str) -> int:
    found = re.search(pattern, result.stdout.str())
    assert found is not None, result.stdout.str()
    return int(found.group(1).replace(",", ""))


def test_the_estimate_prints_what_a_run_takes_and_asks_no_model(
        pytester: pytest.Pytester) -> None:
    project = scripted_project(pytester, CONFTEST, TEST)
    result = project.runpytest("-m", "ragdive", "--ragdive-estimate")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines([
        "*= ragdive estimate =*",
        "test_bot.py::test_bot  (2 documents × 3 turns; check: 1 run each)",
        "    dialogues 2, model calls *: generator *, validator *, correctness *, "
        "faithfulness *, context_precision *, context_recall *, forgetfulness *, "
        "context_retention *",
        "    tokens ~* in / ~* out, price $0.0000 (fake/estimated free)",
        "    time * to * at concurrency 8",
        "total: dialogues 2, model calls *",
        "assumed: 30% of the generator's attempts rejected*",
        "no dialogue held: model calls 0; every ragdive item was skipped*",
    ])
    assert calls(MODEL) == []
    # nothing is written: no band (a check of an item without one fails), no report
    assert not (project.path / "__ragdive__").exists()


def test_an_update_estimate_is_within_a_fifth_of_the_real_runs_calls(
        pytester: pytest.Pytester) -> None:
    project = scripted_project(pytester, CONFTEST, TEST)
    estimate = project.runpytest("-m", "ragdive", "--ragdive-update", "--ragdive-estimate")
    estimate.stdout.fnmatch_lines(["test_bot.py::test_bot  (2 documents × 3 turns; update: "
                                   "1 run each)"])
    estimated = _calls(estimate, r"total: dialogues 2, model calls ([\d,]+)")
    assert calls(MODEL) == [] and not (project.path / "__ragdive__").exists()

    real = project.runpytest("-m", "ragdive", "--ragdive-update")
    real.assert_outcomes(passed=2)
    made = _calls(real, r"dialogues 2, turns 6, .*model calls (\d+)")
    assert made == len(calls(MODEL))  # what the scripted model answered
    assert 0.8 <= estimated / made <= 1.2, (estimated, made)

    # a check: one run per document, and the confirmation runs a worse first run adds
    check = project.runpytest("-m", "ragdive", "--ragdive-estimate")
    check.stdout.fnmatch_lines([
        "test_bot.py::test_bot  (2 documents × 3 turns; check: 1 run each)",
        "    once a first run leaves its band on the worse side, confirmation runs: up to "
        "* dialogues, * model calls",
    ])


JUDGED = '''
@pytest.fixture(scope="session")
def ragdive_adapter():
    return Bot()

@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges("openai/gpt-4o-mini", evaluator="nowhere/unpriced-model")
'''


def test_a_priced_model_is_priced_and_an_unknown_one_says_so(pytester: pytest.Pytester) -> None:
    """No call is made, so hosted model names need no key: the price comes from litellm's
    price table."""
    conftest = CONFTEST.replace(PROJECT_FIXTURES, JUDGED)
    project = scripted_project(pytester, conftest, TEST)
    result = project.runpytest("-m", "ragdive", "--ragdive-estimate",
                               "--ragdive-concurrency", "4")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines([
        "    tokens ~* in / ~* out, price unknown for nowhere/unpriced-model (not in "
        "litellm's price table); $0.0* for the rest (openai/gpt-4o-mini $0.0*)",
        "    time * to * at concurrency 4",
        f"*a hosted model's call takes {HOSTED[0]:g}-{HOSTED[1]:g} s*",
        "no dialogue held: model calls 0*",
    ])
    priced = re.search(r"openai/gpt-4o-mini \$(\d+\.\d+)\)", result.stdout.str())
    assert priced is not None and float(priced.group(1)) > 0


LOADED = '''
import sys

def pytest_unconfigure(config):  # after the summary, which prices the tokens
    print("\\nthird-party:", " ".join(sorted(m for m in ("litellm", "ragas", "llama_cpp")
                                          if m in sys.modules)) or "none")

class Bot:
    def answer(self, question, history):
        return ragdive.RagAnswer(answer="A fact.", contexts=["A fact."])

ragdive_document = ragdive.document_fixture([ragdive.Document(id="a", text="A fact.")])

@pytest.fixture(scope="session")
def ragdive_adapter():
    return Bot()

@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges("embedded/qwen2.5-coder-1.5b")
'''


def test_an_estimate_of_the_embedded_model_imports_no_model_library(
        pytester: pytest.Pytester) -> None:
    """litellm is imported for its price table only for a model that may cost something;
    the plain start-up imports none (``test_layers.py``)."""
    pytester.makeconftest("import pytest\nimport pytest_ragdive as ragdive\n" + LOADED)
    pytester.makepyfile(test_bot=TEST)
    pytester.makeini(PROJECT_INI)
    result = pytester.runpytest_subprocess("-m", "ragdive", "--ragdive-estimate", "-s")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*price $0.0000 (embedded/qwen2.5-coder-1.5b free)*",
                                 "*the embedded model evaluates 63 prompt tokens*",
                                 "*no dialogue held: model calls 0*", "third-party: none"])


@pytest.mark.parametrize(("turns", "hosted", "embedded"), [
    (1, 10, 3), (2, 27, 8), (3, 44, 13), (5, 78, 23), (8, 129, 38)])
def test_the_calls_per_dialogue_are_docs_cost_tables(turns: int, hosted: int,
                                                     embedded: int) -> None:
    """Every attempt accepted and 3 contexts: ``docs/cost.md``'s table, for an uncalibrated
    hosted judge (every check, six metrics) and the embedded one (no check, two metrics)."""
    document = DocumentGroup.of(
        Document(id="d", text="# Alpha Tower\n\nAlpha is a tower built in 1901."))
    every = expected_calls(document, turns=turns, role="precise", rejected=0.0,
                           metrics=scored_metrics(None, turns, "test", "openai/gpt-4o-mini"),
                           checks=tuple(QUESTIONS))
    shipped = expected_calls(document, turns=turns, role="precise", rejected=0.0, checks=(),
                             metrics=scored_metrics(None, turns, "test",
                                                    "embedded/qwen2.5-coder-1.5b"))
    assert (round(every.calls), round(shipped.calls)) == (hosted, embedded)
    rejecting = expected_calls(document, turns=turns, role="precise", checks=(),
                               metrics=("correctness",))
    assert rejecting.calls == pytest.approx(embedded - 2 * (turns - 1) + turns * 0.3 / 0.7)


def test_hosted_calls_spread_over_the_calls_in_flight_and_no_faster_than_a_dialogue() -> None:
    document = DocumentGroup.of(Document(id="d", text="Alpha is a tower built in 1901."))
    one = expected_calls(document, turns=3, role="precise", rejected=0.0,
                         metrics=("correctness",), checks=())
    models = {"generator": "openai/gpt-4o-mini", "validator": "openai/gpt-4o-mini",
              "evaluator": "openai/gpt-4o-mini"}
    alone = seconds([(models, one, 1)], concurrency=1)
    assert alone == (one.calls * HOSTED[0], one.calls * HOSTED[1])
    many = seconds([(models, one, 100)], concurrency=10)
    assert many == (100 * one.calls * HOSTED[0] / 10, 100 * one.calls * HOSTED[1] / 10)
    # unlimited calls in flight: the dialogue's longest path, 3 turns and one judgement
    assert seconds([(models, one, 1)], concurrency=1000) == (4 * HOSTED[0], 4 * HOSTED[1])
