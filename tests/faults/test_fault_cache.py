"""Faults in the response cache: entries that cannot be trusted are never replayed silently,
a reply that could not be used is asked again rather than replayed, and a folder that cannot
be written is one line at start-up."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
from conftest import PROJECT_CONFTEST

from pytest_ragdive.llm.cache import CacheMiss, CacheWarning, ResponseCache, request_key
from pytest_ragdive.llm.scripted import calls

REQUEST = {"model": "fake/m", "messages": [{"role": "user", "content": "How tall?"}],
           "temperature": 0.0, "seed": 0}
REPLY = {"content": "120 m", "prompt_tokens": 3, "completion_tokens": 2, "cost": 0.0}


def damaged(tmp_path: Path, change) -> Path:
    ResponseCache(tmp_path).store(REQUEST, REPLY)
    path = ResponseCache(tmp_path).path(request_key(REQUEST))
    entry = json.loads(path.read_text())
    change(entry)
    path.write_text(json.dumps(entry))
    return path


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda e: e.update(format=99), "format 99, this pytest-ragdive reads format 1"),
        (lambda e: e["response"].pop("content"), "the response has no 'content' text"),
        (lambda e: e["response"].update(prompt_tokens="many"), "the response has no 'prompt_tokens' count"),
        (lambda e: e.update(key="0" * 64), "it holds the entry of key"),
        (lambda e: e["response"].update(top_logprobs=[["yes", "high"]]),
         r"its 'top_logprobs' are not \[token, logprob\] pairs"),
        (lambda e: e["response"].update(top_logprobs=[["yes", math.inf]]),
         r"its 'top_logprobs' are not \[token, logprob\] pairs with logprob <= 0"),
        (lambda e: e["response"].update(top_logprobs=[["yes", 1000.0]]),
         r"its 'top_logprobs' are not \[token, logprob\] pairs with logprob <= 0"),
    ],
    ids=["foreign format", "no content", "bad usage", "moved file", "bad logprobs",
         "infinite logprob", "logprob above 0"],
)
def test_an_untrustworthy_entry_is_named_on_replay_and_recorded_again_otherwise(
    tmp_path: Path, change, why: str
) -> None:
    path = damaged(tmp_path, change)
    with pytest.raises(CacheMiss, match=f"unusable: {why}.*Delete {re.escape(str(path))}"):
        ResponseCache(tmp_path, "none").load(REQUEST)
    with pytest.warns(CacheWarning, match=why):
        assert ResponseCache(tmp_path, "new").load(REQUEST) is None
    ResponseCache(tmp_path).store(REQUEST, REPLY)
    assert ResponseCache(tmp_path, "none").load(REQUEST) == REPLY


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_cache_folder_is_one_line_before_any_item(project: pytest.Pytester) -> None:
    folder = project.path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        result = project.runpytest("-m", "ragdive", "--ragdive-cache-dir=ro/cache")
    finally:
        folder.chmod(0o700)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "cannot be written" in result.stderr.str()
    assert "--ragdive-record-mode=none" in result.stderr.str()


def test_a_cache_path_that_is_a_file_is_one_line_before_any_item(project: pytest.Pytester) -> None:
    (project.path / "cache-file").write_text("not a folder")
    result = project.runpytest("-m", "ragdive", "--ragdive-cache-dir=cache-file/sub")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cache-file is not a writable folder*"])
    assert result.stdout.str().count("Traceback") == 0


def test_a_reply_marked_unusable_is_asked_again_or_named_on_replay(tmp_path: Path) -> None:
    ResponseCache(tmp_path).store(REQUEST, REPLY)
    path = ResponseCache(tmp_path).path(request_key(REQUEST))
    usable = path.read_bytes()
    ResponseCache(tmp_path, "none").unusable([request_key(REQUEST)], "it was no verdict")
    assert path.read_bytes() == usable  # a replay writes nothing
    ResponseCache(tmp_path).unusable([request_key(REQUEST)], "it was no verdict")
    assert json.loads(path.read_text())["response"] == REPLY  # what happened stays readable
    with pytest.raises(CacheMiss, match="the recording holds no usable reply for .*: when it "
                                        "was recorded, it was no verdict. A replay does not ask "
                                        "again: record it again with --ragdive-record-mode=new"):
        ResponseCache(tmp_path, "none").load(REQUEST)
    assert ResponseCache(tmp_path, "new").load(REQUEST) is None
    ResponseCache(tmp_path).store(REQUEST, REPLY)
    assert path.read_bytes() == usable  # recorded again: the entry a usable reply always has


#: the project's judge gives, when FAULT names a stage, replies that cannot be used there: a
#: first question that is not JSON (the generator), "maybe" to the correctness judge (no
#: verdict), a ragas NLI output that is not JSON (through instructor)
FAULTY = PROJECT_CONFTEST + '''
from pytest_ragdive.llm.scripted_replies import generic

def faulty(schema, good):
    def respond(messages):
        if os.environ.get("FAULT") == schema and (
                schema != "YesNo" or "Reference answer" in messages[-1]["content"]):
            return "maybe" if schema == "YesNo" else "not json"
        return good(messages)
    return respond

JUDGE = scripted({"YesNo": faulty("YesNo", yes),
                  "FirstQuestion": faulty("FirstQuestion", generic("FirstQuestion")),
                  "NLIStatementOutput": faulty("NLIStatementOutput",
                                               generic("NLIStatementOutput"))}, name="judge")
'''


def faulty(schema: str, messages: list[dict], fault: str) -> bool:
    """Whether the project's judge gave an unusable reply to this call under ``fault``."""
    return schema == fault and (schema != "YesNo" or "Reference answer" in messages[-1]["content"])


@pytest.mark.parametrize("fault", ["FirstQuestion", "YesNo", "NLIStatementOutput"],
                         ids=["generator", "no-verdict", "ragas"])
def test_a_reply_that_could_not_be_used_is_asked_again_not_replayed(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """An update with a judge whose replies cannot be used at one stage fails its items;
    a replay of that recording says so; the same update with a healthy judge passes,
    asking only what had no usable reply (none of the usable ones again)."""
    project.makeconftest(FAULTY)
    update = ("-m", "ragdive", "--ragdive-update")
    monkeypatch.setenv("FAULT", fault)
    assert project.runpytest(*update).parseoutcomes().get("failed", 0) >= 1
    first = list(calls("fake/judge"))
    assert any(faulty(schema, messages, fault) for schema, messages in first)

    replay = project.runpytest("-m", "ragdive", "--ragdive-record-mode=none")
    replay.stdout.fnmatch_lines([("*the recording holds no usable reply for model "
                                  "'fake/judge'*when it was recorded, *record it again with "
                                  "--ragdive-record-mode=new*")])

    monkeypatch.delenv("FAULT")
    project.runpytest(*update).assert_outcomes(passed=2)
    again = [(schema, messages) for schema, messages in calls("fake/judge")]
    usable = [(schema, messages) for schema, messages in first
              if not faulty(schema, messages, fault)]
    assert again and [call for call in again if call in usable] == []
    project.runpytest("-m", "ragdive", "--ragdive-record-mode=none").assert_outcomes(passed=3)
