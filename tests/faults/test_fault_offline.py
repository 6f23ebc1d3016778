"""A pytest run never reaches the network for the libraries the plugin drives, whatever a
conftest imports first."""

from __future__ import annotations

import pytest

GUARDED_CONFTEST = '''
import socket

attempts = []

def _refuse(self, address, *args, **kwargs):
    attempts.append(address)
    raise OSError("no network in this test")

socket.socket.connect = _refuse
socket.create_connection = lambda address, *a, **k: _refuse(None, address)

import litellm  # before any ragdive test runs, as a user's conftest may

def pytest_sessionfinish(session):
    print(f"\\nconnection attempts: {len(attempts)}; prices known: {len(litellm.model_cost)}")
'''


def test_a_conftest_that_imports_litellm_first_opens_no_socket(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LITELLM_LOCAL_MODEL_COST_MAP", raising=False)
    pytester.makeconftest(GUARDED_CONFTEST)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*connection attempts: 0; prices known: *"])
    assert "prices known: 0" not in result.stdout.str()
