"""HttpAdapter against a real HTTP server on a free loopback port, started by each test."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import pytest_ragdive as ragdive
from pytest_ragdive.adapters.http import HttpAdapter, HttpAdapterError
from pytest_ragdive.engine.base.metrics import ROLE_METRICS
from pytest_ragdive.engine.conversation.dialogue import run_blocking
from pytest_ragdive.plugin.scheduling import Runner

TOKEN = "tok-5f2c9e81d7a04b63"  # a made-up credential: it must never show up in messages
HISTORY = [ragdive.Message(role="user", content="Where is the tower?"),
           ragdive.Message(role="assistant", content="In Alder.")]


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list: sent as JSON; str/bytes: sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


def openai_reply(text: str, **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}], **extra}


class LocalBot:
    """A threaded HTTP/1.1 server (keep-alive, like a real service) whose replies come
    from ``queue`` first, then from ``default(seen)``."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.queue: list[Reply] = []
        self.default: Callable[[Seen], Reply] = lambda seen: Reply(body=openai_reply("ok"))
        self.stop = threading.Event()
        bot = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                bot.requests.append(seen)
                reply = bot.queue.pop(0) if bot.queue else bot.default(seen)
                if reply.delay:
                    bot.stop.wait(reply.delay)
                payload = reply.body
                if isinstance(payload, (dict, list)):
                    payload = json.dumps(payload)
                data = payload.encode() if isinstance(payload, str) else (payload or b"")
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()

    def url(self, path: str = "/v1/chat/completions") -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def bot() -> Iterator[LocalBot]:
    server = LocalBot()
    yield server
    server.close()


def ask(adapter: HttpAdapter, question: str = "How tall is it?",
        history: list[ragdive.Message] | None = None) -> ragdive.RagAnswer:
    async def main() -> ragdive.RagAnswer:
        async with adapter:
            return await adapter.answer(question, list(history or []))
    return asyncio.run(main())


def failure(adapter: HttpAdapter, **kwargs: Any) -> str:
    with pytest.raises(HttpAdapterError) as info:
        ask(adapter, **kwargs)
    return str(info.value)


# -- requests and replies ------------------------------------------------------------------


def test_openai_style_endpoint_gets_history_and_question(bot: LocalBot) -> None:
    bot.queue.append(Reply(body=openai_reply("It is 120 m.")))
    answer = ask(HttpAdapter(bot.url(), model="support-bot"), history=HISTORY)
    assert answer == ragdive.RagAnswer(answer="It is 120 m.", contexts=[])
    (seen,) = bot.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["content-type"] == "application/json"
    assert seen.body == {"model": "support-bot", "messages": [
        {"role": "user", "content": "Where is the tower?"},
        {"role": "assistant", "content": "In Alder."},
        {"role": "user", "content": "How tall is it?"},
    ]}


def test_contexts_from_a_dotted_path_as_strings_or_objects(bot: LocalBot) -> None:
    documents = [{"content": "The tower is 120 m tall.", "title": "tower"},
                 "It opened in 1931.", {"text": "Alder is a town."}]
    message = {"role": "assistant", "content": "120 m.", "context": {"documents": documents}}
    bot.default = lambda seen: Reply(body={"choices": [{"message": message}]})
    adapter = HttpAdapter(bot.url(), contexts_field="choices.0.message.context.documents")
    assert ask(adapter).contexts == ["The tower is 120 m tall.", "It opened in 1931.",
                                     "Alder is a town."]
    # a named text field is the only one read
    only_title = HttpAdapter(bot.url(), contexts_field="choices.0.message.context.documents",
                             context_text_field="title")
    message_text = failure(only_title)
    assert "context 1 at 'choices.0.message.context.documents'" not in message_text
    assert "context 2" in message_text and "'title'" in message_text
    assert "context_text_field=" in message_text


def test_contexts_absent_or_null_give_none(bot: LocalBot) -> None:
    bot.queue += [Reply(body=openai_reply("a")), Reply(body=openai_reply("b", contexts=None))]
    assert ask(HttpAdapter(bot.url())).contexts == []
    assert ask(HttpAdapter(bot.url())).contexts == []
    bot.queue.append(Reply(body=openai_reply("c", contexts={"not": "a list"})))
    assert "not a list of contexts" in failure(HttpAdapter(bot.url()))


def test_custom_mapping_with_a_template(bot: LocalBot) -> None:
    bot.queue.append(Reply(body={"data": {"reply": "120 m.", "sources": [
        {"page_content": "The tower is 120 m tall.", "metadata": {"id": 3}}]}}))
    adapter = HttpAdapter(
        bot.url("/api/ask"),
        request={"query": "{question}", "chat_history": "{history}",
                 "options": {"note": "asked: {question}", "top_k": 3},
                 "turns": [{"role": "system", "content": "Be brief."}, "{messages}"]},
        answer_field="data.reply", contexts_field="data.sources",
    )
    answer = ask(adapter, history=HISTORY)
    assert answer == ragdive.RagAnswer(answer="120 m.", contexts=["The tower is 120 m tall."])
    body = bot.requests[0].body
    assert body["query"] == "How tall is it?"
    assert body["chat_history"] == [m.model_dump() for m in HISTORY]
    assert body["options"] == {"note": "asked: How tall is it?", "top_k": 3}
    assert [m["content"] for m in body["turns"]] == [
        "Be brief.", "Where is the tower?", "In Alder.", "How tall is it?"]


def test_custom_mapping_with_a_function(bot: LocalBot) -> None:
    bot.queue.append(Reply(body={"output": "120 m.", "contexts": ["c1", "c2"]}))

    def request(question: str, history: list[ragdive.Message], session: str | None) -> Any:
        return {"q": question, "n": len(history), "session": session}

    answer = ask(HttpAdapter(bot.url(), request=request, answer_field="output"), history=HISTORY)
    assert answer.answer == "120 m." and answer.contexts == ["c1", "c2"]
    assert bot.requests[0].body == {"q": "How tall is it?", "n": 2, "session": None}


def test_missing_or_wrong_answer_field_says_what_the_reply_holds(bot: LocalBot) -> None:
    bot.queue.append(Reply(body={"result": "120 m.", "sources": []}))
    message = failure(HttpAdapter(bot.url()))
    assert bot.url() in message
    assert "no answer at 'choices.0.message.content'" in message
    assert "its keys: result, sources" in message and "answer_field=" in message
    bot.queue.append(Reply(body={"result": {"text": "120 m."}}))
    message = failure(HttpAdapter(bot.url(), answer_field="result"))
    assert "holds dict at 'result', not the answer text" in message


# -- failures and retries ---------------------------------------------------------------


def test_429_then_success_waits_as_retry_after_says(bot: LocalBot) -> None:
    bot.queue.append(Reply(429, {"error": "slow down"}, headers={"Retry-After": "1"}))
    bot.queue.append(Reply(body=openai_reply("120 m.")))
    started = time.monotonic()
    answer = ask(HttpAdapter(bot.url(), backoff=0.01))
    assert answer.answer == "120 m."
    assert len(bot.requests) == 2 and bot.requests[0].body == bot.requests[1].body
    assert time.monotonic() - started >= 0.95  # Retry-After, not the 0.01 s backoff


def test_retry_after_longer_than_max_wait_fails_at_once(bot: LocalBot) -> None:
    bot.queue.append(Reply(503, "maintenance", headers={"Retry-After": "120"}))
    message = failure(HttpAdapter(bot.url(), max_wait=5))
    assert len(bot.requests) == 1
    assert "asked to retry after 120 s (Retry-After), longer than max_wait=5 s" in message
    assert "| maintenance" in message


def test_server_errors_are_retried_then_reported_clearly(bot: LocalBot) -> None:
    trace = "\n".join(f"line {i}: index shard {i} offline" for i in range(1, 10))
    bot.default = lambda seen: Reply(500, trace, headers={"Content-Type": "text/plain"})
    message = failure(HttpAdapter(bot.url(), retries=2, backoff=0.01))
    assert len(bot.requests) == 3
    assert message.startswith(f"POST {bot.url()} answered 500 Internal Server Error after 3 "
                              f"attempts")
    assert "  | line 1: index shard 1 offline" in message
    assert "line 5" in message and "line 6" not in message  # the first lines only
    assert "check its logs" in message


def test_client_errors_are_not_retried_and_say_what_to_check(bot: LocalBot) -> None:
    bot.queue.append(Reply(404, {"detail": "Not Found"}))
    message = failure(HttpAdapter(bot.url("/v1/chat")))
    assert len(bot.requests) == 1
    assert "answered 404 Not Found:" in message and "Check the URL" in message
    bot.queue.append(Reply(422, {"detail": "model: field required"}))
    message = failure(HttpAdapter(bot.url()))
    assert "model: field required" in message and "model= or request=" in message


def test_a_reply_that_is_not_json(bot: LocalBot) -> None:
    bot.queue.append(Reply(200, "<html><body>Sign in</body></html>",
                           headers={"Content-Type": "text/html"}))
    message = failure(HttpAdapter(bot.url()))
    assert f"POST {bot.url()} answered 200 with a body that is not JSON" in message
    assert "'text/html'" in message and "| <html><body>Sign in" in message
    assert "JSON API endpoint" in message


def test_a_bot_that_does_not_answer_in_time(bot: LocalBot) -> None:
    bot.default = lambda seen: Reply(body=openai_reply("late"), delay=5)
    started = time.monotonic()
    message = failure(HttpAdapter(bot.url(), timeout=0.3, backoff=0.01))
    assert time.monotonic() - started < 3
    assert len(bot.requests) == 1  # a read timeout is not retried: the bot may be busy on it
    assert "no answer within timeout=0.3 s" in message and "raise timeout=" in message


def test_nothing_listening_is_retried_then_reported() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/chat"
    message = failure(HttpAdapter(url, retries=1, backoff=0.01))
    assert f"POST {url} failed after 2 attempts: ConnectError" in message
    assert "running and reachable" in message


def test_a_connection_that_times_out_is_retried_then_reported_as_a_timeout() -> None:
    import httpx

    tries: list[int] = []

    def connect(request: httpx.Request) -> httpx.Response:  # the bot never gets the request
        tries.append(1)
        if len(tries) < 3:
            raise httpx.ConnectTimeout("connect timed out", request=request)
        return httpx.Response(200, json=openai_reply("Hello."))

    options = {"transport": httpx.MockTransport(connect)}
    url = "http://127.0.0.1:9/chat"
    assert ask(HttpAdapter(url, retries=2, backoff=0.01, client_options=options)).answer == \
        "Hello."
    tries.clear()
    message = failure(HttpAdapter(url, retries=1, backoff=0.01, client_options=options))
    assert len(tries) == 2
    assert f"POST {url}: no answer within timeout=60 s (ConnectTimeout, attempt 2)" in message


# -- headers and secrets ----------------------------------------------------------------


def test_headers_expand_environment_variables_at_request_time(
    bot: LocalBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = HttpAdapter(bot.url(), headers={"Authorization": "Bearer ${BOT_TOKEN}",
                                              "X-Team": "${TEAM}-qa"})
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    monkeypatch.setenv("TEAM", "search")
    ask(adapter)
    assert bot.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
    assert bot.requests[0].headers["x-team"] == "search-qa"


@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_variable_is_named_before_any_request(
    bot: LocalBot, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("BOT_TOKEN", raising=False)
    else:
        monkeypatch.setenv("BOT_TOKEN", value)  # what CI gives for a secret that is not set
    message = failure(HttpAdapter(bot.url(), headers={"Authorization": "Bearer ${BOT_TOKEN}"}))
    assert "environment variable BOT_TOKEN" in message and "'Authorization'" in message
    assert bot.requests == []


def test_header_values_never_appear_in_repr_or_errors(
    bot: LocalBot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    literal = "lit-7d1e0b2a93c4"
    adapter = HttpAdapter(bot.url(), headers={"Authorization": "Bearer ${BOT_TOKEN}",
                                              "X-Api-Key": literal})
    shown = repr(adapter) + str(adapter)
    assert "Authorization" in shown and "X-Api-Key" in shown
    assert TOKEN not in shown and literal not in shown and "${BOT_TOKEN}" not in shown

    def echo(status: int) -> Callable[[Seen], Reply]:
        # a careless server that echoes the request headers in its error pages
        return lambda seen: Reply(status, f"denied: {seen.headers['authorization']}, "
                                          f"key {seen.headers['x-api-key']}")

    messages = {}
    for status in (401, 500):
        bot.default = echo(status)
        messages[status] = failure(HttpAdapter(bot.url(), retries=0, headers={
            "Authorization": "Bearer ${BOT_TOKEN}", "X-Api-Key": literal}))
    for status, message in messages.items():
        assert f"answered {status}" in message and "| denied: ***, key ***" in message
        assert TOKEN not in message and literal not in message
    assert "Check the credentials" in messages[401]
    bot.default = lambda seen: Reply(200, f"not json {seen.headers['authorization']}")
    message = failure(HttpAdapter(bot.url(), headers={"Authorization": "Bearer ${BOT_TOKEN}"}))
    assert "not JSON" in message and TOKEN not in message


def test_a_password_or_key_in_the_url_never_appears_in_repr_or_errors() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://bot:pw-5e1c9a@127.0.0.1:{port}/chat?api_key=k-8f2d6b4e1a"
    adapter = HttpAdapter(url, retries=0)
    message = failure(adapter)
    for shown in (repr(adapter), message):
        assert "pw-5e1c9a" not in shown and "k-8f2d6b4e1a" not in shown
    assert f"POST http://bot:***@127.0.0.1:{port}/chat?api_key=*** failed" in message


# -- sessions and the client -------------------------------------------------------------


def test_sessions_carry_the_servers_conversation_id(bot: LocalBot) -> None:
    conversations: dict[str, int] = {}

    def server_side_history(seen: Seen) -> Reply:
        cid = seen.body.get("conversation_id") or f"c{len(conversations) + 1}"
        conversations[cid] = conversations.get(cid, 0) + 1
        return Reply(body={"conversation_id": cid, "answer": f"{cid} turn {conversations[cid]}"})

    bot.default = server_side_history
    adapter = HttpAdapter(bot.url(), request={"message": "{question}",
                                              "conversation_id": "{session}"},
                          answer_field="answer", session_field="conversation_id")

    async def main() -> list[str]:
        async with adapter:
            one, two = adapter.start(), adapter.start()
            assert one is not None and two is not None
            return [(await s.answer(q, [])).answer
                    for s, q in ((one, "a"), (two, "b"), (one, "c"), (two, "d"))]

    assert asyncio.run(main()) == ["c1 turn 1", "c2 turn 1", "c1 turn 2", "c2 turn 2"]
    assert [r.body for r in bot.requests[:3]] == [
        {"message": "a"}, {"message": "b"}, {"message": "c", "conversation_id": "c1"}]


def test_session_ids_made_by_the_client_and_missing_ones(bot: LocalBot) -> None:
    bot.default = lambda seen: Reply(body={"answer": "ok"})
    ids = iter(["s-1", "s-2"])
    adapter = HttpAdapter(bot.url(), request={"q": "{question}", "thread": "t/{session}"},
                          answer_field="answer", session_field="thread_id",
                          session_id=lambda: next(ids))

    async def main(adapter: HttpAdapter) -> None:
        async with adapter:
            session = adapter.start()
            assert session is not None
            await session.answer("a", [])

    asyncio.run(main(adapter))
    assert bot.requests[-1].body == {"q": "a", "thread": "t/s-1"}
    without = HttpAdapter(bot.url(), request={"q": "{question}", "id": "{session}"},
                          answer_field="answer", session_field="id")
    with pytest.raises(HttpAdapterError, match="no session id at 'id'.*session_id="):
        asyncio.run(main(without))
    with pytest.raises(ValueError, match="never sends the session"):
        HttpAdapter(bot.url(), request={"q": "{question}"}, session_field="id")
    assert HttpAdapter(bot.url()).start() is None  # no session: the adapter itself answers


def test_one_client_per_adapter_across_event_loops_and_threads(bot: LocalBot) -> None:
    adapter = HttpAdapter(bot.url())
    # run_dialogue gives every dialogue a new event loop; the adapter follows it, and the
    # client of a loop is closed as that loop ends
    clients = []
    for _ in range(2):
        assert asyncio.run(adapter.answer("q", [])).answer == "ok"
        clients.append(adapter.client)
    assert clients[0] is not clients[1] and all(c is not None and c.is_closed for c in clients)
    # the plugin runs dialogues on a loop in another thread; a fixture closes from here
    runner = Runner()
    try:
        assert runner.submit("a", lambda: adapter.answer("q", [])).result(10).answer == "ok"
        assert runner.submit("b", lambda: adapter.answer("q", [])).result(10).answer == "ok"
        client = adapter.client
        assert client is not None and not client.is_closed
        with adapter:
            pass  # __exit__ closes
        assert client.is_closed and adapter.client is None
    finally:
        runner.close()
    assert len(bot.requests) == 4


def test_constructor_checks() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        HttpAdapter("localhost:8000/chat")
    with pytest.raises(ValueError, match="not both"):
        HttpAdapter("http://127.0.0.1:1/x", model="m", request={"q": "{question}"})
    with pytest.raises(TypeError):
        HttpAdapter("http://127.0.0.1:1/x", request="{question}")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="headers as the adapter's own"):
        HttpAdapter("http://127.0.0.1:1/x", client_options={"headers": {"X-Key": "k"}})


# -- end to end ---------------------------------------------------------------------------

DOC = ragdive.Document(id="tower", text="The Alder Tower is 120 m tall. It opened in 1931.")


def test_a_dialogue_with_a_bot_over_http(bot: LocalBot, tmp_path: Any) -> None:
    from pytest_ragdive.llm.scripted import scripted

    def rag(seen: Seen) -> Reply:
        question = seen.body["messages"][-1]["content"]
        return Reply(body=openai_reply(f"It is 120 m. ({question})", contexts=[DOC.text]))

    bot.default = rag
    adapter = HttpAdapter(bot.url(), model="tower-bot")
    dialogue = ragdive.run_dialogue(DOC, adapter, judges=ragdive.Judges(scripted()), turns=2,
                                    cache_dir=tmp_path / "cache")
    adapter.close()
    assert dialogue.errors == {}
    # the six of RAG-DIVE; a role's own metric only in its role (test_mistaken.py)
    assert set(dialogue.scores) == set(ragdive.METRICS) - set(ROLE_METRICS)
    assert [len(r.body["messages"]) for r in bot.requests] == [1, 3]
    second = dialogue.turns[1]
    assert second.answer.answer == f"It is 120 m. ({second.generated.rag_input})"
    assert second.answer.contexts == [DOC.text]
    assert bot.requests[1].body["messages"][1] == {"role": "assistant",
                                                   "content": dialogue.turns[0].answer.answer}


def test_dialogues_with_server_side_sessions_and_a_failing_bot(
    bot: LocalBot, tmp_path: Any
) -> None:
    from pytest_ragdive.llm.scripted import scripted

    seen_ids: list[str | None] = []

    def rag(seen: Seen) -> Reply:
        seen_ids.append(seen.body.get("session"))
        return Reply(body={"session": seen.body.get("session") or f"s{len(seen_ids)}",
                           "answer": "It is 120 m.", "contexts": [DOC.text]})

    bot.default = rag
    adapter = HttpAdapter(bot.url(), request={"input": "{question}", "session": "{session}"},
                          answer_field="answer", session_field="session")
    other = ragdive.Document(id="bridge", text="The Beta Bridge is 300 m long.")
    judges = ragdive.Judges(scripted())
    dialogues = run_blocking(ragdive.arun_dialogues(
        [DOC, other], adapter, judges=judges, turns=2, metrics=["correctness"],
        cache_dir=tmp_path / "cache"))
    assert [d.errors for d in dialogues] == [{}, {}]
    first_ids = [i for i in seen_ids if i is None]
    assert len(first_ids) == 2 and len(seen_ids) == 4
    assert sorted(i for i in seen_ids if i) == ["s1", "s2"]  # each dialogue its own session

    bot.default = lambda seen: Reply(500, "database locked")
    failing = HttpAdapter(bot.url(), retries=0)
    dialogue = ragdive.run_dialogue(DOC, failing, judges=judges, turns=1,
                                    metrics=["correctness"], cache_dir=tmp_path / "cache")
    assert dialogue.errors["dialogue"].startswith(
        f"turn 1: the RAG adapter raised HttpAdapterError: POST {bot.url()} answered 500")
    assert "database locked" in dialogue.errors["dialogue"]


HTTP_PROJECT_CONFTEST = '''
import os
import pytest
import pytest_ragdive as ragdive
from pytest_ragdive.llm.scripted import scripted

def yes(messages):
    """The multi-turn judges find that a reply with no memory misses what the user meant."""
    prompt = messages[-1]["content"]
    multi_turn = prompt.startswith("Question:") and "Reply to check" not in prompt
    return 0.1 if multi_turn and "(no memory)" in prompt else 0.9

@pytest.fixture(scope="session")
def ragdive_adapter():
    with ragdive.HttpAdapter(os.environ["BOT_URL"], model="tower-bot",
                             headers={"Authorization": "Bearer ${BOT_TOKEN}"}) as bot:
        yield bot
    assert bot.client is None  # closed from the fixture, across the plugin's loop thread

@pytest.fixture(scope="session")
def ragdive_judges():
    return ragdive.Judges(scripted({"YesNo": yes}, name="judge"))

ragdive_document = ragdive.document_fixture([
    ragdive.Document(id="tower", text="The Alder Tower is 120 m tall. It opened in 1931."),
])
'''


def test_the_plugin_with_an_http_bot_records_replays_and_catches_forgetting(
    bot: LocalBot, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    forgetful = threading.Event()

    def rag(seen: Seen) -> Reply:
        assert seen.headers["authorization"] == f"Bearer {TOKEN}"
        *earlier, last = seen.body["messages"]
        memory = "(no memory)" if earlier and forgetful.is_set() else f"(recalls {len(earlier)})"
        return Reply(body=openai_reply(f"{last['content']} -> 120 m {memory}",
                                       contexts=["The Alder Tower is 120 m tall."]))

    bot.default = rag
    monkeypatch.setenv("BOT_URL", bot.url())
    monkeypatch.setenv("BOT_TOKEN", TOKEN)
    pytester.makeconftest(HTTP_PROJECT_CONFTEST)
    pytester.makepyfile(test_bot='''
import pytest_ragdive as ragdive

@ragdive.conversation(turns=2, runs=2, metrics=["correctness", "forgetfulness"])
def test_bot(ragdive_dialogue):
    pass
''')
    pytester.makeini("[pytest]\naddopts = -p no:langsmith_plugin -p no:cacheprovider\n")

    def ragdive_run(*args: str) -> pytest.RunResult:
        return pytester.runpytest("-m", "ragdive", *args)

    ragdive_run("--ragdive-update").assert_outcomes(passed=1)
    ragdive_run("--ragdive-record-mode=none").assert_outcomes(passed=2)  # item and verdict
    forgetful.set()
    result = ragdive_run("--ragdive-verdict=band")
    result.assert_outcomes(failed=2)  # the item, and the test's aggregate band
    output = result.stdout.str()
    assert "forgetfulness = 1.000, band [0.000, 0.000] (worse)" in output
    assert "the reply does not answer what the user meant" in output
    assert TOKEN not in output + result.stderr.str()
