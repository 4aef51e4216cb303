"""The asyncio server's operations, over real sockets: the access and error logs, the status
page and its guard (loopback, token, a trusted proxy's client), ``keepalive_requests``,
``max_requests`` recycling, and static files sent with sendfile (large ones through the
transport when the client is slow)."""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import sys
import time

import pytest

from pyweb import runtime
from pyweb.protocol.response import FileBody, Response
from tests.helpers import until

sys.path.insert(0, os.path.dirname(__file__))
from aio_thread import AioThread  # noqa: E402

pytestmark = pytest.mark.timeout(60)

TEXT = [("content-type", "text/plain")]


async def handler(ctx) -> Response:
    path = ctx.request.path
    if path == "/hello":
        return Response(200, TEXT, b"hello")
    if path == "/boom":
        raise ValueError("kaboom")
    if path == "/echo":
        return Response(200, TEXT, b"got:" + await ctx.body())
    if path == "/warn":  # a library's warning, from the loop's thread and from another
        logging.getLogger("pyweb.test").warning("from the loop")
        await runtime.to_thread(logging.getLogger("pyweb.test").warning, "from a thread")
        return Response(200, TEXT, b"warned")
    if path == "/who":
        return Response(200, TEXT, f"{ctx.peer} {ctx.scheme}".encode())
    if path == "/sleep":
        await runtime.sleep(float(ctx.request.query or "0.3"))
        return Response(200, TEXT, b"slept")
    if path == "/file":
        size = os.path.getsize(FILE)
        return Response(200, [], FileBody(FILE, 0, size))
    return Response(404, TEXT, b"no route")


FILE = ""


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("standard_loop", [False, True], ids=["uvloop", "standard"])
def test_the_access_log_has_a_combined_line_per_request(standard_loop) -> None:
    with AioThread(handler, standard_loop=standard_loop) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        conn.request("GET", "/hello", headers={"User-Agent": "probe/1", "Referer": "http://r/"})
        assert conn.getresponse().read() == b"hello"
        conn.request("GET", "/nothing")
        assert conn.getresponse().status == 404
        conn.close()
        with srv.connect() as raw:  # a malformed request: logged as "-" with its 400
            raw.sendall(b"NOT HTTP\r\n\r\n")
            assert raw.recv(100).startswith(b"HTTP/1.1 400")
    lines = srv.access_log.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert re.fullmatch(
        r'127\.0\.0\.1 - - \[[^]]+\] "GET /hello HTTP/1\.1" 200 5 "http://r/" "probe/1"', lines[0]
    )
    assert '"GET /nothing HTTP/1.1" 404 8' in lines[1]
    assert '"-" 400' in lines[2]


def test_a_handler_error_is_a_500_and_an_error_log_entry_with_its_traceback() -> None:
    with AioThread(handler) as srv:
        status, body = get(srv.port, "/boom")
        assert status == 500 and b"kaboom" not in body  # not in dev mode
        assert get(srv.port, "/hello") == (200, b"hello")  # and the server goes on
    errors = srv.error_log.getvalue()
    assert "[error] handler error for 127.0.0.1:" in errors
    assert "(request: GET /boom HTTP/1.1)" in errors
    assert "ValueError: kaboom" in errors  # the traceback


def test_the_status_page_counts_requests_and_is_guarded() -> None:
    with AioThread(handler, status=True, status_token="s3cret") as srv:
        for _ in range(3):
            get(srv.port, "/hello")
        status, body = get(srv.port, "/_pyweb/status")
        assert status == 200
        snapshot = json.loads(body)
        assert snapshot["pages"]["/hello"]["requests"] == 3
        assert snapshot["loop"] == "asyncio"
        assert snapshot["connections_open"] >= 1
        # Through a trusted proxy (127.0.0.1), for a client on the Internet: refused...
        remote = {"X-Forwarded-For": "203.0.113.9"}
        assert get(srv.port, "/_pyweb/status", remote)[0] == 403
        assert get(srv.port, "/_pyweb/stats", remote)[0] == 403  # every operator page
        # ...unless it presents the token
        token = {**remote, "Authorization": "Bearer s3cret"}
        assert get(srv.port, "/_pyweb/status", token)[0] == 200


def test_proxy_headers_name_the_client_only_for_a_trusted_proxy() -> None:
    forwarded = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-Proto": "https"}
    with AioThread(handler) as srv:  # 127.0.0.1 is trusted by default
        assert get(srv.port, "/who", forwarded)[1] == b"203.0.113.9:0 https"
    assert srv.access_log.getvalue().startswith("203.0.113.9 - - ")
    with AioThread(handler, forwarded_allow_ips="10.0.0.1") as srv:
        assert get(srv.port, "/who", forwarded)[1].startswith(b"127.0.0.1:")


def test_keepalive_requests_closes_after_that_many() -> None:
    with AioThread(handler, keepalive_requests=2) as srv, srv.connect() as raw:
        raw.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" * 2)
        data = b""
        while data.count(b"hello") < 2 or not data.endswith(b"hello"):
            piece = raw.recv(4096)
            if not piece:
                break
            data += piece
        first, second = data.split(b"HTTP/1.1 200")[1:]
        assert b"connection: close" not in first.lower()
        assert b"connection: close" in second.lower()
        assert raw.recv(100) == b""  # and the server closed it


def test_max_requests_recycles_the_server() -> None:
    srv = AioThread(handler, max_requests=3, max_requests_jitter=0).start()
    try:
        assert get(srv.port, "/hello")[0] == 200
        assert get(srv.port, "/hello")[0] == 200
        assert get(srv.port, "/hello") == (200, b"hello")  # the third is served, then...
        assert srv.returned.wait(5)  # ...the server drains and returns
        assert srv.server.recycled
    finally:
        srv.stop()


@pytest.fixture
def big_file(tmp_path) -> str:
    global FILE
    FILE = str(tmp_path / "big.bin")
    with open(FILE, "wb") as f:
        f.write(os.urandom(1024 * 1024) * 24 + b"tail")  # more than the kernel buffers hold
    return FILE


@pytest.mark.parametrize("standard_loop", [False, True], ids=["uvloop", "standard"])
def test_a_large_file_reaches_a_slow_reader_whole(big_file, standard_loop) -> None:
    expected = open(big_file, "rb").read()
    with AioThread(handler, standard_loop=standard_loop) as srv, srv.connect() as raw:
        raw.sendall(b"GET /file HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.5)  # the kernel buffers fill: the rest must wait for the reader
        data = bytearray()
        while not data.endswith(b"hello"):
            piece = raw.recv(65536)
            assert piece, "the server closed the connection"
            data += piece
        head, _, rest = data.partition(b"\r\n\r\n")
        assert f"content-length: {len(expected)}".encode() in head.lower()
        assert rest[: len(expected)] == expected  # every byte, in order
        assert rest[len(expected) :].startswith(b"HTTP/1.1 200")  # then the next reply
    assert f'"GET /file HTTP/1.1" 200 {len(expected)}' in srv.access_log.getvalue()


def test_head_of_a_file_sends_no_body(big_file) -> None:
    with AioThread(handler) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
        conn.request("HEAD", "/file")
        response = conn.getresponse()
        assert response.status == 200 and response.read() == b""
        conn.request("GET", "/hello")
        assert conn.getresponse().read() == b"hello"  # the connection is still in step
        conn.close()


def test_pyweb_loggers_reach_the_error_log_from_any_thread() -> None:
    with AioThread(handler) as srv:
        assert get(srv.port, "/warn") == (200, b"warned")
        until(lambda: "from a thread" in srv.error_log.getvalue())
    errors = srv.error_log.getvalue()
    assert "[warning] pyweb.test: from the loop" in errors
    assert "[warning] pyweb.test: from a thread" in errors


def test_keepalive_time_closes_a_connection_that_lived_that_long() -> None:
    with AioThread(handler, keepalive_time=0.3) as srv, srv.connect() as raw:
        raw.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"connection: close" not in raw.recv(4096).lower()  # young: kept
        time.sleep(0.5)
        raw.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"connection: close" in raw.recv(4096).lower()  # old enough: closed after
        assert raw.recv(100) == b""
