"""How the asyncio server takes new connections and ends them after a ``Connection: close``
reply: the queued connections at once, and the FIN right behind the last reply.

Both are about the order of events on the asyncio loop (the peer benchmark's
one-connection-per-request run measured what they are worth: docs/performance.md), so the
tests hold the loop still where the order matters, and assert on what the client sees and
on how many turns of the loop the work took, never on time. They run on asyncio only: trio
accepts everything queued and closes after its last ``send`` in the same step by itself.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from pyweb.protocol.response import Response

# asyncio only: the turns of the asyncio loop and its transports' deferred close are what
# is tested (trio has neither: see the module doc).
pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("asyncio")]

CLOSE = b"GET /bye HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"


def test_the_fin_follows_the_reply_before_the_loop_turns_again(kit):
    """The transport closes its socket in the loop's next turn; the server half-closes it
    at once, so the client sees the end of the reply (the FIN) even while the loop's next
    turn is held up (here by a callback that blocks until the client has seen it)."""
    blocked, release = threading.Event(), threading.Event()

    def hold_the_loop() -> None:
        blocked.set()
        release.wait(20)  # the loop does nothing else meanwhile

    async def handler(ctx):
        # Queued before the transport's close: it runs first in the loop's next turn.
        asyncio.get_running_loop().call_soon(hold_the_loop)
        return Response(200, [("content-type", "text/plain")], b"bye")

    with kit.running(handler) as srv:
        try:
            with srv.connect(timeout=10) as c:
                c.send(CLOSE)
                head = c.read_until(b"\r\n\r\n")
                assert head.startswith(b"HTTP/1.1 200 ") and b"connection: close" in head.lower()
                assert c.read_exact(3) == b"bye"
                assert blocked.wait(10), "the loop never reached its next turn"
                try:
                    end = c.sock.recv(1)  # the loop is held: only an early FIN answers this
                except TimeoutError:
                    pytest.fail("the server's FIN waited for the loop's next turn")
                assert end == b""
        finally:
            release.set()


def test_the_fin_waits_for_a_reply_the_transport_still_holds(kit):
    """A reply larger than the socket takes at once stays queued in the transport: it is
    sent whole, then the connection closes (no half-close ahead of queued bytes)."""
    big = bytes(range(256)) * (64 * 1024)  # 16 MiB: more than the kernel's socket buffers

    async def handler(ctx):
        return Response(200, [("content-type", "application/octet-stream")], big)

    with kit.running(handler) as srv, srv.connect(timeout=10) as c:
        c.send(CLOSE)
        head = c.read_until(b"\r\n\r\n")
        assert f"content-length: {len(big)}".encode() in head.lower()
        body = bytearray(c.buf)
        view = memoryview(bytearray(1 << 20))
        while True:
            n = c.sock.recv_into(view)
            if not n:
                break  # the server's FIN, after the whole body
            body += view[:n]
        assert len(body) == len(big) and body == big


def test_queued_connections_are_taken_in_one_turn(kit):
    """Connections that queue up while the loop is busy are accepted together when it is
    free: their requests are answered in the same turn of the loop, not one per turn (the
    loop's own accept, libuv's under uvloop, takes one connection per turn)."""
    n = 6
    held, release = threading.Event(), threading.Event()
    turns: list[int] = []  # the turn of the loop each queued request was answered in
    turn = [0]
    ticking = [False]

    def tick() -> None:  # runs once per turn of the loop while ticking
        turn[0] += 1
        if ticking[0]:
            asyncio.get_running_loop().call_soon(tick)

    async def handler(ctx):
        if ctx.request.path == "/hold":  # blocks the loop until the others are queued
            ticking[0] = True
            asyncio.get_running_loop().call_soon(tick)
            held.set()
            release.wait(20)
        else:
            turns.append(turn[0])
            if len(turns) == n:
                ticking[0] = False
        return Response(200, [("content-type", "text/plain")], b"ok")

    with kit.running(handler) as srv:
        clients = []
        try:
            holder = srv.connect(timeout=10)
            clients.append(holder)
            holder.send(b"GET /hold HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            assert held.wait(10)
            for _ in range(n):  # handshakes done by the kernel: queued in the backlog
                c = srv.connect(timeout=10)
                clients.append(c)
                c.send(CLOSE)
        finally:
            release.set()
        for c in clients:
            assert c.read_until(b"\r\n\r\n").startswith(b"HTTP/1.1 200 ")
            c.sock.close()
    assert len(turns) == n
    assert len(set(turns)) == 1, f"answered in turns {turns}"
