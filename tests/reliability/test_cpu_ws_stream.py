"""The server survives any WebSocket handler and any streamed body: one that holds the
event loop (a CPU loop) is stopped past ``--page-timeout`` as a page is
(pyweb.app.watched): the handler's socket is closed with 1011 and a reason naming its
line, the streamed reply is cut, the error log says where once, and meanwhile another
client is answered. SIGTERM still stops the server while one holds it. Real ``pyweb
serve`` processes on both loops, in development mode and in production."""

from __future__ import annotations

import http.client
import re
import signal
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.helpers import start_serve, stop_serve, until, write_site

from .test_cpu_page import WAIT, get, port_is_free, stopped_lines

pytestmark = [pytest.mark.loops("trio", "asyncio"), pytest.mark.timeout(180)]

# Each handler or body that holds the loop first touches a file beside it, so the test knows
# (without sleeping) that it is running when it asks the server for something else.
SITE = {
    "hello.py": 'conn.return_("hello")\n',
    "sockets.py": """\
        from pathlib import Path
        import pyweb

        @pyweb.websocket("/spin")
        async def spin(ws):
            await ws.send(await ws.recv())
            Path(__file__).with_name("spin.running").touch()
            n = 0
            while n >= 0:
                n += 1
        """,
    "stream.py": """\
        from pathlib import Path

        async def pieces():
            yield "the first piece\\n"
            Path(__file__).with_name("stream.running").touch()
            n = 0
            while n >= 0:
                n += 1

        conn.return_(pieces(), content_type="text/plain")
        """,
}
SPIN_LINES = (9, 10)
"""Where the handler's loop can be when it is stopped (sockets.py)."""
STREAM_LINES = (7, 8)
"""Where the body's loop can be (stream.py)."""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site", SITE)


@pytest.fixture
def pool():
    with ThreadPoolExecutor(2) as executor:
        yield executor


@contextmanager
def spinning_socket(site: Path, port: int) -> Iterator[ClientConnection]:
    """A WebSocket whose handler runs its CPU loop (it has echoed one message first)."""
    with connect(f"ws://127.0.0.1:{port}/spin", open_timeout=WAIT, close_timeout=WAIT) as ws:
        ws.send("go")
        assert ws.recv(WAIT) == "go"
        until(lambda: (site / "spin.running").exists(), "the handler to spin", WAIT)
        yield ws


def read_stream(port: int) -> tuple[int, bytes, BaseException | None]:
    """GET /stream: the status, what of the body came, and how the body ended (None: whole)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        conn.request("GET", "/stream")
        response = conn.getresponse()
        got = b""
        try:
            while piece := response.read1(1 << 16):
                got += piece
        except (http.client.IncompleteRead, OSError) as exc:
            return response.status, got, exc
        return response.status, got, None
    finally:
        conn.close()


def streaming(pool: ThreadPoolExecutor, site: Path, port: int) -> Future:
    """GET /stream in the background; return once its body spins (holding the loop)."""
    answer = pool.submit(read_stream, port)
    until(lambda: (site / "stream.running").exists() or answer.done(), "the body to spin", WAIT)
    assert not answer.done(), answer.result()
    return answer


def line_of(text: str) -> int:
    found = re.search(r"\.py, line (\d+)", text)
    assert found, text
    return int(found.group(1))


@pytest.mark.parametrize("dev", [True, False], ids=["dev", "production"])
def test_a_websocket_handler_in_a_cpu_loop_is_closed_with_1011_naming_its_line(site, dev):
    proc, port = start_serve(site, "--page-timeout", "1", *(["--dev"] if dev else []))
    try:
        with spinning_socket(site, port) as ws:
            assert get(port, "/hello") == (200, "hello")  # meanwhile, or right after
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(WAIT)
        received = closed.value.rcvd
        assert received is not None and received.code == 1011, closed.value
        assert received.reason.startswith("spin held the server at site/sockets.py, line ")
        assert line_of(received.reason) in SPIN_LINES
        assert get(port, "/hello") == (200, "hello")
    finally:
        assert stop_serve(proc) == 0
    (line,) = stopped_lines(proc.stderr.read(), "sockets")  # type: ignore[union-attr]  # once
    assert "longer than the page timeout (1 s, --page-timeout)" in line
    assert "WebSocket handler spin was stopped there" in line
    assert line_of(line) in SPIN_LINES


@pytest.mark.parametrize("dev", [True, False], ids=["dev", "production"])
def test_a_streamed_body_in_a_cpu_loop_is_cut_and_named_once(site, pool, dev):
    proc, port = start_serve(site, "--page-timeout", "1", *(["--dev"] if dev else []))
    try:
        stuck = streaming(pool, site, port)
        assert get(port, "/hello") == (200, "hello")
        status, body, ended = stuck.result(WAIT)
        assert status == 200 and body == b"the first piece\n"
        assert ended is not None  # cut: never a complete-looking reply
        assert get(port, "/hello") == (200, "hello")
    finally:
        assert stop_serve(proc) == 0
    (line,) = stopped_lines(proc.stderr.read(), "stream")  # type: ignore[union-attr]
    assert "longer than the page timeout (1 s, --page-timeout)" in line
    assert "the streamed body of site/stream.py was stopped there" in line
    assert line_of(line) in STREAM_LINES


@pytest.mark.parametrize("what", ["websocket", "stream"])
def test_sigterm_stops_the_server_while_a_handler_or_a_body_holds_it(site, pool, what):
    proc, port = start_serve(site)  # page_timeout 30 s: the signal stops it
    with ExitStack() as stack:
        if what == "websocket":
            ws = stack.enter_context(spinning_socket(site, port))
            pending = pool.submit(ws.recv, WAIT)
        else:
            pending = streaming(pool, site, port)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(WAIT) == 0  # a graceful shutdown: what held the loop was stopped
        assert port_is_free(port)
        if what == "websocket":
            with pytest.raises(ConnectionClosed) as closed:
                pending.result(WAIT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        else:
            assert pending.result(WAIT)[2] is not None  # the body was cut
    (line,) = stopped_lines(proc.stderr.read(), "sockets" if what == "websocket" else "stream")  # type: ignore[union-attr]
    assert "when the server was told to stop (SIGTERM)" in line
