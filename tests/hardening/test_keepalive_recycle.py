"""Workers lose nothing, over real sockets: a recycle (``max_requests``) answers a keep-alive
connection's next request with ``Connection: close`` instead of resetting it; keep-alive
connections end after ``keepalive_requests`` requests or ``keepalive_time`` seconds (so a
replacement worker gets its share of clients); recycling points are jittered."""

from __future__ import annotations

import socket
import time

import h11
import pytest

import pyweb.testing
from pyweb.protocol.response import Response
from pyweb.server import Server, ServerConfig
from tests.helpers import until

pytestmark = pytest.mark.loops("trio", "asyncio")


async def hello(ctx):
    return Response(200, [("Content-Type", "text/plain")], b"hello")


def exchange(sock: socket.socket, conn: h11.Connection) -> tuple[int, bool, bytes]:
    """One GET on a kept connection: (status, whether the reply said close, body)."""
    sock.sendall(conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")])))
    sock.sendall(conn.send(h11.EndOfMessage()))
    status, close, body = 0, False, b""
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("closed without an answer")
            conn.receive_data(data)
        elif isinstance(event, h11.Response):
            status = event.status_code
            close = (b"connection", b"close") in [(k.lower(), v.lower()) for k, v in event.headers]
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            return status, close, body


def client(port: int) -> tuple[socket.socket, h11.Connection]:
    return socket.create_connection(("127.0.0.1", port), timeout=10), h11.Connection(h11.CLIENT)


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return False  # a reset is not a clean close


def test_keepalive_requests_ends_a_connection_with_close():
    with pyweb.testing.serve(hello, keepalive_requests=3) as c:
        sock, conn = client(c.server.port)
        with sock:
            assert exchange(sock, conn)[:2] == (200, False)
            conn.start_next_cycle()
            assert exchange(sock, conn)[:2] == (200, False)
            conn.start_next_cycle()
            assert exchange(sock, conn)[:2] == (200, True)  # the third: Connection: close
            assert closed_by_server(sock)


def test_keepalive_time_ends_an_old_connection_with_close():
    with pyweb.testing.serve(hello, keepalive_time=0.3) as c:
        sock, conn = client(c.server.port)
        with sock:
            assert exchange(sock, conn)[:2] == (200, False)
            time.sleep(0.4)
            conn.start_next_cycle()
            assert exchange(sock, conn)[:2] == (200, True)
            assert closed_by_server(sock)


def test_a_recycle_answers_a_next_request_on_its_way_instead_of_resetting_it():
    """Client B is idle on a keep-alive connection when client A's request recycles the
    worker; B's next request comes once the worker drains (on the wire meanwhile). It
    used to be reset; now it is answered, with Connection: close."""
    with pyweb.testing.serve(hello, max_requests=2) as c:
        port = c.server.port
        a, a_conn = client(port)
        b, b_conn = client(port)
        with a, b:
            assert exchange(b, b_conn)[:2] == (200, False)  # B: request 1, stays open
            status, close, _ = exchange(a, a_conn)  # A: request 2, the limit: recycle
            assert (status, close) == (200, True)
            until(lambda: c.server.closing, "the worker draining")
            b_conn.start_next_cycle()
            assert exchange(b, b_conn) == (200, True, b"hello")
            assert closed_by_server(b)
        assert c.server.recycled


def test_recycle_points_are_jittered():
    points = set()
    for _ in range(20):
        server = Server(ServerConfig(port=0, max_requests=1000, access_log=None), hello)
        points.add(server._recycle_at)
    assert all(1000 <= p <= 1100 for p in points)  # default jitter: a tenth
    assert len(points) > 5  # twenty workers do not recycle together
    fixed = Server(
        ServerConfig(port=0, max_requests=50, max_requests_jitter=0, access_log=None), hello
    )
    assert fixed._recycle_at == 50
