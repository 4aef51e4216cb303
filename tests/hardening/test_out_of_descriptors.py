"""Out of file descriptors: accept() fails (EMFILE) while clients keep connecting. The
server logs it, stops accepting for a moment instead of spinning on a listener that stays
readable, and serves again once connections have closed and freed descriptors. On both
loops (the asyncio server accepts by itself, in bursts, as trio does: scheduling.py)."""

from __future__ import annotations

import socket
import subprocess

import pytest

from tests.helpers import BANNER, http_request, serve_command, stop_serve, until, write_site

pytestmark = [pytest.mark.timeout(90), pytest.mark.loops("trio", "asyncio")]

LIMIT = 96
"""The server's descriptor limit (``prlimit --nofile``): a little more than it needs idle."""


def test_out_of_descriptors_accept_pauses_and_recovers(tmp_path) -> None:
    site = write_site(tmp_path / "site", {"hello.py": 'conn.return_(b"hi")\n'})
    log = tmp_path / "error.log"
    command = serve_command(site, "--port", "0", "--access-log", "none", "--error-log", str(log))
    proc = subprocess.Popen(
        ["prlimit", f"--nofile={LIMIT}:{LIMIT}", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        found = BANNER.match(proc.stdout.readline())  # type: ignore[union-attr]
        assert found, proc.stderr.read()  # type: ignore[union-attr]
        port = int(found.group(1))
        assert http_request(port, "/hello") == (200, b"hi")
        # More idle connections than the server has descriptors: the kernel completes
        # their handshakes, the server accepts until accept() fails (EMFILE).
        crowd = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(LIMIT)]
        try:
            until(lambda: "accept failed" in _text(log), "accept() to fail", limit=30)
            assert proc.poll() is None
        finally:
            for sock in crowd:
                sock.close()
        # The descriptors come back as the crowd's connections close: served again.
        until(lambda: _served(port), "the server to serve again", limit=30)
        assert proc.poll() is None
    finally:
        stop_serve(proc)


def _text(path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _served(port: int) -> bool:
    try:
        return http_request(port, "/hello") == (200, b"hi")
    except OSError:
        return False
