"""Faults in the response cache: entries that cannot be trusted are never replayed silently,
and a folder that cannot be written is one line at start-up."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

from pytest_ragdive.llm.cache import CacheMiss, CacheWarning, ResponseCache, request_key

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
