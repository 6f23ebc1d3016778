"""The embedded model served over HTTP by llama-cpp-python's OpenAI-compatible server, for a
test or a script that needs a real served model."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from . import runtime, weights


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def embedded_server(args: Sequence[str] = (), *, ready_within: float = 180.0) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server running the embedded model on a free
    loopback port while the context lasts; yields its base URL (``http://127.0.0.1:N/v1``)
    for ``Model("openai/<any name>", {"api_base": url, "api_key": "<any>"})``.

    Needs ``pytest-ragdive[embedded]``, which brings llama-cpp-python's ``server`` extra.
    ``args`` are more server options (``python -m llama_cpp.server --help``).
    """
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(weights.model_path()),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(runtime.N_CTX),
               *args]
    # OpenMP threads that sleep while they wait: the server shares the cores with the test run
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")}
    with tempfile.TemporaryDirectory(prefix="ragdive-server-") as folder:
        log = Path(folder) / "server.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_until_ready(url, process, log, ready_within)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_ready(url: str, process: subprocess.Popen[bytes], log: Path, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the model server exited with {process.returncode}: "
                               f"{log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the model server did not answer within {limit:g} s: "
                       f"{log.read_text(errors='replace')[-2000:]}")
