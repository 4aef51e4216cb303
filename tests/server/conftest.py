"""Helpers for the server tests: a real server on 127.0.0.1:0 in a background thread
(pyweb.testing's ``ServerThread``, its own event loop: trio, or asyncio in the asyncio runs
of modules marked ``loops("trio", "asyncio")``), a raw-socket HTTP client, and a test
handler with one route per behaviour (written against pyweb.runtime, so it runs on both).

The server runs in a thread so that tests can use plain blocking sockets, as a real client
would; ``RunningServer.shutdown()`` and ``call()`` cross into the server's loop.
"""

from __future__ import annotations

import io
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pyweb import runtime
from pyweb.protocol.response import FileBody, Response
from pyweb.server import RequestContext
from pyweb.testing.server import ServerThread, build_server


class RunningServer(ServerThread):
    """pyweb.testing's server thread, with what the server tests look at: the error log in
    a StringIO (``error_log``) and raw-socket clients (``connect()``)."""

    def __init__(self, handler, **options) -> None:
        self.error_log = io.StringIO()
        options.setdefault("error_log", self.error_log)
        super().__init__(build_server(handler, **options))
        self.config = self.server.config

    def start(self, timeout: float = 10.0) -> RunningServer:
        super().start(timeout)
        return self

    def connect(self, timeout: float = 5.0) -> Client:
        return Client(self.port, timeout)


@contextmanager
def running(handler=None, **options) -> Iterator[RunningServer]:
    server = RunningServer(handler or app, **options).start()
    try:
        yield server
    finally:
        server.stop()


class Client:
    """A blocking HTTP/1.1 client on a raw socket: send any bytes, read framed responses."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("server closed the connection")
        self.buf += data

    def read_until(self, marker: bytes) -> bytes:
        while marker not in self.buf:
            self._fill()
        data, _, self.buf = self.buf.partition(marker)
        return data + marker

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_head(self) -> tuple[int, dict[str, str], bytes]:
        raw = self.read_until(b"\r\n\r\n")
        lines = raw[:-4].split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.decode("latin-1").partition(":")
            assert name.lower() not in headers, f"duplicate header {name}"
            headers[name.lower()] = value.strip()
        return status, headers, raw

    def read_response(self, *, head: bool = False) -> Response1:
        status, headers, raw = self.read_head()
        if head or status in (204, 304) or status < 200:
            body = b""
        elif "content-length" in headers:
            body = self.read_exact(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            parts = []
            while True:
                size = int(self.read_until(b"\r\n")[:-2].split(b";")[0], 16)
                if size == 0:
                    self.read_until(b"\r\n")
                    break
                parts.append(self.read_exact(size))
                assert self.read_exact(2) == b"\r\n"
            body = b"".join(parts)
        else:  # delimited by close
            while True:
                try:
                    self._fill()
                except EOFError:
                    break
            body, self.buf = self.buf, b""
        return Response1(status, headers, body, raw)

    def request(
        self, method: str = "GET", target: str = "/hello", headers=(), body: bytes = b""
    ) -> Response1:
        self.send(build(method, target, headers, body))
        return self.read_response(head=method == "HEAD")

    def closed_by_server(self, timeout: float = 3.0) -> bool:
        """True if the server closed (EOF or reset) with no further bytes within ``timeout``."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        assert data == b"" and self.buf == b"", f"unexpected bytes before close: {data!r}"
        return True

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Response1:
    def __init__(self, status: int, headers: dict[str, str], body: bytes, raw_head: bytes):
        self.status, self.headers, self.body, self.raw_head = status, headers, body, raw_head

    def __repr__(self) -> str:
        return f"<Response1 {self.status} {self.headers} {self.body[:60]!r}>"


def build(method="GET", target="/hello", headers=(), body=b"", version="1.1") -> bytes:
    lines = [f"{method} {target} HTTP/{version}", "Host: test"]
    lines += [f"{k}: {v}" for k, v in headers]
    if body and not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in headers):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


# ------------------------------------------------------------------------ the test handler

FILE_CONTENT = bytes(range(256)) * 40  # 10 240 bytes


@pytest.fixture(scope="session")
def data_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("files") / "data.bin"
    path.write_bytes(FILE_CONTENT)
    return str(path)


class State:
    """Shared between the test thread and handlers: who is running, what they saw."""

    def __init__(self) -> None:
        self.active = 0
        self.max_active = 0
        self.started = threading.Event()
        self.file_path = ""


state = State()


async def app(ctx: RequestContext) -> Response:
    path = ctx.request.path
    text = [("Content-Type", "text/plain")]
    if path == "/hello":
        return Response(200, text, b"hello")
    if path.startswith("/echo-path"):
        return Response(200, text, path.encode())
    if path == "/echo":
        body = await ctx.body()
        return Response(200, text, b"got:" + body)
    if path == "/ignore":
        return Response(200, text, b"ignored")
    if path == "/stream":

        async def pieces():
            for word in (b"one ", b"two ", b"", b"three"):
                await runtime.sleep(0)
                yield word

        return Response(200, text, pieces())
    if path == "/stream-fails":

        async def failing():
            yield b"partial"
            raise RuntimeError("stream broke")

        return Response(200, text, failing())
    if path == "/big":
        return Response(200, text, b"x" * (8 * 1024 * 1024))
    if path == "/file":
        size = os.path.getsize(state.file_path)
        return Response(
            200, [("Content-Type", "application/octet-stream")], FileBody(state.file_path, 0, size)
        )
    if path == "/file-range":
        return Response(206, [], FileBody(state.file_path, 100, 50))
    if path == "/file-part":  # ?OFFSET-LENGTH: any range, promised even past the end
        offset, length = map(int, ctx.request.query.split("-"))
        return Response(200, [], FileBody(state.file_path, offset, length))
    if path == "/boom":
        raise ValueError("kaboom <script>alert(1)</script>")
    if path == "/not-a-response":
        return "hello"  # type: ignore[return-value]
    if path == "/sleep":
        state.active += 1
        state.max_active = max(state.max_active, state.active)
        state.started.set()
        try:
            await runtime.sleep(float(ctx.request.query or "0.3"))
        finally:
            state.active -= 1
        return Response(200, text, b"slept")
    return Response(404, text, b"no route")


@pytest.fixture(scope="module", autouse=True)
def _both_framers(framer: str) -> str:
    """Every server test runs with the C reply framer and with the Python one (the
    ``framer`` fixture of tests/conftest.py; ``--framers c`` for one)."""
    return framer


@pytest.fixture(autouse=True)
def _reset_state(data_file):
    state.__init__()
    state.file_path = data_file
    yield


class Kit:
    """The helpers above, handed to test modules as the ``kit`` fixture (test modules do
    not import conftest: tests/server is not a package)."""

    running = staticmethod(running)
    build = staticmethod(build)
    RunningServer = RunningServer
    FILE_CONTENT = FILE_CONTENT
    state = state
    app = staticmethod(app)


@pytest.fixture
def kit() -> type[Kit]:
    return Kit
