"""``pyweb serve --loop asyncio`` as a process, as an operator meets it: SIGHUP reloads the
configuration file and the pages while connections opened before keep their settings,
``--workers`` runs asyncio workers under the supervisor (a killed one is replaced), SIGUSR1
reopens the access log, and SIGTERM drains and exits 0."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(90)

BANNER = re.compile(r"pyweb serving .+ on http://127\.0\.0\.1:(\d+)/")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "hello.py").write_text('conn.return_("version 1")\n')
    (tmp_path / "upload.py").write_text(
        "from pyweb import service\n\n\n"
        "@service('/upload', methods=['POST'], csrf=False)\n"
        "async def upload(conn):\n"
        "    return str(len(await conn.body()))\n"
    )
    return tmp_path


def start(site: Path, *flags: str) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyweb", "serve", str(site), "--port", "0", "--loop", "asyncio",
         *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    banner = proc.stdout.readline()  # type: ignore[union-attr]
    found = BANNER.match(banner)
    if not found:
        proc.kill()
        raise AssertionError(f"no banner: {banner!r} {proc.stderr.read()}")  # type: ignore[union-attr]
    return proc, int(found.group(1))


def stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()


def request(port: int, target: str, body: bytes | None = None, sock=None) -> tuple[int, bytes]:
    """One request; on ``sock`` (kept alive) or on a new connection."""
    own = sock is None
    if own:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        head = f"{'GET' if body is None else 'POST'} {target} HTTP/1.1\r\nHost: x\r\n"
        if body is not None:
            head += f"Content-Length: {len(body)}\r\nContent-Type: text/plain\r\n"
        sock.sendall(head.encode() + b"\r\n" + (body or b""))
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed before a reply")
            data += chunk
        head_bytes, rest = data.split(b"\r\n\r\n", 1)
        length = int(re.search(rb"(?i)content-length: (\d+)", head_bytes).group(1))
        while len(rest) < length:
            rest += sock.recv(65536)
        return int(head_bytes.split()[1]), rest[:length]
    finally:
        if own:
            sock.close()


def wait_until(predicate, timeout: float = 20, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_sighup_reloads_and_open_connections_keep_their_settings(site: Path) -> None:
    (site / "pyweb.toml").write_text("max_body = 100\n")
    proc, port = start(site)
    try:
        old = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert request(port, "/upload", b"x" * 50, old) == (200, b"50")
        (site / "pyweb.toml").write_text("max_body = 10000\n")
        (site / "hello.py").write_text('conn.return_("version 2")\n')
        proc.send_signal(signal.SIGHUP)
        wait_until(lambda: request(port, "/hello") == (200, b"version 2"), what="the reload")
        assert request(port, "/upload", b"x" * 500) == (200, b"500")  # new: the new limit
        assert request(port, "/upload", b"x" * 500, old)[0] == 413  # old: its own limit
        old.close()
    finally:
        assert stop(proc) == 0
    assert "SIGHUP: reloaded" in proc.stderr.read()  # type: ignore[union-attr]


def test_workers_run_on_asyncio_and_a_killed_one_is_replaced(site: Path) -> None:
    proc, port = start(site, "--workers", "2", "--status")
    try:
        pids: dict[str, str] = {}

        def both_seen() -> bool:
            status, body = request(port, "/_pyweb/status")
            assert status == 200, body
            snapshot = json.loads(body)
            assert snapshot["loop"] == "asyncio"
            pids[snapshot["worker"]] = snapshot["pid"]
            return len(pids) == 2

        wait_until(both_seen, what="both workers to answer")
        victim = pids["0"]
        os.kill(int(victim), signal.SIGKILL)
        pids.clear()
        wait_until(lambda: both_seen() and pids["0"] != victim, what="worker 0 to be replaced")
        assert request(port, "/hello") == (200, b"version 1")
    finally:
        assert stop(proc) == 0


def test_sigusr1_reopens_the_access_log(site: Path, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    proc, port = start(site, "--access-log", str(log))
    try:
        assert request(port, "/hello")[0] == 200
        wait_until(lambda: log.exists() and "GET /hello" in log.read_text(), what="a line")
        log.rename(tmp_path / "access.log.1")  # what logrotate does
        proc.send_signal(signal.SIGUSR1)  # (unhandled, it would end the process)
        time.sleep(0.3)
        assert proc.poll() is None
        assert request(port, "/hello?again")[0] == 200
        wait_until(lambda: log.exists() and "GET /hello?again" in log.read_text(), what="reopen")
        assert "again" not in (tmp_path / "access.log.1").read_text()
    finally:
        assert stop(proc) == 0


def test_a_trio_scheduler_on_asyncio_is_a_warning_not_an_error(site: Path) -> None:
    proc, port = start(site, "--scheduler", "pool")
    try:
        assert request(port, "/hello") == (200, b"version 1")
    finally:
        assert stop(proc) == 0
    assert "warning: --scheduler pool is for the trio server" in proc.stderr.read()  # type: ignore[union-attr]
