"""The asyncio server keeps serving whatever clients do, with the trio server's policy
(slots.py, body.py, budget.py), over real sockets: idle connections make room for a
newcomer, a full server answers a fast 503 with Retry-After, one client cannot take every
slot, a silent connection is closed after ``first_byte_timeout``, long waits move to the
``max_streams`` budget, a trickled body hits its whole-body deadline (408), bodies held
together stay under ``max_body_memory`` (503), and a stalled body loses its slot to a
newcomer (408)."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

import pytest

from pyweb import runtime
from pyweb.events import select, timeout
from pyweb.protocol.response import Response
from tests.helpers import until

sys.path.insert(0, os.path.dirname(__file__))
from aio_thread import AioThread  # noqa: E402

pytestmark = pytest.mark.timeout(60)

TEXT = [("content-type", "text/plain")]
release = threading.Event()
holding = [0]  # requests in /hold (a test waits for them)


async def handler(ctx) -> Response:
    path = ctx.request.path
    if path == "/hello":
        return Response(200, TEXT, b"hello")
    if path == "/echo":
        return Response(200, TEXT, b"got:%d" % len(await ctx.body()))
    if path == "/hold":  # busy until the test says so (a request in progress)
        holding[0] += 1
        while not release.is_set():
            await runtime.sleep(0.02)
        return Response(200, TEXT, b"held")
    if path == "/poll":  # a long-poll: waits for the client to leave, or 5 s
        await select(ctx.client_gone_evt(), timeout(5))
        return Response(200, TEXT, b"polled")
    return Response(404, TEXT, b"no route")


@pytest.fixture(autouse=True)
def _release():
    release.clear()
    holding[0] = 0
    yield
    release.set()


def request(sock: socket.socket, path: str = "/hello") -> bytes:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    return read_reply(sock)


def read_reply(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            return data
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        piece = sock.recv(65536)
        if not piece:
            break
        body += piece
    return head + b"\r\n\r\n" + body


def closed(sock: socket.socket, seconds: float = 3.0) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_an_idle_connection_makes_room_for_a_newcomer() -> None:
    with AioThread(handler, max_connections=2) as srv:
        first, second, *others = [srv.connect() for _ in range(4)]
        for sock in (first, second, *others):
            # idle now: the two slots, and the room for as many idle ones (slots.py)
            assert request(sock).endswith(b"hello")
        with srv.connect() as third:
            assert request(third).endswith(b"hello")  # served...
        assert closed(first)  # ...in the slot of the connection idle longest
        assert request(second).endswith(b"hello")
        assert srv.server.slots.evicted == 1
        for sock in (first, second, *others):
            sock.close()


@pytest.mark.parametrize("standard_loop", [False, True], ids=["uvloop", "standard"])
def test_a_full_server_answers_a_fast_503_with_retry_after(standard_loop) -> None:
    with AioThread(handler, max_connections=2, standard_loop=standard_loop) as srv:
        busy = [srv.connect(), srv.connect()]
        for sock in busy:
            sock.sendall(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        until(lambda: holding[0] == 2, "both requests in progress: nobody can be evicted")
        started = time.monotonic()
        with srv.connect() as newcomer:
            reply = request(newcomer)
            assert reply.startswith(b"HTTP/1.1 503")
            assert b"Retry-After: 1" in reply
            assert closed(newcomer)
        assert time.monotonic() - started < 2  # at once, not after the busy requests
        release.set()
        for sock in busy:
            assert read_reply(sock).endswith(b"held")
            sock.close()
        assert srv.server.slots.refused == 1
        with srv.connect() as later:  # and the server serves again
            assert request(later).endswith(b"hello")


def test_one_client_cannot_hold_more_than_its_share() -> None:
    with AioThread(handler, max_connections_per_client=1) as srv:
        with srv.connect() as mine:
            assert request(mine).endswith(b"hello")
            with srv.connect() as again:
                assert request(again).startswith(b"HTTP/1.1 503")


def test_a_silent_connection_is_closed_after_first_byte_timeout() -> None:
    with AioThread(handler, first_byte_timeout=0.3, keepalive_timeout=30) as srv:
        with srv.connect() as silent:
            started = time.monotonic()
            assert closed(silent, 5)
            assert time.monotonic() - started < 3
        with srv.connect() as talker:  # one that speaks gets the keep-alive timeout after
            assert request(talker).endswith(b"hello")
            assert not closed(talker, 0.6)


def test_a_long_poll_moves_to_the_stream_budget() -> None:
    with AioThread(handler, max_connections=1, max_streams=5) as srv:
        poller = srv.connect()
        poller.sendall(b"GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
        slots = srv.server.slots
        until(lambda: srv.call(lambda: slots.streams) == 1)
        with srv.connect() as other:  # the only ordinary slot is free for this one
            assert request(other).endswith(b"hello")
        poller.close()  # the client leaves: the poll ends at once (client_gone_evt)
        until(
            lambda: srv.call(lambda: (slots.streams, len(srv.server.connections))) == (0, 0)
        )


def test_a_trickled_body_hits_its_whole_body_deadline() -> None:
    with AioThread(handler, body_timeout=0.5, body_min_rate=1_000_000) as srv:
        with srv.connect() as sock:
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
            started = time.monotonic()
            reply = b""
            for _ in range(40):  # a byte every 0.1 s: each wait is short, the whole is not
                try:
                    sock.sendall(b"x")
                except OSError:
                    break
                time.sleep(0.1)
                sock.setblocking(False)
                try:
                    reply += sock.recv(4096)
                except BlockingIOError:
                    pass
                sock.setblocking(True)
                if reply:
                    break
            assert reply.startswith(b"HTTP/1.1 408"), reply
            assert time.monotonic() - started < 3
    assert "too slow" in srv.error_log.getvalue()


def test_bodies_held_together_stay_under_max_body_memory() -> None:
    with AioThread(handler, max_body_memory=10_000) as srv, srv.connect() as sock:
        sock.sendall(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + b"y" * 5000
        )
        assert read_reply(sock).endswith(b"got:5000")  # fits
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 50000\r\n\r\n")
        assert read_reply(sock).startswith(b"HTTP/1.1 503")  # refused before it was sent
    assert "max_body_memory" in srv.error_log.getvalue()


def test_a_stalled_body_loses_its_slot_to_a_newcomer() -> None:
    with AioThread(handler, max_connections=1, body_timeout=30) as srv:
        with srv.connect() as stalled:
            stalled.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
            until(lambda: srv.call(lambda: len(srv.server.slots.bodies)) == 1, "a stalled body")
            with srv.connect() as newcomer:
                assert request(newcomer).endswith(b"hello")
            assert read_reply(stalled).startswith(b"HTTP/1.1 408")


