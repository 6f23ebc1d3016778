"""The response cache: record modes, corrupt entries, concurrent writers, no secrets."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from pytest_ragdive.llm.cache import CacheMiss, CacheWarning, ResponseCache, request_key

REQUEST = {"model": "fake/m", "messages": [{"role": "user", "content": "How tall?\nmore"}],
           "temperature": 0.0, "seed": 0}
REPLY = {"content": "120 m", "prompt_tokens": 3, "completion_tokens": 2, "cost": 0.0}


def test_new_mode_replays_what_it_recorded(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    assert cache.load(REQUEST) is None
    cache.store(REQUEST, REPLY)
    assert cache.load(REQUEST) == REPLY
    assert cache.load({**REQUEST, "seed": 1}) is None  # the seed is part of the key


def test_none_mode_names_model_and_prompt_on_a_miss(tmp_path: Path) -> None:
    with pytest.raises(CacheMiss, match=r"model 'fake/m', prompt 'How tall\?'.*replays only"):
        ResponseCache(tmp_path, "none").load(REQUEST)


def test_all_mode_always_calls(tmp_path: Path) -> None:
    ResponseCache(tmp_path).store(REQUEST, REPLY)
    assert ResponseCache(tmp_path, "all").load(REQUEST) is None


def test_a_remembered_step_is_computed_once_and_replayed_without_computing(
    tmp_path: Path
) -> None:
    computed: list[str] = []

    def rank(result: str) -> str:
        computed.append(result)
        return result

    assert ResponseCache(tmp_path).remember("bot/rank", "who runs it?", lambda: rank("3 1 2")) \
        == "3 1 2"
    # what this machine would compute now does not matter: the recorded result is replayed
    assert ResponseCache(tmp_path, "none").remember(
        "bot/rank", "who runs it?", lambda: rank("1 3 2")) == "3 1 2"
    assert computed == ["3 1 2"]
    with pytest.raises(CacheMiss, match=r"model 'bot/rank', prompt 'when\?'.*replays only"):
        ResponseCache(tmp_path, "none").remember("bot/rank", "when?", lambda: rank("0"))
    assert computed == ["3 1 2"]
    # record mode all computes again and records the new result
    assert ResponseCache(tmp_path, "all").remember(
        "bot/rank", "who runs it?", lambda: rank("1 3 2")) == "1 3 2"
    assert ResponseCache(tmp_path).remember("bot/rank", "who runs it?", lambda: "") == "1 3 2"


def test_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="use one of none, new, all"):
        ResponseCache(tmp_path, "sometimes")  # type: ignore[arg-type]


def test_corrupt_entry_is_a_miss_with_a_warning_and_is_rewritten(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.store(REQUEST, REPLY)
    path = cache.path(request_key(REQUEST))
    path.write_text('{"response": ')
    with pytest.warns(CacheWarning, match=f"ignoring ragdive cache entry {path}: not JSON"):
        assert cache.load(REQUEST) is None
    cache.store(REQUEST, REPLY)
    assert cache.load(REQUEST) == REPLY


def test_credentials_never_reach_the_key_or_the_file(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    secret = {**REQUEST, "api_key": "sk" + "-live-1234567890abcdef", "api_base": "https://u:p@h"}
    cache.store(secret, REPLY)
    assert request_key(secret) == request_key(REQUEST)
    text = "".join(p.read_text() for p in tmp_path.rglob("*.json"))
    assert "sk-live" not in text and "u:p@h" not in text


def _write_many(directory: str, worker: int) -> None:
    cache = ResponseCache(Path(directory))
    for i in range(200):
        cache.store(REQUEST, {**REPLY, "content": f"worker {worker} write {i}"})


def test_processes_writing_the_same_key_leave_a_whole_entry(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_many, args=(str(tmp_path), w)) for w in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    files = list(tmp_path.rglob("*"))
    assert [p.suffix for p in files if p.is_file()] == [".json"]  # no temp file left behind
    entry = json.loads(ResponseCache(tmp_path).path(request_key(REQUEST)).read_text())
    assert entry["response"]["content"].startswith("worker ")


def test_two_servers_of_one_model_name_never_share_replies(tmp_path) -> None:
    from pytest_ragdive.engine.conversation.dialogue import run_blocking
    from pytest_ragdive.llm.cache import ResponseCache, request_key
    from pytest_ragdive.llm.client import LLMClient
    from pytest_ragdive.llm.model import Model
    from pytest_ragdive.llm.scripted import calls, scripted

    name = scripted({"YesNo": lambda messages: 0.8})
    ask = [{"role": "user", "content": "Is it tall? Answer yes or no."}]
    here = Model(name, {"api_base": "http://gpu-a:8000/v1/", "api_key": "sk-not-in-the-key"})
    same = Model(name, {"api_base": "http://user:pw@gpu-a:8000/v1?token=x"})
    other = Model(name, {"api_base": "http://gpu-b:8000/v1"})
    client = LLMClient(ResponseCache(tmp_path))

    async def ask_all() -> None:
        for model in (here, same, other, Model(name)):
            await client.yes_probability(model, ask)

    run_blocking(ask_all())
    assert len(calls(name)) == 3  # gpu-a once (the credentials and query are not the server)
    assert here.server_id == same.server_id == "http://gpu-a:8000/v1"
    assert here.label == f"{name} @ http://gpu-a:8000/v1"
    files = "".join(p.read_text() for p in tmp_path.rglob("*.json"))
    assert "sk-not-in-the-key" not in files and "pw@" not in files and "token=x" not in files
    # the provider's default endpoint keeps the key of every existing recording
    default = {"model": name, "messages": ask, "temperature": 0.0, "seed": 0, "max_tokens": 1,
               "logprobs": True, "top_logprobs": 20}
    assert ResponseCache(tmp_path).path(request_key(default)).is_file()
