"""A judge on the user's own machine: ``calibrate`` reaches a local server that wants a key,
read from the environment and written nowhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from test_provider_params import _offline, openai_reply

from pytest_ragdive.__main__ import main

# -------------------------------------------------------------- calibrate against a server


def _calibrate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str
               ) -> tuple[int, str]:
    code = main(["calibrate", "--model", "openai/local-judge", "--only", "correctness",
                 "--api-base", "http://127.0.0.1:8080/v1", "--cache-dir", str(tmp_path / "c"),
                 "--out", str(tmp_path / "profiles.json"), "--concurrency", "4", *args])
    printed = capsys.readouterr()
    return code, printed.out + printed.err


def test_calibrate_sends_the_servers_key_from_the_environment_and_keeps_it_nowhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-local-9f3a7c"
    monkeypatch.setenv("LOCAL_JUDGE_KEY", key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def reply(request: httpx.Request) -> dict[str, Any]:
        return openai_reply("Yes", None)

    sent = _offline(monkeypatch, reply)
    code, out = _calibrate(tmp_path, capsys, "--api-key-env", "LOCAL_JUDGE_KEY")
    assert code == 0, out
    assert sent and {r.headers["authorization"] for r in sent} == {f"Bearer {key}"}
    assert {str(r.url) for r in sent} == {"http://127.0.0.1:8080/v1/chat/completions"}
    written = [p.read_text() for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 1 and not any(key in text for text in written)
    assert key not in out and key not in caplog.text


def test_calibrate_with_an_unset_key_variable_says_so_and_calls_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOCAL_JUDGE_KEY", raising=False)
    sent = _offline(monkeypatch, lambda request: openai_reply("Yes", None))
    code, out = _calibrate(tmp_path, capsys, "--api-key-env", "LOCAL_JUDGE_KEY")
    assert code == 2
    assert "--api-key-env names 'LOCAL_JUDGE_KEY', which is not set" in out
    assert "export LOCAL_JUDGE_KEY=" in out
    assert sent == [] and not any(tmp_path.iterdir())
