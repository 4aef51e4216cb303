"""WebSockets (RFC 6455): the handshake (sans-IO) and sessions over real sockets.

The clients are the ``websockets`` library (an independent implementation) and, where a
test needs to misbehave (stay silent, send a broken frame, pipeline a frame behind the
handshake), wsproto's client side over a raw socket.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from wsproto.connection import Connection as WSConnection
from wsproto.connection import ConnectionType
from wsproto.events import CloseConnection, Ping, TextMessage

import pyweb.testing
from pyweb.protocol.messages import Request
from pyweb.protocol.websocket import HandshakeError, check_handshake, same_origin

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

# --- the handshake, sans-IO ----------------------------------------------------------------

KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 §1.3's example


def handshake(**changes) -> Request:
    fields = {
        "host": "example.org",
        "upgrade": "websocket",
        "connection": "keep-alive, Upgrade",
        "sec-websocket-key": KEY,
        "sec-websocket-version": "13",
    }
    fields.update({k.replace("_", "-"): v for k, v in changes.items() if k != "method"})
    headers = [(k, v) for k, v in fields.items() if v is not None]
    return Request(
        method=changes.get("method", "GET"),
        target="/ws",
        http_version="1.1",
        headers=headers,
        path="/ws",
        host=fields["host"] or "",
    )


@pytest.mark.loop_free
def test_the_rfc_example_accept_value():
    assert check_handshake(handshake()) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


@pytest.mark.loop_free
@pytest.mark.parametrize(
    "changes, status, words",
    [
        ({"upgrade": None}, 426, "Upgrade: websocket"),
        ({"upgrade": "h2c"}, 426, "Upgrade: websocket"),
        ({"method": "POST"}, 405, "GET"),
        ({"connection": "keep-alive"}, 400, "Connection: Upgrade"),
        ({"sec_websocket_version": "8"}, 426, "version '8'"),
        ({"sec_websocket_key": "short"}, 400, "Sec-WebSocket-Key"),
        ({"sec_websocket_key": None}, 400, "Sec-WebSocket-Key"),
        ({"origin": "http://evil.example"}, 403, "evil.example"),
        ({"origin": "http://example.org:8000"}, 403, "example.org"),  # another port
    ],
)
def test_refused_handshakes_say_why(changes, status, words):
    with pytest.raises(HandshakeError) as caught:
        check_handshake(handshake(**changes))
    assert caught.value.status == status and words in caught.value.message


def test_origins_same_site_listed_or_any():
    assert check_handshake(handshake(origin="http://example.org"))
    assert check_handshake(handshake(origin="http://EXAMPLE.org:80", host="example.org"))
    assert check_handshake(
        handshake(origin="https://app.example", host="x"), ["https://app.example"]
    )
    assert check_handshake(handshake(origin="http://evil.example"), "*")
    # behind a proxy that ends TLS: Host has no port, the page is https
    assert check_handshake(handshake(origin="https://example.org"))
    assert check_handshake(handshake(origin=None))  # a program, not a browser page


@pytest.mark.loop_free
@given(st.text(max_size=40), st.text(max_size=40))
def test_same_origin_never_raises(origin, host):
    assert same_origin(origin, host) in (True, False)


@given(st.sampled_from(["example.org", "example.org:8000", "[::1]:8000", "a.b"]))
def test_an_origin_built_from_the_host_is_the_same_origin(host):
    assert same_origin(f"http://{host}", host)
    assert not same_origin(f"http://other-{host}", host)


# --- sessions over real sockets --------------------------------------------------------------

SITE = """
import json
import pyweb
from pyweb.events import select, timeout, wrap
from pyweb.push import SharedMulticast
from pyweb.server.websocket import WebSocketClosed

class Record:  # an object, not a top-level list: regions reset changed module containers
    closes: list = []


RECORD = Record()
NEWS = SharedMulticast("test-news")


@pyweb.websocket("/echo")
async def echo(ws):
    while True:
        await ws.send(await ws.recv())


@pyweb.websocket("/idle")
async def idle(ws):
    got = await select(ws.recv_evt(), wrap(timeout(0.3), lambda _: "idle"))
    await ws.send(got if got == "idle" else "early")
    await ws.close(4001, "bye")


@pyweb.websocket("/news")
async def news(ws):
    port = NEWS.port()
    await ws.send("ready")
    while True:
        got = await select(
            wrap(ws.recv_evt(), lambda text: ("said", text)),
            wrap(port.recv_evt(), lambda m: ("news", m)),
        )
        if got[0] == "said":
            await NEWS.send({"text": got[1]})
        elif "text" in got[1]:
            await ws.send(got[1]["text"])


@pyweb.websocket("/record")
async def record(ws):
    try:
        while True:
            await ws.recv()
    except WebSocketClosed as exc:
        RECORD.closes.append(exc.code)
        raise


@pyweb.websocket("/broken")
async def broken(ws):
    await ws.recv()
    raise RuntimeError("the handler broke")


@pyweb.websocket("/small", max_message=1000)
async def small(ws):
    while True:
        await ws.send(str(len(await ws.recv())))


@pyweb.websocket("/pinged", ping_interval=0.5)
async def pinged(ws):
    # (10 s: far past the 3 s a test watches the pings, even on a loaded machine)
    await select(ws.recv_evt(), wrap(timeout(10), lambda _: None))
    await ws.send("still here")
    await ws.recv()


@pyweb.websocket("/pinged-patient", ping_interval=1.5)
async def pinged_patient(ws):
    # (a peer answering from a test's thread on a loaded machine: see the test)
    await ws.recv()


@pyweb.websocket("/stubborn", close_timeout=0.5)
async def stubborn(ws):
    await select(wrap(timeout(30), lambda _: None))  # ignores the shutdown


@pyweb.websocket("/anyone", origins="*")
async def anyone(ws):
    await ws.send("hi")


@pyweb.service("/closes")
async def closes():
    return {"closes": RECORD.closes}


@pyweb.service("/publish", methods=["POST"], csrf=False)  # a program posts, no session
async def publish(text: str):
    return await NEWS.send({"text": text})
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory, loop):
    root = tmp_path_factory.mktemp("wssite")
    (root / "sockets.py").write_text(SITE)
    with pyweb.testing.serve(root, loop=loop) as client:
        yield client


def url(client, path: str) -> str:
    return f"ws://127.0.0.1:{client.server.port}{path}"


def test_echo_text_and_binary(site):
    with connect(url(site, "/echo")) as ws:
        ws.send("hello")
        assert ws.recv(timeout=5) == "hello"
        ws.send(b"\x00\x01binary")
        assert ws.recv(timeout=5) == b"\x00\x01binary"
        big = "x" * 200_000  # several frames and reads
        ws.send(big)
        assert ws.recv(timeout=5) == big


def test_select_on_a_message_or_a_timeout_then_close_with_a_code(site):
    with connect(url(site, "/idle")) as ws:
        assert ws.recv(timeout=5) == "idle"
        with pytest.raises(ConnectionClosed) as caught:
            ws.recv(timeout=5)
        assert caught.value.rcvd.code == 4001 and caught.value.rcvd.reason == "bye"


def test_select_on_a_message_or_a_multicast_port(site):
    with connect(url(site, "/news")) as a, connect(url(site, "/news")) as b:
        assert a.recv(timeout=5) == "ready" and b.recv(timeout=5) == "ready"
        a.send("from a websocket")
        assert a.recv(timeout=5) == b.recv(timeout=5) == "from a websocket"
        site.post("/publish", {"text": "from a post"})
        assert a.recv(timeout=5) == b.recv(timeout=5) == "from a post"


def test_the_peers_close_code_reaches_the_handler(site):
    with connect(url(site, "/record")) as ws:
        ws.send("x")
        ws.close(4002, "going")
    pyweb_until(lambda: 4002 in site.get("/closes").json()["closes"], "the close code")


def test_a_handler_that_raises_closes_with_1011_and_is_logged(site):
    with connect(url(site, "/broken")) as ws:
        ws.send("go")
        with pytest.raises(ConnectionClosed) as caught:
            ws.recv(timeout=5)
        assert caught.value.rcvd.code == 1011


def test_a_message_over_the_limit_closes_with_1009(site):
    with connect(url(site, "/small")) as ws:
        ws.send("y" * 1000)
        assert ws.recv(timeout=5) == "1000"
        ws.send("y" * 1001)
        with pytest.raises(ConnectionClosed) as caught:
            ws.recv(timeout=5)
        assert caught.value.rcvd.code == 1009


def test_origin_checks(site):
    port = site.server.port
    with connect(url(site, "/echo"), origin=f"http://127.0.0.1:{port}") as ws:
        ws.send("same site")
        assert ws.recv(timeout=5) == "same site"
    with pytest.raises(InvalidStatus) as caught:
        connect(url(site, "/echo"), origin="http://evil.example")
    assert caught.value.response.status_code == 403
    with connect(url(site, "/anyone"), origin="http://evil.example") as ws:
        assert ws.recv(timeout=5) == "hi"


def test_a_websocket_counts_against_the_stream_budget_not_the_request_slots(tmp_path):
    (tmp_path / "sockets.py").write_text(SITE)
    with pyweb.testing.serve(tmp_path, max_streams=1) as client:
        slots = client.server.slots
        busy_before = slots.busy
        with connect(url(client, "/echo")) as first:
            first.send("held")
            assert first.recv(timeout=5) == "held"
            assert slots.streams == 1 and slots.busy == busy_before
            with pytest.raises(InvalidStatus) as caught:  # the one stream place is taken
                connect(url(client, "/echo"))
            assert caught.value.response.status_code == 503
            assert client.get("/closes").status == 200  # ordinary requests go on
        pyweb_until(lambda: slots.streams == 0, "the budget given back when it closed")
        with connect(url(client, "/echo")) as again:
            again.send("free again")
            assert again.recv(timeout=5) == "free again"


def test_plain_http_to_a_websocket_url(site):
    r = site.get("/echo")
    assert r.status == 426 and r.headers["upgrade"] == "websocket"
    assert r.headers["sec-websocket-version"] == "13"
    assert site.post("/echo", {"a": "b"}).status == 405
    assert site.get("/closes").status == 200  # the connection and the site go on


class RawClient:
    """wsproto's client over a raw socket: for the tests that need to misbehave."""

    def __init__(self, client, path: str, first_frame: bytes = b"") -> None:
        self.sock = socket.create_connection(("127.0.0.1", client.server.port), timeout=10)
        key = base64.b64encode(b"0123456789abcdef").decode()
        head = (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.sock.sendall(head.encode() + first_frame)
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.sock.recv(65536)
        head_bytes, _, rest = data.partition(b"\r\n\r\n")
        assert head_bytes.startswith(b"HTTP/1.1 101 "), head_bytes
        if rest:
            self.ws.receive_data(rest)

    def events(self, until: float) -> list:
        """Events until ``until`` (monotonic) or the server closes the TCP connection."""
        got = list(self.ws.events())
        self.sock.settimeout(0.05)
        while time.monotonic() < until:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            if not data:
                got.append("EOF")
                break
            self.ws.receive_data(data)
            got.extend(self.ws.events())
        return got


def masked_text(text: str) -> bytes:
    return WSConnection(ConnectionType.CLIENT).send(TextMessage(data=text))


def test_a_frame_sent_right_behind_the_handshake_is_not_lost(site):
    raw = RawClient(site, "/echo", first_frame=masked_text("eager"))
    got = raw.events(time.monotonic() + 2)
    assert any(isinstance(e, TextMessage) and e.data == "eager" for e in got), got
    raw.sock.close()


def test_the_server_pings_and_drops_a_silent_peer(site):
    raw = RawClient(site, "/pinged")
    got = raw.events(time.monotonic() + 4)  # interval 0.5 s: pinged, then dropped at ~1 s
    assert any(isinstance(e, Ping) for e in got), got
    assert "EOF" in got
    raw.sock.close()


def test_a_peer_that_answers_pings_stays(site):
    # Pinged after 1.5 s of quiet, dropped only if a ping goes 1.5 s unanswered. The test
    # answers each ping as it comes and waits for the third: about 4.5 s, longer on a loaded
    # machine (it waits on the pings, not on the clock; the exact times are checked on
    # virtual time in test_websocket_keeper_virtual.py).
    raw = RawClient(site, "/pinged-patient")
    got: list = []
    deadline = time.monotonic() + 60
    while sum(isinstance(e, Ping) for e in got) < 3 and "EOF" not in got:
        assert time.monotonic() < deadline, got
        for event in raw.events(time.monotonic() + 0.02):
            got.append(event)
            if isinstance(event, Ping):
                raw.sock.sendall(raw.ws.send(event.response()))
    assert "EOF" not in got, got
    raw.sock.close()


def test_an_unmasked_client_frame_is_a_protocol_error(site):
    raw = RawClient(site, "/echo")
    raw.sock.sendall(b"\x81\x05hello")  # a text frame without the client's mask
    got = raw.events(time.monotonic() + 2)
    closes = [e for e in got if isinstance(e, CloseConnection)]
    assert closes and closes[0].code == 1002, got
    raw.sock.close()


def test_a_graceful_shutdown_closes_websockets_with_1001(tmp_path):
    (tmp_path / "sockets.py").write_text(SITE)
    serving = pyweb.testing.serve(tmp_path)
    client = serving.__enter__()
    stopper = threading.Thread(target=serving.__exit__, args=(None, None, None))
    try:
        with connect(url(client, "/stubborn")) as ws:
            stopper.start()
            with pytest.raises(ConnectionClosed) as caught:
                ws.recv(timeout=10)
            assert caught.value.rcvd.code == 1001
        stopper.join(10)
        assert not stopper.is_alive()
    finally:
        if not stopper.ident:
            serving.__exit__(None, None, None)


def pyweb_until(predicate, what: str, limit: float = 10.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_many_sockets_each_get_their_own_answers(site):
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(connect(url(site, "/echo"))) for _ in range(20)]
        for i, ws in enumerate(sockets):
            ws.send(json.dumps({"i": i}))
        assert [json.loads(ws.recv(timeout=5))["i"] for ws in sockets] == list(range(20))


def test_an_upgrade_request_to_an_ordinary_url_is_answered_as_http(site):
    """Only a @websocket URL switches protocols; elsewhere Upgrade is just a header."""
    with socket.create_connection(("127.0.0.1", site.server.port), timeout=10) as sock:
        sock.sendall(
            b"GET /closes HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            b"GET /closes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 ") and data.count(b"HTTP/1.1 200 ") == 2


def test_a_websocket_handshake_over_http_1_0_is_refused(site):
    with socket.create_connection(("127.0.0.1", site.server.port), timeout=10) as sock:
        sock.sendall(
            b"GET /echo HTTP/1.0\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.split(b" ", 2)[1] == b"400" and b"HTTP/1.1" in data
