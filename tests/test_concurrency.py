"""Dialogues of one test's documents overlap in time when adapter and judges are shared."""

from __future__ import annotations

import json

import pytest

CONFTEST = '''
import asyncio, json, os, time
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

JUDGE = scripted(name="judge", latency=0.05)
LOG = os.path.join(os.path.dirname(__file__), "calls.jsonl")

class Bot:
    async def answer(self, question, history):
        start = time.monotonic()
        await asyncio.sleep(0.3)
        with open(LOG, "a") as f:
            f.write(json.dumps([start, time.monotonic()]) + "\\n")
        return ragdive.RagAnswer(answer="fact", contexts=["fact"])

@pytest.fixture(scope="{scope}")
def ragdive_adapter():
    return Bot()

@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges(JUDGE)

ragdive_document = ragdive.document_fixture(
    [ragdive.Document(id=f"doc{{i}}", text=f"Fact {{i}}.") for i in range(4)])
'''

TEST = '''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=1, metrics=["correctness"], runs=1)
def test_bot(ragdive_dialogue):
    pass
'''


def max_overlap(path) -> int:
    spans = [json.loads(line) for line in path.read_text().splitlines()]
    return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)


@pytest.mark.parametrize("scope, overlapping", [("session", True), ("function", False)])
def test_items_of_a_test_run_their_dialogues_at_once(pytester, scope, overlapping):
    pytester.makeconftest(CONFTEST.format(scope=scope))
    pytester.makepyfile(test_bot=TEST)
    result = pytester.runpytest("-p", "no:langsmith_plugin", "--ragdive-update")
    result.assert_outcomes(passed=4)
    overlap = max_overlap(pytester.path / "calls.jsonl")
    if overlapping:
        assert overlap == 4
    else:
        assert overlap == 1
        result.stdout.fnmatch_lines(["*note: ragdive_adapter or ragdive_judges is "
                                     "function-scoped: dialogues ran one at a time*"])
