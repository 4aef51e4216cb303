"""fetch_url against real local servers: good, 404, slow, too large, refused, garbage."""

from __future__ import annotations

import logging
import socket
import threading

import pytest

from pyweb import testing
from pyweb.fetch import fetch_url
from pyweb.protocol.response import Response
from pyweb.runtime.testing import run
from pyweb.testing.server import default_loop
from tests.helpers import free_port

# fetch_url on the page's own loop: trio, or asyncio (anyio's sockets and timeouts)
pytestmark = pytest.mark.loops("trio", "asyncio")


class RawServer:
    """A TCP server on a free port answering every connection with ``handler(conn)``."""

    def __init__(self, handler):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.handler = handler
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                try:
                    self.handler(conn)
                except OSError:
                    pass

    def close(self):
        self.sock.close()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/"


def fetch(url, **kw):
    return run(lambda: fetch_url(url, **kw), default_loop(), virtual_time=False)


@pytest.fixture
def site():
    async def handler(ctx):
        return Response(
            200, [("Content-Type", "text/html; charset=utf-8")], "<p>kr 6.42 é</p>".encode()
        )

    with testing.serve(handler) as client:
        yield client


def test_good_page(site):
    assert fetch(site.base_url + "/") == "<p>kr 6.42 é</p>"


def test_404_is_none_and_logged(tmp_path, caplog):
    with testing.serve(tmp_path) as client, caplog.at_level(logging.WARNING, "pyweb.fetch"):
        assert fetch(client.base_url + "/nothing") is None
    assert "answered 404" in caplog.text


def test_slow_server_times_out(caplog):
    def slow(conn):
        threading.Event().wait(2)  # accept, read the request, never answer

    server = RawServer(slow)
    with caplog.at_level(logging.WARNING, "pyweb.fetch"):
        assert fetch(server.url, timeout=0.3) is None
    server.close()
    assert "no complete answer in 0.3 s" in caplog.text


def test_too_large_by_content_length_and_by_reading(caplog):
    big = RawServer(
        lambda c: c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000)
    )
    endless = RawServer(lambda c: c.sendall(b"HTTP/1.1 200 OK\r\n\r\n" + b"y" * 5000))
    with caplog.at_level(logging.WARNING, "pyweb.fetch"):
        assert fetch(big.url, max_bytes=1000) is None
        assert fetch(endless.url, max_bytes=1000) is None
        assert fetch(big.url, max_bytes=5000) == "x" * 5000
    big.close()
    endless.close()
    assert "body of 5000 bytes, more than max_bytes=1000" in caplog.text
    assert "body longer than max_bytes=1000" in caplog.text


def test_connection_refused(caplog):
    port = free_port()
    with caplog.at_level(logging.WARNING, "pyweb.fetch"):
        assert fetch(f"http://127.0.0.1:{port}/rate") is None
    assert f"127.0.0.1:{port}" in caplog.text


@pytest.mark.parametrize(
    "answer",
    [b"garbage\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", b""],
    ids=["not-http", "truncated", "empty"],
)
def test_garbage_answers(answer, caplog):
    server = RawServer(lambda c: c.sendall(answer))
    with caplog.at_level(logging.WARNING, "pyweb.fetch"):
        assert fetch(server.url) is None
    server.close()
    assert "fetch_url" in caplog.text


@pytest.mark.parametrize("url", ["ftp://x/", "http:///nohost", "http://h:99999/"])
def test_bad_urls(url, caplog):
    with caplog.at_level(logging.WARNING, "pyweb.fetch"):
        assert fetch(url) is None
    assert url in caplog.text


def test_charset_from_content_type():
    server = RawServer(
        lambda c: c.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=latin-1\r\n"
            b"Content-Length: 2\r\n\r\n\xe9\xe9"
        )
    )
    assert fetch(server.url) == "éé"
    server.close()
