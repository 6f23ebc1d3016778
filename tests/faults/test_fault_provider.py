"""Faults at the provider: 429 storms and 5xx bursts are retried within a budget the user
sets, and a call waiting to retry gives its place among the calls in flight to others."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

import pytest
from conftest import PROJECT_CONFTEST, PROJECT_INI

from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.errors import ModelError
from pytest_ragdive.llm.scripted import calls, scripted
from pytest_ragdive.llm.scripted_errors import http_error

ASK = [{"role": "user", "content": "Is it tall? Answer yes or no."}]


def client(tmp_path: Path, **options: object) -> LLMClient:
    return LLMClient(ResponseCache(tmp_path), **options)  # type: ignore[arg-type]


def storm(status: int, failures: int):
    """A responder that fails ``failures`` times with ``status`` (for each distinct
    prompt), then answers."""
    left: dict[str, itertools.count] = {}

    def respond(messages: list[dict]) -> float:
        seen = next(left.setdefault(messages[-1]["content"], itertools.count()))
        if seen < failures:
            raise http_error(status, "slow down" if status == 429 else "upstream failed")
        return 0.9

    return respond


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_burst_within_the_budget_is_ridden_out(tmp_path: Path, status: int) -> None:
    model = scripted({"YesNo": storm(status, 3)})
    llm = client(tmp_path, retries=3, retry_wait=0.01)
    assert run_blocking(llm.yes_probability(model, ASK)) == pytest.approx(0.9)


@pytest.mark.parametrize(("status", "failure"), [
    (500, r"gave up after 3 attempts: .*Raise ini ragdive_retries"),
    # a busy provider is retried whatever the count, within the budget of waits
    (429, (r"gave up after \d+ attempts and 0.\d s of waits between them, as the next wait "
           r"would pass ini ragdive_retry_budget = 0.1 s: .*slow down.*Raise "
           r"ragdive_retry_budget")),
])
def test_a_storm_beyond_the_budget_names_the_cause_and_the_setting(
    tmp_path: Path, status: int, failure: str
) -> None:
    model = scripted({"YesNo": storm(status, 1000)})
    llm = client(tmp_path, retries=2, retry_wait=0.01, retry_budget=0.1)
    with pytest.raises(ModelError, match=failure):
        run_blocking(llm.yes_probability(model, ASK))


def test_a_model_slower_than_the_call_timeout_names_the_timeout_setting(tmp_path: Path) -> None:
    model = scripted({"YesNo": 0.9}, latency=0.5)
    llm = client(tmp_path, timeout=0.05, retries=1, retry_wait=0.01)
    with pytest.raises(ModelError, match=r"gave up after 2 attempts: no reply within 0.05 s; "
                                         r"raise ini ragdive_call_timeout"):
        run_blocking(llm.yes_probability(model, ASK))


def test_a_waiting_retry_gives_its_place_to_other_calls(tmp_path: Path) -> None:
    """One place in flight. A call that hits a 429 waits 1 s before its retry; the others
    must not wait behind it."""
    failing = scripted({"YesNo": storm(429, 1)}, name="storm")
    fine = scripted(name="fine")
    llm = client(tmp_path, concurrency=1, retries=1, retry_wait=1.0)

    async def both() -> float:
        slow = asyncio.ensure_future(llm.yes_probability(failing, ASK))
        await asyncio.sleep(0.05)  # the failing call took the place and is now waiting
        start = time.perf_counter()
        for n in range(3):
            await llm.yes_probability(fine, [{"role": "user", "content": f"Q{n}? yes or no"}])
        others = time.perf_counter() - start
        await slow
        return others

    assert run_blocking(both()) < 0.5


#: the project's judge is rate limited (429, Retry-After 0.2 s) at its first yes/no question
LIMITED_ONCE = PROJECT_CONFTEST + """
import itertools
from pytest_ragdive.llm.scripted_errors import http_error

_asked = itertools.count()

def limited_once(messages):
    if next(_asked) == 0:
        raise http_error(429, "slow down", headers={"Retry-After": "0.2"})
    return yes(messages)

JUDGE = scripted({"YesNo": limited_once}, name="judge")
"""


@pytest.mark.parametrize(("ini", "failure"), [
    ("ragdive_retry_budget = 0.1", ("*gave up after 1 attempt and 0.0 s of waits between "
                                    "them, as the next wait would pass ini ragdive_retry_budget "
                                    "= 0.1 s: RateLimitError: *slow down*")),
    ("ragdive_retry_wait = 0.1", ("*the provider asked to retry after 0.2 s (Retry-After), "
                                  "longer than ragdive_retry_wait = 0.1 s: *")),
    ("ragdive_retries = 0", ""),  # the count bounds other failures: a rate limit is waited out
    ("", ""),  # the defaults: waits up to 30 s, 300 s in all
], ids=["short-budget", "short-wait", "no-retries", "defaults"])
def test_the_retry_settings_of_the_ini_decide_whether_a_limited_call_fails_its_item(
    project: pytest.Pytester, ini: str, failure: str
) -> None:
    project.makeconftest(LIMITED_ONCE)
    project.makeini(f"{PROJECT_INI}{ini}\n")
    result = project.runpytest("-m", "ragdive", "-k", "alpha", "--ragdive-update",
                               "--ragdive-runs=1")
    asked = [repr(messages) for schema, messages in calls("fake/judge") if schema == "YesNo"]
    sent_again = [m for m in set(asked) if asked.count(m) > 1]
    if failure:
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["the conversation could not be evaluated:", failure])
        assert sent_again == []
    else:
        result.assert_outcomes(passed=1)
        assert len(sent_again) == 1  # the question the provider limited, asked again


def test_first_calls_that_retry_do_not_queue_behind_each_other(tmp_path: Path) -> None:
    """A new model's first calls wait until one of them shows which request form the server
    takes. A busy server (503) says nothing about the form: the other calls must not wait
    out its retries (5 prompts, each failing 3 times)."""
    attempts: list[str] = []
    busy = storm(503, 3)

    def noting(messages: list[dict]) -> float:
        attempts.append(messages[-1]["content"])
        return busy(messages)

    model = scripted({"YesNo": noting}, name="busy")
    llm = client(tmp_path, retries=3, retry_wait=0.05)
    prompts = [[{"role": "user", "content": f"Q{n}? Answer yes or no."}] for n in range(5)]

    async def all_of_them() -> list[float]:
        return list(await asyncio.gather(*(llm.yes_probability(model, p) for p in prompts)))

    assert run_blocking(all_of_them()) == pytest.approx([0.9] * 5)
    first = attempts[0]
    last_of_first = len(attempts) - 1 - attempts[::-1].index(first)
    # every prompt was tried before the first one's retries were over
    assert {a for a in attempts[:last_of_first]} == {p[0]["content"] for p in prompts}


@pytest.mark.parametrize("asked", ["0.2", "date"])
def test_retry_after_is_honoured_and_a_longer_one_than_allowed_fails_saying_so(
    tmp_path: Path, asked: str
) -> None:
    import email.utils

    def header() -> str:
        if asked == "date":
            return email.utils.formatdate(time.time() + 2, usegmt=True)
        return asked

    tries = itertools.count()

    def limited(messages: list[dict]) -> float:
        if next(tries) == 0:
            raise http_error(429, "slow down", headers={"Retry-After": header()})
        return 0.9

    model = scripted({"YesNo": limited})
    llm = client(tmp_path, retries=1, retry_wait=5.0)
    start = time.perf_counter()
    assert run_blocking(llm.yes_probability(model, ASK)) == pytest.approx(0.9)
    assert time.perf_counter() - start >= (0.2 if asked == "0.2" else 0.9)  # as asked

    tries = itertools.count()
    strict = client(tmp_path / "strict", retries=1, retry_wait=0.1)
    with pytest.raises(ModelError, match=r"the provider asked to retry after .* s "
                                         r"\(Retry-After\), longer than ragdive_retry_wait"):
        run_blocking(strict.yes_probability(scripted({"YesNo": limited}), ASK))
