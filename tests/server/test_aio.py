"""``pyweb serve --loop asyncio``: the example site on the asyncio Protocol server.

The server runs as a process (``python -m pyweb serve pages --loop asyncio --port 0``) and
is driven over real sockets: the guessing game played to the end (page and service),
keep-alive and pipelining checked with h11 as the oracle, a chunked POST body, HEAD, a
malformed request (400), a request head that never ends (408), and a graceful SIGTERM.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import h11
import pytest

from tests.test_asgi import PAGES, Client, play

pytestmark = pytest.mark.timeout(120)
SERVERS_ELSEWHERE = "the asyncio server runs in a `pyweb serve` process (one framer: C if built)"


@pytest.fixture(scope="module")
def aio_server(tmp_path_factory) -> Iterator[tuple[Client, int, subprocess.Popen[bytes]]]:
    site = tmp_path_factory.mktemp("aio") / "pages"
    shutil.copytree(PAGES, site, ignore=shutil.ignore_patterns("data", "__pycache__"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyweb", "serve", str(site), "--loop", "asyncio", "--port", "0",
         "--access-log", "none", "--header-timeout", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ),
    )  # fmt: skip
    assert proc.stdout is not None
    banner = proc.stdout.readline().decode()
    found = re.search(r"on http://127\.0\.0\.1:(\d+)/ \(loop asyncio on (uvloop|asyncio)", banner)
    assert found, banner
    port = int(found.group(1))
    try:
        yield Client(f"http://127.0.0.1:{port}"), port, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_the_guessing_game_on_asyncio(aio_server) -> None:
    client, _, _ = aio_server
    assert play(client, "/guess") <= 7
    assert play(client, "/svc/guess") <= 7


def test_keep_alive_pipelining_and_chunked_bodies_by_h11(aio_server) -> None:
    _, port, _ = aio_server
    wire = (
        b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
        b"HEAD /style.css HTTP/1.1\r\nHost: x\r\n\r\n"
        b"GET /svc/mul?n=2 HTTP/1.1\r\nHost: x\r\n\r\n"
    )  # all three sent at once: pipelined
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(wire)
        answers = _read_answers(s, 3)
    assert [a[0] for a in answers] == [200, 200, 200]
    assert b"Hello, world!" in answers[0][1]
    assert answers[1][1] == b""  # HEAD: no body
    assert b"<td>4</td>" in answers[2][1]


def _read_answers(s: socket.socket, count: int) -> list[tuple[int, bytes]]:
    conn = h11.Connection(h11.CLIENT)
    # h11 the client must have "sent" each request to accept each response: replay them.
    answers: list[tuple[int, bytes]] = []
    methods = ["GET", "HEAD", "GET"]
    conn.send(h11.Request(method=methods[0], target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    status, body = 0, b""
    while len(answers) < count:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = s.recv(65536)
            assert data, "the server closed the connection early"
            conn.receive_data(data)
        elif isinstance(event, h11.Response):
            status, body = event.status_code, b""
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            answers.append((status, body))
            if len(answers) < count:
                conn.start_next_cycle()
                conn.send(h11.Request(method=methods[len(answers)], target="/",
                                      headers=[("Host", "x")]))  # fmt: skip
                conn.send(h11.EndOfMessage())
    return answers


def test_a_chunked_post_reaches_the_page(aio_server) -> None:
    _, port, _ = aio_server
    body = b"n=5&guess=3"
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(
            b"POST /svc/guess HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\nConnection: close\r\n\r\n"
            + chunked
        )
        reply = _read_all(s)
    # a POST without the session's CSRF token: refused, after the body was read (no hang)
    assert reply.startswith(b"HTTP/1.1 403"), reply[:200]


def _read_all(s: socket.socket) -> bytes:
    data = b""
    while True:
        piece = s.recv(65536)
        if not piece:
            return data
        data += piece


def test_a_malformed_request_is_a_400_and_a_slow_head_a_408(aio_server) -> None:
    _, port, _ = aio_server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
        assert _read_all(s).startswith(b"HTTP/1.1 400")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and nothing more: --header-timeout 1
        started = time.monotonic()
        assert _read_all(s).startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 8


def test_sigterm_shuts_down_gracefully(aio_server) -> None:
    client, _, proc = aio_server
    assert client.request("GET", "/hello")[0] == 200
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    assert proc.stdout is not None
    assert b"SIGTERM, shutting down" in proc.stdout.read()
