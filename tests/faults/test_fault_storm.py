"""Faults at the provider: a storm of rate limits is ridden out within a budget of time,
with fewer calls in flight while it lasts; one that outlasts the budget fails naming it.

The storms are played on a fast clock: the retries' waits (``retrying.sleep``) and the
storm's own clock run ``SPEED`` times faster than real time, so a 40 s storm takes 4 s.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from conftest import PROJECT_FIXTURES, PROJECT_INI, scripted_project

from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.llm import retrying
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.scripted import in_flight, scripted
from pytest_ragdive.llm.scripted_errors import http_error

SPEED = 10.0


@pytest.fixture(autouse=True)
def fast_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    real_sleep = asyncio.sleep
    monkeypatch.setattr(retrying, "sleep", lambda seconds: real_sleep(seconds / SPEED))


#: a project of eight documents whose judge, when STORM="<share> <seconds>", answers 429 (no
#: Retry-After) to that share of the calls for the first seconds of a run (fast clock): which
#: attempts of a request are drawn by a hash of the request and the attempt's number, so the
#: same ones are refused whatever order the calls come in
STORMY = '''
import json, os, random, time
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted
from pytest_ragdive.llm.scripted_errors import http_error
from pytest_ragdive.llm.scripted_replies import generic

share, seconds = map(float, os.environ.get("STORM", "0 0").split())
started = []
attempts = {}

def stormy(schema):
    answer = generic(schema)
    def respond(messages):
        now = time.monotonic() * SPEED
        started[:] = started or [now]
        asked = schema + json.dumps(messages)
        attempts[asked] = attempt = attempts.get(asked, 0) + 1
        if now - started[0] < seconds and random.Random(f"{asked}#{attempt}").random() < share:
            raise http_error(429, "slow down")
        return answer(messages)
    return respond

SCHEMAS = ("FirstQuestion", "NextQuestion", "YesNo", "StatementGeneratorOutput",
           "NLIStatementOutput", "ContextPrecisionOutput", "ContextRecallOutput")
JUDGE = scripted({schema: stormy(schema) for schema in SCHEMAS}, name="judge")

class Bot:
    def answer(self, question, history):
        return ragdive.RagAnswer(answer=f"{question} -> a fact", contexts=["a fact"])

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id=name, text=f"{name.title()} is a place built in {1900 + n}.")
    for n, name in enumerate(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
                              "theta"])
])
'''.replace("SPEED", repr(SPEED)) + PROJECT_FIXTURES

SCORES_TEST = '''
import json
from pathlib import Path
import pytest_ragdive as ragdive

@ragdive.conversation(turns=3, runs=1)
def test_bot(ragdive_dialogue):
    Path(f"scores-{ragdive_dialogue.document_id}.json").write_text(
        json.dumps(ragdive_dialogue.scores, sort_keys=True))
'''


@pytest.fixture
def stormy(pytester: pytest.Pytester) -> pytest.Pytester:
    return scripted_project(pytester, STORMY, SCORES_TEST)


def scores(project: pytest.Pytester) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(project.path.glob("scores-*.json"))}


def test_a_storm_of_429s_for_40_seconds_ends_with_the_clean_runs_scores(
    stormy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half of the calls answered 429 for 40 s, at the default settings: every call is
    retried until the storm has passed, and the check passes with the scores of a clean
    run. Retried a fixed number of times, about one call in 32 failed 5 times running."""
    stormy.runpytest("-m", "ragdive", "--ragdive-update").assert_outcomes(passed=8)
    clean = scores(stormy)
    assert len(clean) == 8 and all(json.loads(s) for s in clean.values())
    for path in stormy.path.glob("scores-*.json"):
        path.unlink()

    monkeypatch.setenv("STORM", "0.5 40")
    result = stormy.runpytest("-m", "ragdive", "--ragdive-cache-dir=.ragdive/storm")
    assert result.ret == 0
    assert scores(stormy) == clean
    retried = re.search(r"provider busy or failing: (\d+) model calls retried, waiting "
                        r"([\d.]+) s in all", result.stdout.str())
    assert retried, result.stdout.str()
    calls = int(re.search(r"model calls (\d+),", result.stdout.str()).group(1))
    assert calls >= 150 and int(retried.group(1)) >= calls // 4
    assert float(retried.group(2)) >= 40


def test_a_storm_that_outlasts_the_budget_fails_naming_the_budget_setting(
    stormy: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORM", "1 100000")
    stormy.makeini(f"{PROJECT_INI}ragdive_retry_budget = 20\n")
    result = stormy.runpytest("-m", "ragdive", "--ragdive-update", "-k", "alpha")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([(
        "*gave up after * attempts and 1?.? s of waits between them, as the next wait would "
        "pass ini ragdive_retry_budget = 20 s: RateLimitError: *slow down*")])


def test_calls_in_flight_halve_while_429s_come_and_grow_back_when_they_stop(
    tmp_path: Path,
) -> None:
    """Once a first question found the request form the server takes: sixteen questions at
    once, at most 8 in flight. The provider answers the next 40 calls 429: the calls in flight
    fall to one; then 40 more questions, all answered: the calls in flight grow back."""
    storm = {"calls left": 0}
    seen: list[tuple[bool, int]] = []  # (in the storm, calls the provider is answering)

    def respond(messages: list[dict]) -> float:
        stormy = storm["calls left"] > 0
        storm["calls left"] -= 1
        seen.append((stormy, in_flight(model)))
        if stormy:
            raise http_error(429, "slow down")
        return 0.9

    model = scripted({"YesNo": respond}, latency=0.05)
    llm = LLMClient(ResponseCache(tmp_path), concurrency=8)

    def questions(first: int, count: int) -> list[list[dict]]:
        return [[{"role": "user", "content": f"Q{n}? Answer yes or no."}]
                for n in range(first, first + count)]

    async def asked(prompts: list[list[dict]]) -> list[float]:
        return list(await asyncio.gather(*(llm.yes_probability(model, p) for p in prompts)))

    assert run_blocking(asked(questions(0, 1))) == pytest.approx([0.9])
    storm["calls left"] = 40
    seen.clear()
    assert run_blocking(asked(questions(1, 16))) == pytest.approx([0.9] * 16)
    during = [n for stormy, n in seen if stormy]
    assert max(during[:8]) > 2  # the first calls went at the full limit
    assert set(during[20:]) == {1}  # then one at a time

    seen.clear()
    assert run_blocking(asked(questions(17, 40))) == pytest.approx([0.9] * 40)
    assert max(n for _, n in seen) >= 6
