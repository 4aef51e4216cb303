"""``pyweb serve --loop asyncio`` as a process, as an operator meets it: SIGHUP reloads the
configuration file and the pages while connections opened before keep their settings,
``--workers`` runs asyncio workers under the supervisor (a killed one is replaced), SIGUSR1
reopens the access log, and SIGTERM drains and exits 0."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest

from tests.helpers import http_request as request
from tests.helpers import ready_workers, start_serve, until, until_reopened
from tests.helpers import stop_serve as stop

pytestmark = pytest.mark.timeout(90)
SERVERS_ELSEWHERE = "the servers are `pyweb serve` processes (one framer: C if built)"


def start(site: Path, *flags: str) -> tuple[subprocess.Popen, int]:
    """``pyweb serve SITE --loop asyncio FLAGS`` (a later ``--access-log`` wins)."""
    return start_serve(site, "--loop", "asyncio", *flags)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    # Its POST service makes it a site that may keep state in the cache: the workers tests
    # run it on the per-process cache on purpose (--per-process-cache), since what they
    # test is the supervisor, not sessions.
    (tmp_path / "hello.py").write_text('conn.return_("version 1")\n')
    (tmp_path / "upload.py").write_text(
        "from pyweb import service\n\n\n"
        "@service('/upload', methods=['POST'], csrf=False)\n"
        "async def upload(conn):\n"
        "    return str(len(await conn.body()))\n"
    )
    return tmp_path


def test_sighup_reloads_and_open_connections_keep_their_settings(site: Path) -> None:
    (site / "pyweb.toml").write_text("max_body = 100\n")
    proc, port = start(site)
    try:
        old = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert request(port, "/upload", b"x" * 50, old) == (200, b"50")
        (site / "pyweb.toml").write_text("max_body = 10000\n")
        (site / "hello.py").write_text('conn.return_("version 2")\n')
        proc.send_signal(signal.SIGHUP)
        until(lambda: request(port, "/hello") == (200, b"version 2"), what="the reload")
        assert request(port, "/upload", b"x" * 500) == (200, b"500")  # new: the new limit
        assert request(port, "/upload", b"x" * 500, old)[0] == 413  # old: its own limit
        old.close()
    finally:
        assert stop(proc) == 0
    assert "SIGHUP: reloaded" in proc.stderr.read()  # type: ignore[union-attr]


def test_workers_run_on_asyncio_and_a_killed_one_is_replaced(site: Path) -> None:
    proc, port = start(site, "--workers", "2", "--per-process-cache", "--status")
    try:
        pids: dict[str, str] = {}

        def both_seen() -> bool:
            status, body = request(port, "/_pyweb/status")
            assert status == 200, body
            snapshot = json.loads(body)
            assert snapshot["loop"] == "asyncio"
            pids[snapshot["worker"]] = snapshot["pid"]
            return len(pids) == 2

        until(both_seen, what="both workers to answer")
        victim = pids["0"]
        os.kill(int(victim), signal.SIGKILL)
        ready_workers(proc).wait(3)  # its replacement listens
        pids.clear()
        until(lambda: both_seen() and pids["0"] != victim, what="worker 0 to be replaced")
        assert request(port, "/hello") == (200, b"version 1")
    finally:
        assert stop(proc) == 0


def test_sigusr1_reopens_the_access_log(site: Path, tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    proc, port = start(site, "--access-log", str(log))
    try:
        assert request(port, "/hello")[0] == 200
        until(lambda: log.exists() and "GET /hello" in log.read_text(), what="a line")
        log.rename(tmp_path / "access.log.1")  # what logrotate does
        proc.send_signal(signal.SIGUSR1)  # (unhandled, it would end the process)
        until_reopened(port, log, "/hello")
        assert proc.poll() is None
        assert request(port, "/hello?again")[0] == 200
        until(lambda: log.exists() and "GET /hello?again" in log.read_text(), what="reopen")
        assert "again" not in (tmp_path / "access.log.1").read_text()
    finally:
        assert stop(proc) == 0


def test_the_nothread_scheduler_serves_one_connection_at_a_time(site: Path) -> None:
    # Hop's nothread scheduler on asyncio: a second client waits in the backlog while the
    # first one's page runs, and is served after it; SIGTERM still drains and exits 0.
    mark = site / "slow-started"  # touched when the slow page starts
    (site / "slow.py").write_text(
        f"from pathlib import Path\nfrom pyweb.runtime import sleep\n\nPath({str(mark)!r}).touch()\n"
        "await sleep(1.0)\nconn.return_('slept')\n"
    )
    proc, port = start(site, "--scheduler", "nothread")
    get = "GET /{} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as first:
            first.sendall(get.format("slow").encode())
            until(mark.exists, what="its page sleeping")
            with socket.create_connection(("127.0.0.1", port), timeout=10) as second:
                second.sendall(get.format("hello").encode())
                second.settimeout(0.5)
                with pytest.raises(TimeoutError):
                    second.recv(65536)  # not accepted while the first one is served
                assert b"slept" in _read_to_end(first)
                second.settimeout(10)
                assert _read_to_end(second).startswith(b"HTTP/1.1 200 ")
    finally:
        assert stop(proc) == 0
    assert "warning" not in proc.stderr.read()  # type: ignore[union-attr]


def _read_to_end(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data
