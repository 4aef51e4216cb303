"""Connection slots that cannot be starved, over real sockets (pyweb/server/slots.py): idle
and silent connections make room for a newcomer, long-polls count against their own budget,
a client over its own limit gets a fast 503. Each test opens more hostile connections than
the server has slots (``max_connections=40``) and checks that a normal client is served."""

from __future__ import annotations

import socket
import time

import pytest

import pyweb.testing
from pyweb.events import select, timeout
from pyweb.protocol.response import Response
from tests.helpers import until

pytestmark = pytest.mark.loops("trio", "asyncio")

SLOTS = 40
POLLING = [0]
"""Long-polls in progress (what a test waits for, instead of sleeping)."""


async def app(ctx):
    if ctx.request.path == "/poll":  # a long-poll: waits until the client leaves (or 30 s)
        POLLING[0] += 1
        try:
            await select(ctx.client_gone_evt(), timeout(30))
        finally:
            POLLING[0] -= 1
        return Response(200, [("Content-Type", "text/plain")], b"polled")
    return Response(200, [("Content-Type", "text/plain")], b"hello")


def normal_get(port: int) -> tuple[int, float]:
    """A normal client: connect, GET, read the reply. (status, seconds it took)"""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return int(data.split(b" ", 2)[1]), time.monotonic() - started


def crowd(port: int, n: int, first: bytes = b"") -> list[socket.socket]:
    socks = []
    for i in range(n):
        if i % 10 == 9:
            time.sleep(0.01)  # in waves, as clients come (not one burst of SYNs)
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        if first:
            s.sendall(first)
        socks.append(s)
    return socks


@pytest.fixture
def server():
    with pyweb.testing.serve(
        app, max_connections=SLOTS, max_streams=3 * SLOTS, keepalive_timeout=60.0,
        header_timeout=60.0, first_byte_timeout=60.0,
    ) as client:  # fmt: skip
        yield client.server


def test_idle_keep_alive_connections_make_room(server):
    hold = []
    try:
        for _ in range(3 * SLOTS):  # each answered, then idle on keep-alive (the slots
            # and the room for as many idle connections again: the last third evicts)
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            hold.append(s)
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(65536).startswith(b"HTTP/1.1 200")
        for _ in range(5):
            assert normal_get(server.port)[0] == 200
    finally:
        for s in hold:
            s.close()
    assert server.slots.evicted >= SLOTS


def test_silent_connections_make_room(server):
    hold = crowd(server.port, 2 * SLOTS)  # connect, send nothing (a first-byte attack)
    try:  # (the crowd is in its slots and the waiting room)
        slots = server.slots
        until(lambda: slots.busy + slots.waiting_to_speak >= 2 * SLOTS, "the crowd seated")
        for _ in range(5):
            assert normal_get(server.port)[0] == 200
    finally:
        for s in hold:
            s.close()


def test_half_heads_make_room(server):
    hold = crowd(server.port, 2 * SLOTS, b"GET / HTTP/1.1\r\nX-Slow: ")  # slowloris
    try:
        for _ in range(5):
            assert normal_get(server.port)[0] == 200
    finally:
        for s in hold:
            s.close()


def test_long_polls_count_against_their_own_budget(server):
    polls = crowd(server.port, 2 * SLOTS, b"GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        deadline = time.monotonic() + 10
        while server.slots.streams < 2 * SLOTS and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.slots.streams == 2 * SLOTS  # all in the stream budget
        for _ in range(5):
            assert normal_get(server.port)[0] == 200
    finally:
        for s in polls:
            s.close()


def test_one_client_over_its_limit_gets_a_fast_503():
    with pyweb.testing.serve(app, max_connections_per_client=3) as client:
        port = client.server.port
        hold = crowd(port, 3, b"GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            until(lambda: POLLING[0] == 3, "three long-polls")
            status, _ = normal_get(port)
            assert status == 503
        finally:
            for s in hold:
                s.close()
        until(lambda: normal_get(port)[0] == 200, "a 200 under the limit again")


@pytest.mark.parametrize("scheduler", ["pool", "nothread"])
def test_the_fixed_schedulers_let_idle_connections_give_way(scheduler):
    """A pool's tasks are its limit: idle keep-alive connections holding them all used to
    keep a newcomer in the listen backlog until their keep-alive timeout (60 s here)."""
    with pyweb.testing.serve(app, scheduler=scheduler, pool_size=2,
                             keepalive_timeout=60.0) as client:  # fmt: skip
        port = client.server.port
        hold = []
        try:
            for _ in range(2):
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                hold.append(s)
                s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                assert s.recv(65536).startswith(b"HTTP/1.1 200")
            for _ in range(3):
                status, took = normal_get(port)
                assert status == 200 and took < 5, took
        finally:
            for s in hold:
                s.close()


def test_a_full_pool_answers_a_fast_503():
    with pyweb.testing.serve(app, scheduler="pool", pool_size=2) as client:
        port = client.server.port
        polls = crowd(port, 2, b"GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")  # both tasks busy
        try:
            until(lambda: POLLING[0] == 2, "two long-polls")
            status, took = normal_get(port)
            assert status == 503 and took < 5, took
        finally:
            for s in polls:
                s.close()
        until(lambda: normal_get(port)[0] == 200, "a 200 once the pool is free")
