"""The operator pages (``/_pyweb/...``) under ASGI answer whom they answer under ``pyweb
serve``: loopback clients and holders of the status token, any spelling of the path, and
nobody else (pyweb.asgi puts the server's guard in front of the site).

One site in development mode (its ``/_pyweb/openapi.json`` answers) with a
``status_token`` in its ``pyweb.toml`` is served by uvicorn and by ``pyweb serve`` on the
test's loop, both trusting ``X-Forwarded-For`` from 127.0.0.1, which is how a test on
loopback speaks as a client from elsewhere; the same requests get the same answers.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import free_port, start_serve, stop_serve, until, write_site

pytestmark = [pytest.mark.loops("trio", "asyncio"), pytest.mark.timeout(120)]

TOKEN = "operator-secret-for-tests"
SITE = {
    "hello.py": 'conn.return_("hello")\n',
    "pyweb.toml": f'status_token = "{TOKEN}"\n',
}
FAR = {"X-Forwarded-For": "203.0.113.9"}
"""A client elsewhere on the Internet (as the trusted proxy on loopback names it)."""
BEARER = {"Authorization": f"Bearer {TOKEN}"}

EXPECTED = {
    ("/_pyweb/openapi.json", "loopback"): 200,
    ("/_pyweb/openapi.json", "far"): 403,
    ("/%5Fpyweb/openapi.json", "far"): 403,  # the same page to the site
    ("/_pyweb/openapi", "far"): 403,
    ("/_pyweb/openapi.json", "far with the token"): 200,
    ("/_pyweb/openapi.json", "far with a wrong token"): 403,
    ("/hello", "far"): 200,  # a page of the site: not the operator's
}
WHO = {
    "loopback": {},
    "far": FAR,
    "far with the token": {**FAR, **BEARER},
    "far with a wrong token": {**FAR, "Authorization": "Bearer guess"},
}


def status_of(port: int, path: str, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def answers(port: int) -> dict[tuple[str, str], int]:
    return {(path, who): status_of(port, path, WHO[who]) for path, who in EXPECTED}


def listening(port: int, proc: subprocess.Popen) -> bool:
    assert proc.poll() is None, proc.stdout.read()  # type: ignore[union-attr]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site", SITE)


@pytest.fixture
def uvicorn(site: Path) -> Iterator[int]:
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "uvicorn"), "pyweb.asgi:app", "--host", "127.0.0.1",
        "--port", str(port), "--log-level", "warning", "--proxy-headers",
        "--forwarded-allow-ips", "127.0.0.1",
    ]  # fmt: skip
    env = dict(os.environ, PYWEB_SITE=str(site), PYWEB_DEV="1")
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        until(lambda: listening(port, proc), "uvicorn to listen", 30)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_operator_pages_answer_the_same_clients_under_asgi_and_pyweb_serve(site, uvicorn):
    proc, port = start_serve(site, "--dev", "--proxy-headers", "--forwarded-allow-ips", "127.0.0.1")
    try:
        served = answers(port)
    finally:
        assert stop_serve(proc) == 0
    assert served == EXPECTED
    assert answers(uvicorn) == EXPECTED


def test_a_websocket_under_the_operator_prefix_is_refused_to_a_far_client(site, uvicorn):
    """(A ``websocket`` scope passes the same guard: the handshake of a far client is
    refused before any route is looked for.)"""
    with socket.create_connection(("127.0.0.1", uvicorn), timeout=30) as sock:
        sock.sendall(
            b"GET /_pyweb/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            b"X-Forwarded-For: 203.0.113.9\r\n\r\n"
        )
        head = sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 403"), head
