"""A judge on the user's own machine: served weights the package has a profile of are judged
by it under the name their server gives them, and ``calibrate`` reaches a local server that
wants a key, read from the environment and written nowhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_provider_params import _offline, openai_reply

from pytest_ragdive.__main__ import main
from pytest_ragdive.calibration.files import dumps, load
from pytest_ragdive.engine.base.profile import (
    Profile,
    Profiles,
    default_profile,
    served_name,
    shipped,
)
from pytest_ragdive.plugin.profiling import described

EMBEDDED = "embedded/qwen2.5-coder-1.5b"
WEIGHTS = "qwen2.5-coder-1.5b-instruct-q4_k_m"


@pytest.mark.parametrize("model", [
    f"openai/{WEIGHTS}", f"ollama_chat/{WEIGHTS}", f"hosted_vllm/{WEIGHTS}",
    f"openai//models/{WEIGHTS.upper()}.gguf",
])
def test_the_embedded_weights_served_under_their_name_get_the_shipped_profile(
    model: str
) -> None:
    profiles = Profiles()
    assert profiles.of(model) == shipped()[EMBEDDED]
    assert profiles.origin(model) == f"shipped with pytest-ragdive for the weights of {EMBEDDED}"
    assert "scored with its profile shipped with pytest-ragdive for the weights" in described(
        model, profiles)


@pytest.mark.parametrize("model", ["openai/qwen", "openai/qwen2.5-coder-1.5b-instruct-q8_0",
                                   WEIGHTS, "openai/"])
def test_other_names_and_other_quantisations_are_uncalibrated(model: str) -> None:
    profiles = Profiles()
    assert profiles.of(model) == default_profile()
    assert profiles.origin(model) == "uncalibrated"
    assert "is uncalibrated" in described(model, profiles)


def test_served_name_is_the_weights_file_after_provider_and_folder() -> None:
    assert served_name("openai//srv/models/Qwen-1.5B.gguf") == "qwen-1.5b"
    assert served_name("ollama/qwen2.5-coder:1.5b") == "qwen2.5-coder:1.5b"
    assert served_name("qwen") == ""


def test_a_profile_file_names_served_weights_too_and_comes_first(tmp_path: Path) -> None:
    mine = Profile(calibrated="today", rewrite_follow_ups=False, served_as=(WEIGHTS,),
                   judges=shipped()[EMBEDDED].judges)
    path = tmp_path / "profiles.json"
    path.write_text(dumps({"my/served": mine}))
    profiles = load(path)
    assert profiles.of(f"openai/{WEIGHTS}") == mine
    assert profiles.origin(f"openai/{WEIGHTS}") == f"from {path} for the weights of my/served"
    # a profile without served names writes none
    assert "served_as" not in dumps({"m": Profile()})
    assert json.loads(dumps({"m": mine}))["profiles"]["m"]["served_as"] == [WEIGHTS]


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
