"""Documents of any shape (issue 53, item 1): sentences repeated, 200 KB and 2 MB of text,
one sentence. Each holds its dialogue or stops with one line naming the document and the
fix; none gives a traceback or a hang."""

from __future__ import annotations

import random

import pytest
from conftest import PROJECT_FIXTURES, PROJECT_INI

from pytest_ragdive.engine.base.models import Document
from pytest_ragdive.engine.generation.facts import MOST_FACTS, facts

#: a scripted judge that plays every stage with its generic replies, and a bot that answers
CONFTEST = '''
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

JUDGE = scripted(name="documents")

class Bot:
    def answer(self, question, history):
        return ragdive.RagAnswer(answer="It leaves every hour from the Old Quay.",
                                 contexts=["The ferry leaves the Old Quay every hour."])
''' + PROJECT_FIXTURES

TEST = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns={turns}, runs=1, role="{role}", metrics=["correctness"])
def test_bot(ragdive_dialogue):
    pass
'''

FERRY = ("# The Tern ferry\nThe Tern ferry crosses the river between the Old Quay and "
         "Westbank. It is operated by the company Riverline. A single crossing costs 2 marks. "
         "Bicycles travel free on every crossing.")
NOTICE_LINE = "Prices and times may change without notice at any time."


def project(pytester: pytest.Pytester, documents: dict[str, str], conftest: str = CONFTEST,
            **tests: tuple[int, str]) -> pytest.Pytester:
    """A project whose ini loads ``documents`` (name -> text) from kb/, with one test
    module per entry of ``tests`` (name -> turns and role)."""
    pytester.path.joinpath("kb").mkdir()
    for name, text in documents.items():
        pytester.path.joinpath("kb", f"{name}.md").write_text(text)
    pytester.makeini(PROJECT_INI + "ragdive_documents = kb/*.md\n")
    pytester.makeconftest(conftest)
    pytester.makepyfile(**{name: TEST.format(turns=turns, role=role)
                           for name, (turns, role) in tests.items()})
    return pytester


def rows(size: int) -> str:
    """About ``size`` characters of a timetable: sentences alike but for their figures,
    every one a fact that answers the question of the others (the role vague's readings)."""
    draw, lines, length = random.Random(53), [], 0
    while length < size:
        line = (f"The number {len(lines)} bus leaves the harbour at {draw.randint(5, 22)} "
                f"and reaches the station {draw.randint(10, 50)} minutes later.")
        lines.append(line)
        length += len(line) + 1
    return "# Timetable\n" + "\n".join(lines)


def test_a_document_that_repeats_a_sentence_holds_its_dialogue(pytester) -> None:
    # a disclaimer repeated: the follow-up's facts held it five times over, and choosing
    # among them indexed the distinct ones by the count of all (IndexError in the setup)
    notice = ("The Old Quay kiosk sells tickets for the harbour ferries. "
              + f"{NOTICE_LINE} " * 5 + "Dogs on a lead are welcome at the kiosk.")
    result = project(pytester, {"notice": notice, "ferry": FERRY}, test_bot=(3, "precise"))\
        .runpytest("-m", "ragdive", "--ragdive-update", "-k", "notice")
    result.assert_outcomes(passed=1)
    assert "IndexError" not in result.stdout.str()


def test_documents_of_200_kb_hold_their_dialogues_in_seconds(pytester) -> None:
    # the 200 KB of one sentence, and 200 KB of a timetable: the role vague
    # compared each of its 2,320 facts with every other at each turn (the session did not
    # end in 4 minutes); now each document gives at most MOST_FACTS, sampled from the whole
    notice = f"{NOTICE_LINE} " * (200_000 // (len(NOTICE_LINE) + 1))
    tests = {"test_precise": (2, "precise"), "test_vague": (2, "vague")}
    project(pytester, {"notice": notice, "timetable": rows(200_000), "ferry": FERRY}, **tests)
    result = pytester.runpytest_subprocess("-m", "ragdive", "--ragdive-update", "-k",
                                           "notice or timetable", timeout=240)
    result.assert_outcomes(passed=4)
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_document_of_2_mb_is_refused_in_one_line_naming_it(pytester) -> None:
    project(pytester, {"export": rows(2_000_000), "ferry": FERRY}, test_bot=(2, "precise"))
    result = pytester.runpytest("-m", "ragdive", "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert ("ini ragdive_documents: document 'export' has 2,000,0" in err
            and "split it into documents of one topic each" in err)
    assert len([line for line in err.splitlines() if line.strip()]) == 1
    assert "Traceback" not in err + result.stdout.str()


#: a generator as a model writes: asked about a fact, it asks what the fact states, so a
#: follow-up about turn 1's sentence asks turn 1's question again
REAL_GENERATOR = CONFTEST.replace('JUDGE = scripted(name="documents")', '''
import re

def first_question(messages):
    source = re.search(r"<source>\\n?(.*?)\\n?</source>", messages[-1]["content"], re.S)
    return {"question": "When does the city museum open?",
            "evidence": source.group(1).strip().splitlines()[-1],
            "ground_truth": "At nine every day."}

def next_question(messages):
    fact = re.search(r"^Fact: (.*)$", messages[-1]["content"], re.M).group(1)
    return {"ground_truth": fact, "standalone_question": "When does the city museum open?",
            "rag_input": "When does it open?", "question_type": "follow_up"}

JUDGE = scripted({"FirstQuestion": first_question, "NextQuestion": next_question},
                 name="documents-real")
''')


def test_a_document_of_one_sentence_holds_one_turn_and_says_it_held_one(pytester) -> None:
    museum = "# City museum\nThe city museum opens at nine every day."
    project(pytester, {"museum": museum, "ferry": FERRY}, REAL_GENERATOR,
            test_one=(1, "precise"), test_two=(2, "precise"))
    result = pytester.runpytest("-m", "ragdive", "--ragdive-update", "-k", "museum")
    # at turn 2 the only fact was asked: the dialogue ends there, scored on turn 1
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "note: short: test_two.py::test_bot[[]museum[]] held 1 of 2 turns (its document ran "
        "out of facts)"])


def test_a_long_document_gives_a_sample_of_its_facts_from_the_whole() -> None:
    table = rows(200_000)
    every = table.splitlines()[1:]
    sample = facts(Document(id="timetable", text=table))
    assert len(sample) == MOST_FACTS and len(set(sample)) == MOST_FACTS
    assert sample[0] == every[0] and every.index(sample[-1]) > 0.99 * len(every) - 1
    assert sample == sorted(sample, key=every.index)  # in the document's order
    short = Document(id="ferry", text=FERRY + " " + f"{NOTICE_LINE} " * 3)
    assert facts(short).count(NOTICE_LINE) == 3  # a document of few facts: every one
