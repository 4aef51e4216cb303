"""The WebSocket keeper on virtual time (trio.testing.MockClock): pings and drops, exactly.

A real server and a real socket; only the clock is fake, and it moves when the test says.
The keeper's rule (``pyweb/server/websocket.py``): a ping after ``ping_interval`` of quiet
from the peer; a drop if that ping brings no byte back within another interval. So a peer
that answers, however late within the interval, is never dropped, and a late wake-up of the
server (a loaded machine) can delay a ping but never turn into a drop. The old keeper ticked
on a fixed beat and reckoned "two intervals of silence": a beat coming just after a prompt
pong sent no ping, and a late next beat dropped a peer that had answered everything.
"""

from __future__ import annotations

import base64
import socket
from pathlib import Path

import pytest
import trio
import trio.testing
from wsproto.connection import Connection as WSConnection
from wsproto.connection import ConnectionType
from wsproto.events import Ping, TextMessage

from pyweb.testing.server import build_server
from tests.helpers import until_settled, write_site

pytestmark = pytest.mark.timeout(30)

INTERVAL = 10.0

SITE = f"""
import pyweb

@pyweb.websocket("/kept", ping_interval={INTERVAL})
async def kept(ws):
    while True:
        await ws.send(await ws.recv())
"""


class Peer:
    """wsproto's client on a trio socket; a reader task collects what the server sends."""

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.sock = sock
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.pings = 0
        self.texts: list[str] = []
        self.eof = False

    async def handshake(self) -> None:
        key = base64.b64encode(b"0123456789abcdef").decode()
        await self.sock.send(
            f"GET /kept HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade"
            f"\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            data += await self.sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 "), head
        self.ws.receive_data(rest)

    async def read(self) -> None:
        while data := await self.sock.recv(65536):
            self.ws.receive_data(data)
            for event in self.ws.events():
                if isinstance(event, Ping):
                    self.pings += 1
                elif isinstance(event, TextMessage):
                    self.texts.append(event.data)
        self.eof = True

    async def pong(self) -> None:
        await self.sock.send(self.ws.send(Ping(b"pyweb").response()))

    async def say(self, text: str) -> None:
        await self.sock.send(self.ws.send(TextMessage(data=text)))


async def settle() -> None:
    """Let every task run until all wait (on sockets or on the clock)."""
    for _ in range(50):
        await trio.sleep(0)
    await trio.testing.wait_all_tasks_blocked(cushion=0.01)


def run_with_peer(test, site: Path) -> None:
    clock = trio.testing.MockClock(rate=0)

    async def main() -> None:
        server = build_server(site, loop="trio")
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            await sock.connect(("127.0.0.1", server.port))
            peer = Peer(sock)
            await peer.handshake()
            nursery.start_soon(peer.read)
            await settle()
            try:
                await test(peer, clock)
            finally:
                nursery.cancel_scope.cancel()  # the peer's reader and the server
        sock.close()

    trio.run(main, clock=clock)


@pytest.fixture
def site(tmp_path):
    return write_site(tmp_path / "site", {"kept.py": SITE})


async def jump(clock: trio.testing.MockClock, seconds: float) -> None:
    clock.jump(seconds)
    await settle()


def test_a_ping_after_an_interval_of_quiet_and_not_before(site):
    async def test(peer, clock):
        await jump(clock, INTERVAL - 0.1)
        assert peer.pings == 0
        await jump(clock, 0.1)
        assert peer.pings == 1 and not peer.eof

    run_with_peer(test, site)


def test_an_unanswered_ping_drops_the_peer_an_interval_later_exactly(site):
    async def test(peer, clock):
        await jump(clock, INTERVAL)
        assert peer.pings == 1
        await jump(clock, INTERVAL - 0.1)
        assert not peer.eof  # not a moment early
        await jump(clock, 0.1)
        await until_settled(lambda: peer.eof)

    run_with_peer(test, site)


def test_a_pong_late_within_the_interval_keeps_the_peer_ping_after_ping(site):
    async def test(peer, clock):
        for number in range(1, 6):
            await jump(clock, INTERVAL)  # quiet for an interval since the last pong: a ping
            assert peer.pings == number and not peer.eof
            await jump(clock, INTERVAL - 0.5)  # answered half a second before the drop
            await peer.pong()
            await settle()
            assert not peer.eof

    run_with_peer(test, site)


def test_a_late_wake_up_delays_the_ping_and_never_drops_an_answering_peer(site):
    # The old keeper's drop: pinged at 10, answered at 15; its beat at 20 found 5 s of
    # quiet (no ping), and its next beat, due at 30, ran late, at 35.1 (a loaded machine):
    # "20.1 s of silence", dropped, though the peer had answered the only ping it got.
    # The peer is owed a ping, not a drop.
    async def test(peer, clock):
        await jump(clock, INTERVAL)
        assert peer.pings == 1
        await jump(clock, 5)
        await peer.pong()
        await settle()
        await jump(clock, 5)
        assert peer.pings == 1
        await jump(clock, 15.1)
        assert peer.pings == 2 and not peer.eof

    run_with_peer(test, site)


def test_a_peer_that_keeps_talking_is_never_pinged(site):
    async def test(peer, clock):
        for number in range(1, 11):
            await jump(clock, INTERVAL * 0.9)
            await peer.say(f"message {number}")
            await until_settled(lambda n=number: len(peer.texts) == n)  # echoed
        assert peer.pings == 0 and not peer.eof

    run_with_peer(test, site)
