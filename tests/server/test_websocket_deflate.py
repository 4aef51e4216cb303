"""WebSocket compression (permessage-deflate) and message limits over real sockets, on both
loops: the ``websockets`` library's client (it offers compression by default), and wsproto's
client over a raw socket where a test needs to see the wire or to misbehave (a decompression
bomb, a message in thousands of empty fragments)."""

from __future__ import annotations

import base64
import socket
import time

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from wsproto.connection import Connection, ConnectionType
from wsproto.events import CloseConnection, TextMessage
from wsproto.extensions import PerMessageDeflate
from wsproto.frame_protocol import FrameProtocol

import pyweb.testing
from tests.protocol.test_websocket_deflate import bomb_frame

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

SITE = """
import pyweb


async def echo_all(ws):
    try:
        while True:
            await ws.send(await ws.recv())
    except pyweb.WebSocketClosed:
        return


@pyweb.websocket("/echo")
async def echo(ws):
    await echo_all(ws)


@pyweb.websocket("/plain", compression=False)
async def plain(ws):
    await echo_all(ws)


@pyweb.websocket("/lean", compression_no_context_takeover=True, compression_window_bits=9)
async def lean(ws):
    await echo_all(ws)


@pyweb.websocket("/few", max_fragments=10)
async def few(ws):
    await echo_all(ws)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory, loop):
    root = tmp_path_factory.mktemp("deflatesite")
    (root / "sockets.py").write_text(SITE)
    with pyweb.testing.serve(root, loop=loop) as client:
        yield client


def url(client, path: str) -> str:
    return f"ws://127.0.0.1:{client.server.port}{path}"


class Raw:
    """wsproto's client over a raw socket, offering ``extensions`` (the answer's header is
    ``self.answer``); counts the bytes the server sends."""

    def __init__(self, client, path: str, extensions: str | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", client.server.port), timeout=10)
        key = base64.b64encode(b"0123456789abcdef").decode()
        offer = f"Sec-WebSocket-Extensions: {extensions}\r\n" if extensions else ""
        self.sock.sendall(
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\n{offer}\r\n".encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 "), head
        self.answer = None
        for line in head.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "sec-websocket-extensions":
                self.answer = value.strip()
        used = []
        if self.answer:
            deflate = PerMessageDeflate()
            deflate.finalize(self.answer)
            used.append(deflate)
        self.ws = Connection(ConnectionType.CLIENT, extensions=used)
        self.received = len(rest)
        self.ws.receive_data(rest)

    def send(self, event) -> None:
        self.sock.sendall(self.ws.send(event))

    def until(self, wanted, limit: float = 10.0) -> list:
        """Events until ``wanted(events)`` holds or the server ends the connection."""
        got = list(self.ws.events())
        deadline = time.monotonic() + limit
        while not wanted(got):
            assert time.monotonic() < deadline, f"timed out; got {got}"
            data = self.sock.recv(65536)
            if not data:
                got.append("EOF")
                break
            self.received += len(data)
            self.ws.receive_data(data)
            got.extend(self.ws.events())
        return got

    def close(self) -> None:
        self.sock.close()


def message_done(events) -> bool:
    return any(getattr(e, "message_finished", False) or isinstance(e, CloseConnection)
               for e in events)  # fmt: skip


def closed(events) -> bool:
    return any(isinstance(e, CloseConnection) for e in events) or "EOF" in events


def text_of(events) -> str:
    return "".join(e.data for e in events if isinstance(e, TextMessage))


def close_of(events) -> CloseConnection:
    closes = [e for e in events if isinstance(e, CloseConnection)]
    assert closes, events
    return closes[0]


def test_the_websockets_client_gets_compression(site):
    with connect(url(site, "/echo"), compression="deflate") as ws:
        answer = ws.response.headers["Sec-WebSocket-Extensions"]
        assert answer == "permessage-deflate; client_max_window_bits=12"
        for size in (1, 1000, 300_000):
            text = ("compressible " * (size // 13 + 1))[:size]
            ws.send(text)
            assert ws.recv(timeout=10) == text
        ws.send(b"\x00\xffbinary")
        assert ws.recv(timeout=10) == b"\x00\xffbinary"


def test_the_echo_is_compressed_on_the_wire(site):
    raw = Raw(site, "/echo", "permessage-deflate; client_max_window_bits")
    text = "the same sentence, over and over. " * 3000  # 102 KB
    for _ in range(3):  # the kept context must agree on both sides, message after message
        before = raw.received
        raw.send(TextMessage(data=text))
        assert text_of(raw.until(message_done)) == text
        assert raw.received - before < len(text) // 20
    raw.close()


def test_compression_can_be_turned_off_per_url(site):
    with connect(url(site, "/plain"), compression="deflate") as ws:
        assert "Sec-WebSocket-Extensions" not in ws.response.headers
        ws.send("x" * 50_000)
        assert ws.recv(timeout=10) == "x" * 50_000


def test_no_context_takeover_and_a_small_window(site):
    raw = Raw(site, "/lean", "permessage-deflate; client_max_window_bits")
    assert raw.answer == (
        "permessage-deflate; client_max_window_bits=9; server_no_context_takeover; "
        "client_no_context_takeover"
    )
    for i in range(3):
        raw.send(TextMessage(data=f"message {i} " * 500))
        assert text_of(raw.until(message_done)) == f"message {i} " * 500
    raw.close()


def test_a_bad_offer_gets_no_compression_and_the_socket_works(site):
    raw = Raw(site, "/echo", "permessage-deflate; server_max_window_bits=99")
    assert raw.answer is None
    raw.send(TextMessage(data="plain"))
    assert text_of(raw.until(message_done)) == "plain"
    raw.close()


def test_a_decompression_bomb_closes_with_1009(site):
    raw = Raw(site, "/echo", "permessage-deflate")
    raw.sock.sendall(bomb_frame(32))  # 32 MiB of zeros; the limit is 1 MiB
    close = close_of(raw.until(closed))
    assert close.code == 1009 and "1048576 bytes" in close.reason
    raw.close()
    with connect(url(site, "/echo")) as ws:  # the server goes on
        ws.send("after the bomb")
        assert ws.recv(timeout=10) == "after the bomb"


def fragments(count: int, piece: str = "") -> bytes:
    """One text message in ``count`` frames, masked as a client's."""
    frames = FrameProtocol(client=True, extensions=[])
    wire = b"".join(frames.send_data(piece, fin=False) for _ in range(count - 1))
    return wire + frames.send_data(piece, fin=True)


def test_the_fragment_cap(site):
    raw = Raw(site, "/few")
    raw.sock.sendall(fragments(10, "ab"))
    assert text_of(raw.until(message_done)) == "ab" * 10
    raw.sock.sendall(fragments(11, "ab"))
    close = close_of(raw.until(closed))
    assert close.code == 1009 and "more than 10 fragments" in close.reason
    raw.close()


def test_thousands_of_empty_fragments_are_refused_by_default(site):
    raw = Raw(site, "/echo")
    raw.sock.sendall(fragments(5000))  # 30 KB of frames carrying nothing
    close = close_of(raw.until(closed))
    assert close.code == 1009 and "more than 1024 fragments" in close.reason
    raw.close()


def test_compressed_fragments_count_too(site):
    with connect(url(site, "/few"), compression="deflate") as ws:
        # one message: a frame per piece, then an empty last one (websockets' way)
        ws.send(iter(["part "] * 9))
        assert ws.recv(timeout=10) == "part " * 9
        ws.send(iter(["part "] * 10))
        with pytest.raises(ConnectionClosed) as caught:
            ws.recv(timeout=10)
        assert caught.value.rcvd.code == 1009
