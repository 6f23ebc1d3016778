"""A RAG adapter for a chatbot deployed behind HTTP: no Python glue needed.

``HttpAdapter(url)`` talks to an OpenAI-compatible chat endpoint out of the box; a request
template (or a function) and dotted field paths map it onto any other JSON API. Header
values may name environment variables (``"Bearer ${BOT_TOKEN}"``), expanded at request
time; they never appear in the adapter's repr or in its error messages. The parts:
``http_template`` (the body), ``http_transport`` (the POST and its retries), ``http_reply``
(reading the reply), ``http_client`` (the HTTP client of each event loop).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from ..engine.base.models import Message, RagAnswer
from ..llm.secrets import mask
from . import http_reply, http_template
from .http_client import LoopClient
from .http_errors import HttpAdapterError, shape
from .http_reply import OPENAI_ANSWER
from .http_template import RequestBuilder
from .http_transport import Endpoint, expand_headers

if TYPE_CHECKING:
    from typing import Self


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
    :data:`~.http_reply.CONTEXT_TEXT_KEYS` it has).

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
        if (session_field is not None and isinstance(request, Mapping)
                and not http_template.mentions(request, "{session}")):
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
        self._clients = LoopClient()

    def __repr__(self) -> str:
        parts = [repr(mask(self.url))]
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
        body = http_template.build(self.request, question, history, session)
        try:
            json.dumps(body)
        except (TypeError, ValueError) as exc:
            raise HttpAdapterError(
                f"the request body for {mask(self.url)} is not JSON ({exc}): check request="
            ) from None
        return body

    def read(self, reply: Any) -> RagAnswer:
        """The answer and contexts in a parsed reply."""
        return http_reply.read(reply, url=mask(self.url), answer_field=self.answer_field,
                               contexts_field=self.contexts_field,
                               context_text_field=self.context_text_field)

    async def post(self, body: Any) -> Any:
        """POST ``body`` with retries; the parsed JSON reply."""
        headers, secrets = expand_headers(self._headers)
        client = self._clients.for_loop(self._new_client)
        endpoint = Endpoint(self.url, self.timeout, self.retries, self.backoff, self.max_wait)
        return await endpoint.post(client, body, headers, secrets)

    # -- the HTTP client ----------------------------------------------------------------

    def _new_client(self) -> httpx.AsyncClient:
        options: dict[str, Any] = {"follow_redirects": True, **self._client_options}
        return httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), **options)

    @property
    def client(self) -> httpx.AsyncClient | None:
        """The open HTTP client, if any."""
        return self._clients.client

    async def aclose(self) -> None:
        """Close the HTTP client (a later request opens a new one)."""
        await self._clients.aclose()

    def close(self) -> None:
        """Close the HTTP client from synchronous code, such as a fixture's teardown; the
        event loop that used it may run in another thread (the plugin's does)."""
        self._clients.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


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
        found = http_reply.session_id(reply, field)
        if found is not None:
            self.id = found
        elif self.id is None:
            raise HttpAdapterError(
                f"the reply of {mask(adapter.url)} has no session id at {field!r} "
                f"({shape(reply)}): set session_field= to where the bot returns its "
                f"conversation id, or give session_id= to make one before the first request"
            )
        return adapter.read(reply)
