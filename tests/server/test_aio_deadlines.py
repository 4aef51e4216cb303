"""The asyncio server's deadlines under one timer (``asyncio/deadlines.py``), over real sockets.

A keep-alive connection that keeps asking moves its deadline later without changing
buckets, and is still closed ``keepalive_timeout`` after its last reply, not after its
first; a half-sent head still gets its 408 at ``header_timeout``; and a connection that
closed leaves nothing behind in the buckets.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from pyweb.protocol import Response
from pyweb.server.asyncio.deadlines import RESOLUTION
from tests.server.aio_thread import AioThread

pytestmark = pytest.mark.timeout(60)

HELLO = Response(200, [("content-type", "text/plain")], b"hello")


async def hello(ctx: Any) -> Response:
    return HELLO


def ask(sock: socket.socket) -> bytes:
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = b""
    while not reply.endswith(b"hello"):
        piece = sock.recv(4096)
        assert piece, reply
        reply += piece
    return reply


def closed_after(sock: socket.socket, limit: float) -> float:
    """Seconds until the server closes ``sock`` (reading what it sends meanwhile)."""
    started = time.monotonic()
    sock.settimeout(limit)
    while sock.recv(4096):
        pass
    return time.monotonic() - started


def buckets(srv: AioThread) -> list[Any]:
    return srv.call(lambda: [c for b in srv.server.deadlines._buckets.values() for c in b])


def test_a_busy_connection_is_closed_a_keepalive_timeout_after_its_last_reply() -> None:
    srv = AioThread(hello, keepalive_timeout=0.5).start()
    try:
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            for _ in range(6):  # 0.6 s of requests: past the first deadline
                assert ask(sock).startswith(b"HTTP/1.1 200")
                time.sleep(0.1)
            waited = closed_after(sock, 5)
        assert 0.35 <= waited <= 0.5 + 10 * RESOLUTION + 0.5, waited
    finally:
        srv.stop()


def test_half_a_head_gets_its_408_at_header_timeout() -> None:
    srv = AioThread(hello, header_timeout=0.4, keepalive_timeout=30.0).start()
    try:
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            assert ask(sock).startswith(b"HTTP/1.1 200")  # its bucket: 30 s away
            sock.sendall(b"GET / HTTP/1.1\r\nHo")  # a sooner deadline moves it at once
            started = time.monotonic()
            sock.settimeout(5)
            reply = sock.recv(4096)
            waited = time.monotonic() - started
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert 0.3 <= waited <= 0.4 + 10 * RESOLUTION + 0.5, waited
    finally:
        srv.stop()


def test_a_closed_connection_leaves_no_deadline_behind() -> None:
    srv = AioThread(hello, keepalive_timeout=30.0, first_byte_timeout=30.0).start()
    try:
        for _ in range(20):
            with socket.create_connection(("127.0.0.1", srv.port)) as sock:
                assert ask(sock).startswith(b"HTTP/1.1 200")
        deadline = time.monotonic() + 5
        while srv.call(lambda: len(srv.server.connections)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert buckets(srv) == []
        with socket.create_connection(("127.0.0.1", srv.port)) as sock:
            assert ask(sock).startswith(b"HTTP/1.1 200")
            assert len(buckets(srv)) == 1  # the one open connection, waiting
    finally:
        srv.stop()
