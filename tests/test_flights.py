"""Identical requests in flight at the same time share one model call and one cache entry."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.llm.cache import ResponseCache
from pytest_ragdive.llm.client import LLMClient
from pytest_ragdive.llm.errors import ModelError
from pytest_ragdive.llm.scripted import calls, max_in_flight, scripted
from pytest_ragdive.llm.scripted_errors import http_error
from pytest_ragdive.llm.usage import Usage, usage_scope


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{text} Answer yes or no."}]


def entries(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


def test_identical_requests_in_flight_make_one_call(tmp_path: Path) -> None:
    model = scripted({"YesNo": lambda messages: 0.8}, latency=0.2)
    client = LLMClient(ResponseCache(tmp_path))
    usage = Usage()

    async def both() -> list[float]:
        await client.yes_probability(model, ask("Is it long?"))  # the request form works
        with usage_scope(usage):
            return list(await asyncio.gather(
                *(client.yes_probability(model, ask("Is it tall?")) for _ in range(3)),
                client.yes_probability(model, ask("Is it wide?")),
            ))

    answers = run_blocking(both())
    assert answers == pytest.approx([0.8] * 4)
    asked = [messages[-1]["content"] for _, messages in calls(model)]
    assert sorted(asked[1:]) == sorted(q["content"] for q in ask("Is it tall?") + ask("Is it wide?"))
    assert (usage.calls, usage.cache_hits) == (2, 2)
    assert len(entries(tmp_path)) == 3


def test_callers_that_joined_a_failing_call_get_its_error_without_calling_again(
    tmp_path: Path,
) -> None:
    def respond(messages: list[dict]) -> float:
        if "tall" in messages[-1]["content"]:
            raise http_error(503, "upstream failed")
        return 0.5

    model = scripted({"YesNo": respond}, latency=0.1)
    client = LLMClient(ResponseCache(tmp_path), retries=0, retry_budget=0)

    async def together() -> list[object]:
        await client.yes_probability(model, ask("Is it wide?"))  # the request form works
        return list(await asyncio.gather(
            *(client.yes_probability(model, ask("Is it tall?")) for _ in range(3)),
            return_exceptions=True,
        ))

    outcomes = run_blocking(together())
    assert all(isinstance(o, ModelError) for o in outcomes), outcomes
    assert len({str(o) for o in outcomes}) == 1
    assert [m[-1]["content"] for _, m in calls(model)].count(ask("Is it tall?")[0]["content"]) == 1
    assert len(entries(tmp_path)) == 1  # the reply that worked; no entry for the failure


def test_when_the_first_caller_is_cancelled_the_others_still_get_a_reply(
    tmp_path: Path,
) -> None:
    model = scripted({"YesNo": lambda messages: 0.3}, latency=0.3)
    client = LLMClient(ResponseCache(tmp_path))

    async def scenario() -> float:
        await client.yes_probability(model, ask("Is it long?"))  # the request form works
        first = asyncio.ensure_future(client.yes_probability(model, ask("Is it tall?")))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(client.yes_probability(model, ask("Is it tall?")))
        await asyncio.sleep(0.05)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        return await second

    assert run_blocking(scenario()) == pytest.approx(0.3)
    # the second caller waited for the first call, then, that one cancelled, made its own
    assert max_in_flight(model) == 1
    assert len(entries(tmp_path)) == 2
