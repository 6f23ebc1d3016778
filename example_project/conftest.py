"""Wires the CityGuide bot and the embedded judge model into pytest-ragdive."""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.cache import ResponseCache
from pytest_ragdive.llm import LLMClient
from ragbot import RagBot

HERE = Path(__file__).resolve().parent
JUDGE_MODEL = "embedded/qwen2.5-coder-1.5b"


def _setting(config: pytest.Config, name: str, default: str) -> str:
    """A ragdive setting the way the plugin reads it: command line, then ini, then default."""
    try:
        value = config.getoption(name)
    except ValueError:  # the plugin is not loaded, so it added no such option
        value = None
    if value is None:
        try:
            value = config.getini(name)
        except ValueError:
            value = None
    return str(value) if value not in (None, "") else default


@pytest.fixture(scope="session")
def ragdive_adapter(pytestconfig: pytest.Config) -> RagBot:
    """The bot under test, recording its model calls in the plugin's response cache.

    A relative cache folder is taken from the rootdir, as the plugin does; this folder's
    pytest.ini makes the rootdir this folder, also when pytest starts in the repo root.
    """
    root = getattr(pytestconfig, "rootpath", HERE)
    cache_dir = Path(_setting(pytestconfig, "ragdive_cache_dir", ".ragdive/cache"))
    if not cache_dir.is_absolute():
        cache_dir = root / cache_dir
    mode = _setting(pytestconfig, "ragdive_record_mode", "new")
    timeout = float(_setting(pytestconfig, "ragdive_call_timeout", "600"))
    # one call in flight: the embedded model answers one call at a time anyway, and a call
    # waiting here does not count against its timeout as a call queued in the model does
    cache = ResponseCache(cache_dir.resolve(), mode)  # type: ignore[arg-type]
    client = LLMClient(cache, concurrency=1, timeout=timeout)
    return RagBot(client=client)


@pytest.fixture(scope="session")
def ragdive_judges() -> ragdive.Judges:
    """The offline judge; ``--ragdive-model`` overrides it from the command line."""
    return ragdive.Judges(JUDGE_MODEL)


ragdive_document = ragdive.document_fixture("kb/*.md")
