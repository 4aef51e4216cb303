"""Timeouts on virtual time (trio.testing.MockClock): exact, and no real waiting.

The sockets are real (a server on 127.0.0.1 and a client in the same trio run); only the
clock is fake. It stands still (``rate=0``) until the test jumps it, so a test can say
"9.9 virtual seconds later the connection is still open, 0.2 later it got its 408" without
sleeping for ten real seconds, and without the flakiness of short real timeouts on a busy
machine. This checks the watchdog of ``pyweb/server/trio/connection.py`` both ways: it never
fires early and it does fire after the deadline; and the pool's door (``slots.py``'s
``FRESH_GRACE``) the same two ways.
"""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from pyweb.protocol import Response
from pyweb.server import Server, ServerConfig
from tests.helpers import until_settled

pytestmark = pytest.mark.timeout(30)

TIMEOUTS = dict(
    header_timeout=10.0, keepalive_timeout=5.0, body_timeout=20.0, send_timeout=30.0,
    first_byte_timeout=3.0,
)  # fmt: skip


async def hello(ctx):
    return Response(200, [("Content-Type", "text/plain")], b"hello")


async def settle(server: Server) -> None:
    """Let the server's tasks run until everything is waiting (on sockets or the clock)."""
    for _ in range(50):
        await trio.sleep(0)
    await trio.testing.wait_all_tasks_blocked(cushion=0.01)


async def recv_all(sock: trio.socket.SocketType) -> bytes:
    chunks = []
    while data := await sock.recv(65536):
        chunks.append(data)
    return b"".join(chunks)


def run_with_server(test, **settings) -> None:
    clock = trio.testing.MockClock(rate=0)

    async def main() -> None:
        config = ServerConfig(port=0, access_log=None, error_log=None, **TIMEOUTS, **settings)
        server = Server(config, hello)
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            client = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            await client.connect(("127.0.0.1", server.port))
            try:
                await test(server, client, clock)
            finally:
                client.close()
                server.shutdown()

    trio.run(main, clock=clock)


def test_half_a_header_is_answered_408_exactly_after_the_header_timeout():
    async def test(server, client, clock):
        await client.send(b"GET / HTTP/1.1\r\nHost: x")
        await until_settled(lambda: any(c.parser.buffered for c in server.connections))
        clock.jump(9.9)
        await settle(server)
        assert len(server.connections) == 1  # not a moment early
        clock.jump(0.2 + 0.25)  # past the deadline, plus one watchdog tick
        reply = await recv_all(client)
        assert reply.startswith(b"HTTP/1.1 408 ")
        assert b"Connection: close" in reply

    run_with_server(test)


def test_idle_keep_alive_connection_closes_after_the_keepalive_timeout():
    async def test(server, client, clock):
        await client.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        first = await client.recv(65536)
        assert first.startswith(b"HTTP/1.1 200 ") and first.endswith(b"hello")
        await settle(server)
        clock.jump(4.9)
        await settle(server)
        assert len(server.connections) == 1  # still within the keep-alive timeout
        # ... and still usable: a second request restarts the idle clock.
        await client.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await client.recv(65536)).endswith(b"hello")
        await settle(server)
        clock.jump(4.9)
        await settle(server)
        assert len(server.connections) == 1
        clock.jump(0.2 + 0.25)
        assert await recv_all(client) == b""  # closed silently: no 408 for an idle client

    run_with_server(test)


def test_a_connection_that_never_sends_gets_the_first_byte_timeout():
    # first_byte_timeout (3 s here), not the keep-alive (5) or header (10) timeout: a
    # crowd of silent connections must not hold slots for long (slots.py)
    async def test(server, client, clock):
        await until_settled(lambda: len(server.connections) == 1)
        await settle(server)
        clock.jump(2.9)
        await settle(server)
        assert len(server.connections) == 1
        clock.jump(0.2)
        assert await recv_all(client) == b""

    run_with_server(test)


def test_timeouts_are_exact_events_not_watchdog_ticks():
    """The deadline is a timer branch of the connection's choice (docs/events.md): it fires
    at the deadline itself, not up to a watchdog tick later."""

    async def test(server, client, clock):
        await client.send(b"GET / HTTP/1.1\r\nHost: x")
        await until_settled(lambda: any(c.parser.buffered for c in server.connections))
        await settle(server)
        clock.jump(9.999)
        await settle(server)
        assert len(server.connections) == 1
        clock.jump(0.002)  # 10.001 s: past the header timeout by a millisecond
        reply = await recv_all(client)
        assert reply.startswith(b"HTTP/1.1 408 ")

    run_with_server(test)


async def recv_reply(sock: trio.socket.SocketType) -> bytes:
    """Read until the hello reply is whole, or the server closed (b"": nothing came). Not
    to the end: the server's lingering close waits on the clock, which stands still."""
    data = b""
    while not data.endswith(b"hello") and (chunk := await sock.recv(65536)):
        data += chunk
    return data


def _door_test(silent_for: float):
    """nothread's one task waits for A's request while B's waits in the backlog; A stays
    silent for ``silent_for`` virtual seconds, then sends its request."""

    async def test(server, a, clock):
        await until_settled(lambda: server.slots.fresh)  # A accepted, waiting to speak
        b = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        await b.connect(("127.0.0.1", server.port))  # completes in the kernel's backlog
        await b.send(b"GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        for _ in range(round(silent_for / 0.05)):  # the door looks every 50 ms
            clock.jump(0.05)
            await settle(server)
        try:
            await a.send(b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        except OSError:  # (closed and reset: as lost as an empty reply)
            a_reply = b""
        else:
            a_reply = await recv_reply(a)
        assert (await recv_reply(b)).startswith(b"HTTP/1.1 200 ")  # B is served either way
        b.close()
        # The door sleeps on the clock between its looks: from here on, virtual time runs
        # by itself whenever every task waits, so the shutdown can end.
        clock.autojump_threshold = 0.0
        return a_reply

    return test


def test_a_new_connection_slow_to_speak_keeps_the_one_task_for_its_grace():
    # Broken before: the door (every 50 ms) closed a new connection that had sent nothing
    # for a newcomer in the backlog, however new it was, and a client whose request came
    # 0.3 s after its connect (a busy machine) read an empty reply.
    replies = []

    async def test(server, a, clock):
        replies.append(await _door_test(0.3)(server, a, clock))

    run_with_server(test, scheduler="nothread")
    assert replies[0].startswith(b"HTTP/1.1 200 ")


def test_a_new_connection_silent_past_its_grace_gives_way_to_the_backlog():
    replies = []

    async def test(server, a, clock):
        replies.append(await _door_test(0.8)(server, a, clock))

    run_with_server(test, scheduler="nothread")
    assert replies[0] == b""  # closed for B, which was then served
