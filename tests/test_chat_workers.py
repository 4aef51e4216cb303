"""The chat across processes: ``pyweb serve pages --workers 2 --cache redis://...`` in a
subprocess (the ``chat_workers`` fixture of tests/conftest.py), on each loop, real sockets,
real Redis (keys under a prefix of this run). Every answer names the worker that gave it
(``X-Pyweb-Worker``), so the test can check that a message posted to one worker reaches the
long polls, event streams and WebSockets waiting in the other.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time

import pytest

from .csrf_helpers import raw_session
from .helpers import until

pytestmark = [pytest.mark.timeout(120), pytest.mark.loops("trio", "asyncio")]

SESSION: dict[int, tuple[str, str]] = {}  # port -> (cookie, CSRF token)


def send_request(port: int, method: str, target: str, body: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    head = f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if port in SESSION:
        head += f"Cookie: {SESSION[port][0]}\r\n"
    if method == "POST":
        head += (
            f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n"
        )
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a reply: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def worker_of(head: bytes) -> int:
    return int(re.search(rb"(?i)x-pyweb-worker: (\d+)", head).group(1))


def read_json(sock: socket.socket) -> tuple[int, dict]:
    head, body = read_head(sock)
    assert head.startswith(b"HTTP/1.1 200 "), head
    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
    while len(body) < length:
        body += sock.recv(65536)
    sock.close()
    return worker_of(head), json.loads(body[:length])


def post(port: int, text: str) -> tuple[int, dict]:
    """Post as a browser does: with the session (made in whichever worker answered the GET;
    the session lives in Redis) and the form's CSRF token."""
    if port not in SESSION:
        SESSION[port] = raw_session("127.0.0.1", port)
    body = f"name=t&text={text}&csrf_token={SESSION[port][1]}".encode()
    return read_json(send_request(port, "POST", "/chat?json", body))


def waiting_by_worker(port: int, want_workers: int = 2) -> dict[int, int]:
    """Ask until both workers have answered (each request lands on whichever accepts)."""
    seen: dict[int, int] = {}
    deadline = time.monotonic() + 20
    while len(seen) < want_workers:
        assert time.monotonic() < deadline, f"only workers {seen} answered"
        worker, answer = read_json(send_request(port, "GET", "/chat?waiting"))
        seen[worker] = answer["waiting"]
    return seen


def test_a_post_to_either_worker_wakes_the_long_polls_of_both(chat_workers):
    port = chat_workers
    workers = set(waiting_by_worker(port))
    assert len(workers) == 2
    crossed: set[tuple[int, int]] = set()  # (worker posted to, worker of a poll it woke)
    # Which worker takes a connection is the kernel's choice; on a loaded machine one
    # worker can take most of them for a while, so the rounds go on until both crossings
    # were seen (usually a few rounds). (A poll that a post does not wake fails at once.)
    for round_ in range(200):
        _, marker = post(port, f"marker{round_}")
        polls = [send_request(port, "GET", f"/chat?after={marker['seq']}") for _ in range(6)]
        # every poll is waiting (in one worker or the other) before the message is posted
        until(lambda: sum(waiting_by_worker(port).values()) >= 6, "six waiting polls")
        poster, sent = post(port, f"news{round_}")
        for sock in polls:
            poller, answer = read_json(sock)
            assert answer["messages"] == [sent], answer
            crossed.add((poster, poller))
        if {(a, b) for a in workers for b in workers if a != b} <= crossed:
            break
    assert {(a, b) for a in workers for b in workers if a != b} <= crossed, crossed


def test_event_streams_in_both_workers_get_every_message_in_order(chat_workers):
    port = chat_workers
    _, marker = post(port, "sse-marker")
    streams: dict[int, list[socket.socket]] = {}
    pending: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + 20
    while len(streams) < 2 or min(len(s) for s in streams.values()) < 2:
        assert time.monotonic() < deadline, "streams did not reach both workers"
        sock = send_request(port, "GET", f"/chat?stream&after={marker['seq']}")
        head, rest = read_head(sock)
        assert b"text/event-stream" in head.lower()
        streams.setdefault(worker_of(head), []).append(sock)
        pending[sock] = rest
    posters = set()
    sent = []
    while len(sent) < 12 or len(posters) < 2:  # posts land where the kernel puts them
        assert len(sent) < 100, f"every post went to worker {posters}"
        poster, message = post(port, f"sse{len(sent)}")
        posters.add(poster)
        sent.append(message)
    for socks in streams.values():
        for sock in socks:
            data = pending[sock]
            while f"sse{len(sent) - 1}".encode() not in data:
                chunk = sock.recv(65536)
                assert chunk, data
                data += chunk
            got = [json.loads(line[6:]) for line in data.split(b"\n") if line.startswith(b"data: ")]
            assert got == sent
            sock.close()


def test_websockets_in_both_workers_get_every_message(chat_workers):
    port = chat_workers
    from websockets.sync.client import connect

    _, marker = post(port, "ws-marker")
    url = f"ws://127.0.0.1:{port}/chat/ws?after={marker['seq']}"
    with contextlib.ExitStack() as stack:
        workers: dict[int, list] = {}
        deadline = time.monotonic() + 20
        while len(workers) < 2 or min(len(s) for s in workers.values()) < 2:
            assert time.monotonic() < deadline, "websockets did not reach both workers"
            ws = stack.enter_context(connect(url))
            worker = int(ws.response.headers["X-Pyweb-Worker"])
            workers.setdefault(worker, []).append(ws)
        sockets = [ws for group in workers.values() for ws in group]
        sent, posters = [], set()
        while len(sent) < 10 or len(posters) < 2:  # posts land where the kernel puts them
            assert len(sent) < 100, f"every post went to worker {posters}"
            poster, message = post(port, f"ws{len(sent)}")
            posters.add(poster)
            sent.append(message)
        said = {"name": "w", "text": "said on a websocket"}
        sockets[0].send(json.dumps(said))
        for ws in sockets:
            got = [json.loads(ws.recv(timeout=20)) for _ in range(len(sent) + 1)]
            assert got[:-1] == sent
            assert {k: got[-1][k] for k in said} == said
