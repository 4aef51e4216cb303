"""The chat example (pages/chat.py, pages/_chat.py): server push by long polling, each
waiting request synced on ``choose(port.recv_evt(), timeout(30), conn.client_gone_evt())``.

Real sockets to a real server serving the example site; the waiter count the tests watch is
the page's own (``/chat?waiting``), so nothing is asserted on time except generous limits.
"""

from __future__ import annotations

import importlib.util
import io
import json
import socket
import threading
from pathlib import Path

import pytest
import trio
import trio.testing

import pyweb.testing
from pyweb.events import never
from tests.helpers import until

from .csrf_helpers import csrf_token

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

PAGES = Path(__file__).resolve().parents[1] / "pages"


@pytest.fixture(scope="module")
def chat(loop):
    with pyweb.testing.serve(PAGES, loop=loop) as client:
        yield client


def say(client, path: str, data: dict):
    """POST the chat form as the page's script does: its fields carry the CSRF token."""
    token = getattr(client, "chat_token", None)
    if token is None:
        token = client.chat_token = csrf_token(client, "/chat")
    return client.post(path, {**data, "csrf_token": token})


def waiting(client) -> int:
    return client.get("/chat?waiting").json()["waiting"]


def latest(client) -> int:
    """The sequence number of the newest message (a poll after it waits)."""
    message = say(client, "/chat?json", {"name": "test", "text": "marker"}).json()
    return message["seq"]


def open_long_poll(client, after: int) -> socket.socket:
    port = client.server.port
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"GET /chat?after={after} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return sock


def read_json_reply(sock: socket.socket) -> dict:
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(
            line.split(b":")[1]
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
    )
    while len(body) < length:
        body += sock.recv(65536)
    assert head.startswith(b"HTTP/1.1 200 "), head
    return json.loads(body)


def test_the_page_and_its_form(chat):
    page = chat.get("/chat")
    assert page.status == 200 and "<h1>Chat</h1>" in page.text and "/chat?after=" in page.text
    # the site's shared layout, with the view-source link to the page's script
    assert '<link rel="stylesheet" href="/style.css">' in page.text
    assert '<a href="/source?file=chat.py" class="source">' in page.text
    assert "<!--csrf-->" not in page.text  # the form carries the session's token instead
    moved = say(chat, "/chat", {"name": "ada", "text": "hello"})
    assert moved.status == 303 and moved.headers["location"] == "/chat"


def test_a_closed_tab_frees_its_waiter_at_once(chat):
    base = waiting(chat)
    sock = open_long_poll(chat, latest(chat))
    until(lambda: waiting(chat) == base + 1, "the long poll to wait")
    sock.close()  # the browser tab goes away
    # Observable: the waiter count drops long before the 30 s poll timeout.
    until(lambda: waiting(chat) == base, "the waiter to be freed", limit=10)


def test_a_message_wakes_every_waiting_poll(chat):
    base = waiting(chat)
    after = latest(chat)
    socks = [open_long_poll(chat, after) for _ in range(3)]
    try:
        until(lambda: waiting(chat) == base + 3, "three waiting polls")
        sent = say(chat, "/chat?json", {"name": "bob", "text": "news for all"}).json()
        for sock in socks:
            reply = read_json_reply(sock)
            assert [m["text"] for m in reply["messages"]] == ["news for all"]
            assert reply["messages"][0]["seq"] == sent["seq"] and reply["gone"] is False
        until(lambda: waiting(chat) == base, "the polls to finish")
    finally:
        for sock in socks:
            sock.close()


def test_a_poll_behind_the_news_answers_at_once(chat):
    after = latest(chat)
    say(chat, "/chat?json", {"name": "c", "text": "one"})
    say(chat, "/chat?json", {"name": "c", "text": "two"})
    got = chat.get(f"/chat?after={after}").json()["messages"]
    assert [m["text"] for m in got] == ["one", "two"]


def test_bad_input_is_a_400_naming_the_variable(chat):
    r = chat.get("/chat?after=soon")
    assert r.status == 400 and "after" in r.text
    r = say(chat, "/chat?json", {"name": "x", "text": "  "})
    assert r.status == 400 and "text" in r.text
    r = say(chat, "/chat?json", {"name": "x" * 41, "text": "hi"})
    assert r.status == 400 and "name" in r.text


def load_chat_library():
    spec = importlib.util.spec_from_file_location("_chat_under_test", PAGES / "_chat.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.loops("trio")  # on trio's virtual clock (MockClock): about the events, not the server
def test_the_poll_timeout_on_virtual_time():
    room = load_chat_library()

    async def main():
        start = trio.current_time()
        assert await room.wait_for_messages(0, never()) == []  # nothing came: "ask again"
        assert trio.current_time() - start == pytest.approx(room.WAIT_SECONDS)
        assert room.waiting() == 0

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.loops("trio")  # on trio's virtual clock (MockClock): about the events, not the server
def test_exactly_one_branch_commits_per_poll():
    """A message and the timeout due at the same moment: the poll takes one of them, and the
    message is never lost (the next poll after the same seq sees it)."""
    room = load_chat_library()

    async def main():
        async with trio.open_nursery() as nursery:

            async def speak():
                await trio.sleep(room.WAIT_SECONDS)
                await room.post("ann", "right on time")

            nursery.start_soon(speak)
            first = await room.wait_for_messages(0, never())
            assert first == [] or [m["text"] for m in first] == ["right on time"]
        assert [m["text"] for m in await room.since(0)] == ["right on time"]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_page_exceptions_reach_the_error_log(tmp_path):
    (tmp_path / "oops.py").write_text("raise RuntimeError('the page broke')\n")
    log = io.StringIO()
    with pyweb.testing.serve(tmp_path, error_log=log) as client:
        assert client.get("/oops").status == 500
        until(lambda: "the page broke" in log.getvalue(), "the error log line")
    text = log.getvalue()
    assert "oops.py raised RuntimeError: the page broke" in text and "[error]" in text
    assert "(request: GET /oops HTTP/1.1)" in text and "Traceback" in text


def test_long_poll_thread_safety_smoke(chat):
    """Several posters and pollers at once: every poll answers with a list."""
    after = latest(chat)
    results: list[dict] = []

    def poll():
        with socket.create_connection(("127.0.0.1", chat.server.port), timeout=10) as s:
            s.sendall(f"GET /chat?after={after} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            results.append(read_json_reply(s))

    threads = [threading.Thread(target=poll) for _ in range(4)]
    for t in threads:
        t.start()
    until(lambda: waiting(chat) >= 1 or results, "a poll")
    for i in range(3):
        say(
            pyweb.testing.Client(chat.server.url.rstrip("/")),
            "/chat?json",
            {"name": "p", "text": f"m{i}"},
        )
    for t in threads:
        t.join(10)
    assert len(results) == 4 and all(r["messages"] for r in results)


def test_server_sent_events_stream_news_and_end_when_the_tab_closes(chat):
    base = waiting(chat)
    after = latest(chat)
    sock = socket.create_connection(("127.0.0.1", chat.server.port), timeout=10)
    try:
        sock.sendall(f"GET /chat?stream&after={after} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head = data.partition(b"\r\n\r\n")[0].lower()
        assert head.startswith(b"http/1.1 200 ")
        assert b"content-type: text/event-stream" in head and b"transfer-encoding: chunked" in head
        until(lambda: waiting(chat) == base + 1, "the stream to wait")
        for text in ("first by sse", "second by sse"):
            say(chat, "/chat?json", {"name": "eve", "text": text})
        while b"second by sse" not in data:
            data += sock.recv(65536)
        assert data.index(b"first by sse") < data.index(b"second by sse")
        assert b"\nid: " in data and b'data: {"seq": ' in data
    finally:
        sock.close()
    until(lambda: waiting(chat) == base, "the stream to end with the closed tab")


def test_a_graceful_shutdown_answers_the_waiting_polls_at_once(tmp_path):
    serving = pyweb.testing.serve(PAGES)
    client = serving.__enter__()
    stopper = threading.Thread(target=serving.__exit__, args=(None, None, None))
    try:
        after = latest(client)
        sock = open_long_poll(client, after)
        until(lambda: waiting(client) >= 1, "the poll to wait")
        stopper.start()  # shutdown(): the poll's shutdown_evt() commits, it answers "[]"
        reply = read_json_reply(sock)
        assert reply == {"messages": [], "gone": False}
        sock.close()
        stopper.join(10)
        assert not stopper.is_alive()  # serve() returned: nothing held the shutdown up
    finally:
        if not stopper.is_alive() and not stopper.ident:
            serving.__exit__(None, None, None)


# --- the chat as a WebSocket (/chat/ws) ----------------------------------------------------


def test_every_message_reaches_every_open_websocket_as_the_long_poll_returns_it(chat):
    from websockets.sync.client import connect

    after = latest(chat)
    url = f"ws://127.0.0.1:{chat.server.port}/chat/ws?after={after}"
    with connect(url) as a, connect(url) as b:
        by_post = say(chat, "/chat?json", {"name": "ann", "text": "by post"}).json()
        a.send(json.dumps({"name": "bob", "text": "by websocket"}))
        got_a = [json.loads(a.recv(timeout=10)) for _ in range(2)]
        got_b = [json.loads(b.recv(timeout=10)) for _ in range(2)]
        assert got_a == got_b and got_a[0] == by_post
        assert got_a[1]["name"] == "bob" and got_a[1]["text"] == "by websocket"
        # the long poll answers with the very same objects
        polled = chat.get(f"/chat?after={after}").json()["messages"]
        assert polled == got_a
        a.send("not json")
        assert "error" in json.loads(a.recv(timeout=10))
        a.send(json.dumps({"name": "x", "text": " "}))
        assert "'text'" in json.loads(a.recv(timeout=10))["error"]


def test_a_websocket_from_another_site_is_refused(chat):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    with pytest.raises(InvalidStatus) as caught:
        connect(f"ws://127.0.0.1:{chat.server.port}/chat/ws", origin="http://evil.example")
    assert caught.value.response.status_code == 403
