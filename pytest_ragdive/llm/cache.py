"""Content-addressed cache of model responses, with record modes.

One JSON file per request, named by the SHA-256 of the request's content (model,
messages, response format and sampling parameters). Credentials are never part of
the key nor of the file. Writes go to a temporary file that replaces the entry
atomically, so several processes may record the same key at once.

A reply the caller could not use (it did not parse after every attempt, it was no
verdict) stays in its entry with the reason (``unusable``): recording asks again, and a
replay says the recording holds no usable reply instead of replaying it.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..files import atomic_write_text

RecordMode = Literal["none", "new", "all"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "new", "all")

#: Request fields that change a model's answer. Anything else (api_key, timeouts, headers,
#: ...) stays out of the key and out of the file. ``server`` is the client's: the base URL of
#: a model's server without credentials or query (``Model.server_id``), absent for a
#: provider's default endpoint, so that two servers of one model name never share replies.
KEY_FIELDS = (
    "server",
    "model",
    "messages",
    "response_format",
    "temperature",
    "seed",
    "top_p",
    "max_tokens",
    "stop",
    "tools",
    "tool_choice",
    "logprobs",
    "top_logprobs",
)
FORMAT_VERSION = 1


class CacheMiss(LookupError):
    """Raised in record mode ``none`` when a request has no recorded response."""


class CacheWarning(UserWarning):
    pass


def request_key(request: dict[str, Any]) -> str:
    content = {k: request[k] for k in KEY_FIELDS if request.get(k) is not None}
    blob = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


_CONTEXT_LINES = ("User:", "Assistant:", "The conversation")


def prompt_title(text: str) -> str:
    """The line that names a prompt: its first, or for a prompt that starts with a source
    text and a conversation, the first line after them."""
    if "</source>" in text:
        text = text.split("</source>", 1)[1]
    lines = [line for line in text.strip().splitlines()
             if line.strip() and not line.startswith(_CONTEXT_LINES)]
    return lines[0][:120] if lines else ""


def describe(request: dict[str, Any]) -> str:
    """The model and the title of the last user message, for error messages."""
    prompt = ""
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            prompt = prompt_title(str(message.get("content", "")))
            break
    return f"model {request.get('model')!r}, prompt {prompt!r}"


@dataclass
class ResponseCache:
    directory: Path
    mode: RecordMode = "new"

    def __post_init__(self) -> None:
        if self.mode not in RECORD_MODES:
            raise ValueError(
                f"unknown record mode {self.mode!r}: use one of {', '.join(RECORD_MODES)}"
            )
        self.directory = Path(self.directory)

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def load(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The recorded response of ``request``, or None when it must be called."""
        key = request_key(request)
        if self.mode == "all":
            return None
        path = self.path(key)
        try:
            entry = self._read(path, key)
        except ValueError as exc:
            if self.mode == "none":
                raise CacheMiss(
                    f"the recorded response of {describe(request)} is unusable: {exc}. "
                    f"Delete {path} and record it again with --ragdive-record-mode=new."
                ) from None
            warnings.warn(f"ignoring ragdive cache entry {path}: {exc}; it is treated as a "
                          f"miss and recorded again", CacheWarning, stacklevel=2)
            entry = None
        if entry is not None and "unusable" in entry:
            if self.mode == "none":
                raise CacheMiss(
                    f"the recording holds no usable reply for {describe(request)}: when it was "
                    f"recorded, {entry['unusable']}. A replay does not ask again: record it "
                    f"again with --ragdive-record-mode=new ({path}).")
            entry = None  # asked again, and the reply recorded over it
        if entry is not None:
            return entry["response"]
        if self.mode == "none":
            raise CacheMiss(
                f"no recorded response for {describe(request)} in {self.directory} "
                f"(record mode 'none' replays only). Record it with --ragdive-record-mode=new."
            )
        return None

    def contains(self, request: dict[str, Any]) -> bool:
        """Whether ``request`` has a recorded response (whatever the record mode)."""
        return self.path(request_key(request)).is_file()

    def remember(self, step: str, text: str, compute: Callable[[], str]) -> str:
        """The recorded result of a step of the bot that is not a model call (a retrieval's
        ranking, an embedding) for ``text``; ``compute`` gives it where the record mode asks
        for it, and it is recorded. A replay then does not depend on what the step computes on
        this machine: embeddings, for one, round differently on different CPUs."""
        request = {"model": step, "messages": [{"role": "user", "content": text}]}
        reply = self.load(request)
        if reply is None:
            reply = {"content": compute(), "prompt_tokens": 0, "completion_tokens": 0}
            self.store(request, reply)
        return str(reply["content"])

    def store(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        key = request_key(request)
        entry = {
            "format": FORMAT_VERSION,
            "key": key,
            "request": {"summary": describe(request)},
            "response": response,
        }
        text = json.dumps(entry, indent=1, sort_keys=True, ensure_ascii=False)
        atomic_write_text(self.path(key), text)

    def unusable(self, keys: Iterable[str], why: str) -> None:
        """Mark the entries of ``keys`` as replies that could not be used, for ``why``; a
        replay only (record mode ``none``) writes nothing."""
        if self.mode == "none":
            return
        for key in dict.fromkeys(keys):
            path = self.path(key)
            try:
                entry = self._read(path, key)
            except ValueError:
                continue  # recorded again when it is next asked
            if entry is not None:
                entry["unusable"] = why[:500]
                text = json.dumps(entry, indent=1, sort_keys=True, ensure_ascii=False)
                atomic_write_text(path, text)

    @staticmethod
    def _read(path: Path, key: str) -> dict[str, Any] | None:
        """The entry at ``path``; None when there is none, ValueError when it is unusable."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"unreadable ({exc})") from None
        try:
            entry = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("response"), dict):
            raise ValueError("not a cache entry")
        if entry.get("format") != FORMAT_VERSION:
            raise ValueError(
                f"format {entry.get('format')!r}, this pytest-ragdive reads format "
                f"{FORMAT_VERSION} (written by another version?)")
        if entry.get("key") != key:
            raise ValueError(f"it holds the entry of key {entry.get('key')!r}")
        response = entry["response"]
        if not isinstance(response.get("content"), str):
            raise ValueError("the response has no 'content' text")
        for field in ("prompt_tokens", "completion_tokens"):
            if not isinstance(response.get(field), int):
                raise ValueError(f"the response has no '{field}' count")
        top = response.get("top_logprobs", [])
        if not isinstance(top, list) or not all(
                isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], (int, float)) and not isinstance(pair[1], bool)
                and math.isfinite(pair[1]) and pair[1] <= 0
                for pair in top):
            raise ValueError("its 'top_logprobs' are not [token, logprob] pairs with logprob "
                             "<= 0")
        response.setdefault("cost", 0.0)
        return entry
