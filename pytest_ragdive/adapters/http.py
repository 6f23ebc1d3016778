"""A RAG adapter for a chatbot deployed behind HTTP: no Python glue needed.

``HttpAdapter(url)`` talks to an OpenAI-compatible chat endpoint out of the box; a request
template (or a function) and dotted field paths map it onto any other JSON API. Header
values may name environment variables (``"Bearer ${BOT_TOKEN}"``), expanded at request
time; they never appear in the adapter's repr or in its error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from ..engine.models import Message, RagAnswer
from ..llm.retrying import WaitTooLong, wait
from ..llm.secrets import mask

if TYPE_CHECKING:
    from typing_extensions import Self

#: Builds the JSON body from the question, the visible history and the session id (None
#: outside sessions, and on a session's first request unless ``session_id`` made one).
RequestBuilder = Callable[[str, list[Message], str | None], Any]

#: Where an OpenAI-compatible endpoint puts the reply.
OPENAI_ANSWER = "choices.0.message.content"
#: The keys tried, in order, for the text of a context given as an object.
CONTEXT_TEXT_KEYS = ("text", "content", "page_content", "chunk")

_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MISSING = object()
_OMIT = object()
_LIST_PLACEHOLDERS = ("{history}", "{messages}")


class HttpAdapterError(RuntimeError):
    """The bot could not be asked, or its reply could not be read; the message names the
    URL, what went wrong and what to check. It never holds a header value."""


def lookup(data: Any, path: str) -> Any:
    """The value at dotted ``path`` ("choices.0.message.content") in parsed JSON, or
    ``_MISSING``. A numeric part indexes a list."""
    node = data
    for part in path.split("."):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and _is_index(part) and -len(node) <= int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _is_index(part: str) -> bool:
    return part.lstrip("-").isdigit()


def expand_env(value: str, header: str) -> str:
    """``value`` with every ``${NAME}`` replaced from ``os.environ``; an unset or empty
    variable is an error naming it (CI systems expand a missing secret to "")."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if not found:
            raise HttpAdapterError(
                f"the header {header!r} of the HttpAdapter needs the environment variable "
                f"{name}, which is not set or empty: export it (in CI, from a secret)"
            )
        return found

    return _ENV_VAR.sub(replace, value)


class HttpAdapter:
    """The RAG system under test, reached by POSTing JSON to ``url``.

    By default the body is OpenAI's chat format, ``{"model": model, "messages": [...]}``
    (the history, then the question), and the answer is read from
    ``choices.0.message.content``. For another API, give ``request``: a template whose
    strings ``"{question}"``, ``"{history}"``, ``"{messages}"`` and ``"{session}"`` are
    replaced by those values (as JSON values when they are the whole string; a list item
    ``"{history}"`` or ``"{messages}"`` is spliced into its list; ``"{question}"`` and
    ``"{session}"`` are also replaced inside longer strings; a ``"{session}"`` value is
    left out while there is no session id), or a function ``(question, history,
    session) -> body``. ``answer_field`` and ``contexts_field`` are dotted paths into the
    reply; a missing contexts field gives no contexts. A context may be a string or an
    object whose text is at ``context_text_field`` (default: the first of
    :data:`CONTEXT_TEXT_KEYS` it has).

    ``headers`` values may hold ``${NAME}``, expanded from the environment at each
    request. A request gets ``timeout`` seconds; 429 and 5xx answers and failed
    connections are retried ``retries`` times, waiting as the server's ``Retry-After``
    says or ``backoff`` seconds doubling each time, never longer than ``max_wait``. An
    answer that times out is not retried: the bot may still be working on it.

    ``session_field``: for a bot that keeps the conversation on its side. Each dialogue
    then gets its own session from :meth:`start`, whose id is read from this dotted path
    of every reply (the server names the conversation) or made by ``session_id()`` before
    the first request, and sent as ``"{session}"`` (or the function's third argument).

    The adapter holds one ``httpx.AsyncClient`` for the event loop it is used on, closed
    when that loop ends, by ``close()``/``await aclose()``, or at the end of a ``with``/
    ``async with`` block. ``client_options`` go to ``httpx.AsyncClient`` (``verify``,
    ``proxy``, ``cert``, ...; not ``headers`` or ``timeout``, which are the adapter's own).
    """

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        request: Mapping[str, Any] | RequestBuilder | None = None,
        answer_field: str = OPENAI_ANSWER,
        contexts_field: str | None = "contexts",
        context_text_field: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_wait: float = 60.0,
        session_field: str | None = None,
        session_id: Callable[[], str] | None = None,
        client_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"HttpAdapter url must start with http:// or https://, not {url!r}")
        if timeout <= 0 or retries < 0 or backoff < 0 or max_wait < 0:
            raise ValueError("HttpAdapter: timeout must be positive; retries, backoff and "
                             "max_wait 0 or more")
        own = sorted({"headers", "timeout"} & set(client_options or {}))
        if own:
            raise ValueError(f"HttpAdapter: give {' and '.join(own)} as the adapter's own "
                             f"parameters, not in client_options")
        if request is None:
            request = {"model": model, "messages": "{messages}"} if model else {
                "messages": "{messages}"}
        elif model is not None:
            raise ValueError("HttpAdapter: give model= for the OpenAI-style body, or request=, "
                             "not both (put the model in the request template)")
        if not callable(request) and not isinstance(request, Mapping):
            raise TypeError("HttpAdapter request must be a dict template or a function "
                            "(question, history, session) -> body")
        if session_field is not None and isinstance(request, Mapping) and not _mentions(
            request, "{session}"
        ):
            raise ValueError(
                "HttpAdapter: session_field is set but the request template never sends the "
                "session: put \"{session}\" where the bot expects the conversation id"
            )
        self.url = url
        self.model = model
        self.request = request
        self.answer_field = answer_field
        self.contexts_field = contexts_field
        self.context_text_field = context_text_field
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = backoff
        self.max_wait = max_wait
        self.session_field = session_field
        self.session_id = session_id
        self._headers = dict(headers or {})  # values are never shown: see __repr__
        self._client_options = dict(client_options or {})
        self._open: _Open | None = None

    def __repr__(self) -> str:
        parts = [repr(self.url)]
        if self.model:
            parts.append(f"model={self.model!r}")
        parts.append(f"answer_field={self.answer_field!r}")
        parts.append(f"contexts_field={self.contexts_field!r}")
        if self._headers:
            parts.append(f"headers=[{', '.join(sorted(self._headers))}]")
        if self.session_field:
            parts.append(f"session_field={self.session_field!r}")
        return f"HttpAdapter({', '.join(parts)})"

    # -- the RagAdapter protocol ------------------------------------------------------

    def start(self) -> HttpSession | None:
        """A new server-side conversation per dialogue when ``session_field`` is set;
        otherwise None, and the adapter itself answers (sending the history)."""
        if self.session_field is None:
            return None
        return HttpSession(self, self.session_id() if self.session_id else None)

    async def answer(self, question: str, history: list[Message]) -> RagAnswer:
        """POST the question and the history; the reply's answer and contexts."""
        reply = await self.post(self.body(question, history, None))
        return self.read(reply)

    # -- the parts, usable on their own ------------------------------------------------

    def body(self, question: str, history: Sequence[Message], session: str | None) -> Any:
        """The JSON body sent for ``question``."""
        if callable(self.request):
            body = self.request(question, list(history), session)
        else:
            past = [{"role": m.role, "content": m.content} for m in history]
            values = {
                "{question}": question,
                "{history}": past,
                "{messages}": [*past, {"role": "user", "content": question}],
                "{session}": _OMIT if session is None else session,
            }
            body = _fill(self.request, values)
        try:
            json.dumps(body)
        except (TypeError, ValueError) as exc:
            raise HttpAdapterError(
                f"the request body for {self.url} is not JSON ({exc}): check request="
            ) from None
        return body

    def read(self, reply: Any) -> RagAnswer:
        """The answer and contexts in a parsed reply."""
        answer = lookup(reply, self.answer_field)
        if answer is _MISSING:
            raise HttpAdapterError(
                f"the reply of {self.url} has no answer at {self.answer_field!r} "
                f"({_shape(reply)}): set answer_field= to the dotted path of the answer text"
            )
        if not isinstance(answer, str):
            raise HttpAdapterError(
                f"the reply of {self.url} holds {type(answer).__name__} at "
                f"{self.answer_field!r}, not the answer text: check answer_field="
            )
        return RagAnswer(answer=answer, contexts=self._contexts(reply))

    def _contexts(self, reply: Any) -> list[str]:
        if self.contexts_field is None:
            return []
        found = lookup(reply, self.contexts_field)
        if found is _MISSING or found is None:
            return []
        if not isinstance(found, list):
            raise HttpAdapterError(
                f"the reply of {self.url} holds {type(found).__name__} at "
                f"{self.contexts_field!r}, not a list of contexts: check contexts_field="
            )
        return [self._context_text(item, i) for i, item in enumerate(found)]

    def _context_text(self, item: Any, index: int) -> str:
        if isinstance(item, str):
            return item
        keys = (self.context_text_field,) if self.context_text_field else CONTEXT_TEXT_KEYS
        for key in keys:
            text = lookup(item, key)
            if isinstance(text, str):
                return text
        raise HttpAdapterError(
            f"context {index} at {self.contexts_field!r} in the reply of {self.url} has no text "
            f"at {' or '.join(map(repr, keys))} ({_shape(item)}): set context_text_field="
        )

    async def post(self, body: Any) -> Any:
        """POST ``body`` with retries; the parsed JSON reply."""
        headers, secrets = self._expanded_headers()
        client = self._client_for_loop()
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            last = attempt > self.retries
            try:
                response = await client.post(self.url, json=body, headers=headers)
            except httpx.TimeoutException as exc:
                if isinstance(exc, httpx.ConnectTimeout) and not last:
                    await asyncio.sleep(self._wait(attempt, None))
                    continue
                raise HttpAdapterError(
                    f"POST {self.url}: no answer within timeout={self.timeout:g} s "
                    f"({type(exc).__name__}, attempt {attempt}). Check that the bot is not "
                    f"stuck; if it is just slow, raise timeout= (and ragdive_adapter_timeout)"
                ) from None
            except (httpx.ConnectError, httpx.RemoteProtocolError) as exc:
                if not last:
                    await asyncio.sleep(self._wait(attempt, None))
                    continue
                raise HttpAdapterError(
                    f"POST {self.url} failed after {attempt} attempts: {type(exc).__name__}: "
                    f"{mask(str(exc), secrets)}. Check that the bot is running and "
                    f"reachable at this URL"
                ) from None
            except httpx.HTTPError as exc:
                raise HttpAdapterError(
                    f"POST {self.url} failed: {type(exc).__name__}: {mask(str(exc), secrets)}"
                ) from None
            status = response.status_code
            if (status == 429 or status >= 500) and not last:
                await asyncio.sleep(self._wait(attempt, response, secrets))
                continue
            break
        if not 200 <= status < 300:
            raise HttpAdapterError(self._status_message(response, attempt, secrets, started))
        try:
            return json.loads(response.content)
        except ValueError as exc:
            raise HttpAdapterError(
                f"POST {self.url} answered {status} with a body that is not JSON ({exc}; "
                f"content-type {response.headers.get('content-type', 'none')!r}):\n"
                f"{_excerpt(response, secrets)}\nCheck that the URL is the bot's JSON API "
                f"endpoint (not a web page or a proxy's error page)"
            ) from None

    def _expanded_headers(self) -> tuple[dict[str, str], list[str]]:
        """Headers with the environment expanded, and the strings to hide in messages."""
        headers = {name: expand_env(value, name) for name, value in self._headers.items()}
        secrets: set[str] = set()
        for value in headers.values():
            secrets.add(value)
            secrets.update(part for part in value.split() if len(part) >= 8)
        return headers, sorted((s for s in secrets if len(s) >= 6), key=len, reverse=True)

    def _wait(self, attempt: int, response: httpx.Response | None,
              secrets: Sequence[str] = ()) -> float:
        """Seconds before the next attempt (``llm.retrying``: the server's Retry-After, else
        the backoff); a server that asks for more than ``max_wait`` fails the request."""
        header = response.headers.get("retry-after") if response is not None else None
        try:
            return wait(attempt, first=self.backoff, longest=self.max_wait, header=header)
        except WaitTooLong as exc:
            assert response is not None
            raise HttpAdapterError(
                f"POST {self.url} answered {response.status_code} and {exc} (Retry-After), "
                f"longer than max_wait={self.max_wait:g} s:\n{_excerpt(response, secrets)}\n"
                f"Lower the load (ragdive_concurrency, fewer documents) or raise max_wait="
            ) from None

    def _status_message(self, response: httpx.Response, attempts: int, secrets: Sequence[str],
                        started: float) -> str:
        status = response.status_code
        tried = (f" after {attempts} attempts in {time.monotonic() - started:.1f} s "
                 f"(429 and 5xx are retried {self.retries} times)" if attempts > 1 else "")
        return (
            f"POST {self.url} answered {status} {response.reason_phrase}{tried}:\n"
            f"{_excerpt(response, secrets)}\n{_advice(status)}"
        )

    # -- the HTTP client ----------------------------------------------------------------

    @property
    def client(self) -> httpx.AsyncClient | None:
        """The open HTTP client, if any."""
        return self._open.client if self._open is not None else None

    def _client_for_loop(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._open is not None and self._open.loop is not loop:
            # run_dialogue runs each dialogue on a new event loop, and a client's
            # connections belong to the loop that opened them
            self._let_go()
        if self._open is None:
            options: dict[str, Any] = {"follow_redirects": True, **self._client_options}
            client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), **options)
            self._open = _Open.start(client, loop)
        return self._open.client

    def _let_go(self) -> None:
        """Close the client on its loop if that loop still runs (in another thread)."""
        opened, self._open = self._open, None
        if opened is not None and opened.loop.is_running():
            asyncio.run_coroutine_threadsafe(opened.close(), opened.loop)

    async def aclose(self) -> None:
        """Close the HTTP client (a later request opens a new one)."""
        opened, self._open = self._open, None
        if opened is None:
            return
        if opened.loop is asyncio.get_running_loop():
            await opened.close()
        elif opened.loop.is_running():
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(opened.close(), opened.loop))

    def close(self) -> None:
        """Close the HTTP client from synchronous code, such as a fixture's teardown; the
        event loop that used it may run in another thread (the plugin's does)."""
        opened = self._open
        if opened is None:
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is opened.loop:
            raise RuntimeError("HttpAdapter.close() inside its event loop: await aclose()")
        self._open = None
        if opened.loop.is_running():
            asyncio.run_coroutine_threadsafe(opened.close(), opened.loop).result(timeout=30)
        elif not opened.loop.is_closed() and running is None:
            opened.loop.run_until_complete(opened.close())
        # a loop that ended (asyncio.run, run_dialogue) closed the client as it did

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@dataclass
class _Open:
    """An HTTP client and the task that closes it on its own event loop: when asked to, or
    when the loop ends and cancels what is left on it (``asyncio.run``, ``run_dialogue``)."""

    client: httpx.AsyncClient
    loop: asyncio.AbstractEventLoop
    closing: asyncio.Event
    keeper: asyncio.Task[None]

    @classmethod
    def start(cls, client: httpx.AsyncClient, loop: asyncio.AbstractEventLoop) -> _Open:
        closing = asyncio.Event()
        keeper = loop.create_task(cls._keep(client, closing), name="ragdive-http-client")
        # a loop stopped without cancelling its tasks (the plugin's, at exit) drops it quietly
        keeper._log_destroy_pending = False  # type: ignore[attr-defined]
        return cls(client, loop, closing, keeper)

    @staticmethod
    async def _keep(client: httpx.AsyncClient, closing: asyncio.Event) -> None:
        try:
            await closing.wait()
        finally:
            await client.aclose()

    async def close(self) -> None:
        self.closing.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self.keeper


class HttpSession:
    """One dialogue's conversation on a bot that keeps the history itself."""

    def __init__(self, adapter: HttpAdapter, session_id: str | None) -> None:
        self.adapter = adapter
        self.id = session_id

    def __repr__(self) -> str:
        return f"HttpSession({self.adapter!r}, id={self.id!r})"

    async def answer(self, question: str, history: list[Message]) -> RagAnswer:
        adapter = self.adapter
        reply = await adapter.post(adapter.body(question, history, self.id))
        field = adapter.session_field or ""
        found = lookup(reply, field)
        if found is not _MISSING and found is not None and not isinstance(found, (dict, list)):
            self.id = str(found)
        elif self.id is None:
            raise HttpAdapterError(
                f"the reply of {adapter.url} has no session id at {field!r} "
                f"({_shape(reply)}): set session_field= to where the bot returns its "
                f"conversation id, or give session_id= to make one before the first request"
            )
        return adapter.read(reply)


def _fill(node: Any, values: Mapping[str, Any]) -> Any:
    """The template ``node`` with its placeholders replaced (see :class:`HttpAdapter`)."""
    if isinstance(node, str):
        if node in values:
            return values[node]
        for name in ("{question}", "{session}"):
            if name in node:
                value = values[name]
                node = node.replace(name, "" if value is _OMIT else str(value))
        return node
    if isinstance(node, Mapping):
        filled = {key: _fill(value, values) for key, value in node.items()}
        return {key: value for key, value in filled.items() if value is not _OMIT}
    if isinstance(node, (list, tuple)):
        out: list[Any] = []
        for item in node:
            if isinstance(item, str) and item in _LIST_PLACEHOLDERS:
                out.extend(values[item])
                continue
            value = _fill(item, values)
            if value is not _OMIT:
                out.append(value)
        return out
    return node


def _mentions(node: Any, placeholder: str) -> bool:
    if isinstance(node, str):
        return placeholder in node
    if isinstance(node, Mapping):
        return any(_mentions(v, placeholder) for v in node.values())
    if isinstance(node, (list, tuple)):
        return any(_mentions(v, placeholder) for v in node)
    return False


def _excerpt(response: httpx.Response, secrets: Sequence[str], lines: int = 5,
             width: int = 200) -> str:
    """The first lines of a response body, cut, indented, with header values hidden."""
    text = mask(response.content[:4000].decode("utf-8", "replace"), secrets)
    shown = [line[:width] + (" ..." if len(line) > width else "")
             for line in text.strip().splitlines()[:lines]]
    if len(text.strip().splitlines()) > lines:
        shown.append("...")
    return "\n".join(f"  | {line}" for line in shown) or "  | (empty body)"


def _advice(status: int) -> str:
    if status in (401, 403):
        return ("Check the credentials: the headers= of the HttpAdapter and the environment "
                "variables they name")
    if status in (404, 405):
        return "Check the URL: the path of the bot's chat endpoint, and that it takes POST"
    if status == 429:
        return ("The bot kept rate-limiting: lower the load (ragdive_concurrency, fewer "
                "documents) or raise retries= / max_wait=")
    if status >= 500:
        return "The bot failed on this request: check its logs"
    return ("Check the request body: model= or request= (the fields and format the bot "
            "expects)")


def _shape(data: Any) -> str:
    """A short description of parsed JSON for error messages: its keys, not its values."""
    if isinstance(data, Mapping):
        keys = list(data)
        more = ", ..." if len(keys) > 12 else ""
        return f"its keys: {', '.join(map(str, keys[:12]))}{more}" if keys else "an empty object"
    if isinstance(data, list):
        return f"a list of {len(data)}"
    return f"a {type(data).__name__}"
