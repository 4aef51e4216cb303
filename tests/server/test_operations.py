"""Operations, as an operator meets them: ``pyweb serve`` in a subprocess, under a
steady load of real requests, while it is reloaded (SIGHUP), its workers are killed or
recycled, and it is stopped (SIGTERM). The load counts every failed request. On both loops
(``--loop trio`` and ``--loop asyncio``: :func:`tests.helpers.serve_command`)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import BANNER, ReadAlong, ready_workers, serve_command, until, until_reopened
from tests.helpers import http_request as request
from tests.helpers import start_serve as start
from tests.helpers import stop_serve as stop

pytestmark = [pytest.mark.timeout(90), pytest.mark.loops("trio", "asyncio")]
SERVERS_ELSEWHERE = "the servers are `pyweb serve` processes (one framer: C if built)"


class Load:
    """``clients`` threads requesting ``target`` in a loop, one connection per request."""

    def __init__(self, port: int, target: str = "/hello", clients: int = 4) -> None:
        self.port, self.target = port, target
        self.ok = 0
        self.failures: list[str] = []
        self.failed_at: list[float] = []
        self.bodies: set[bytes] = set()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run) for _ in range(clients)]
        self._lock = threading.Lock()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                # (a generous timeout: while both workers recycle at once, a connection
                # waits in the backlog for as long as a new worker takes to start)
                status, body = request(self.port, self.target, timeout=60)
            except OSError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            else:
                outcome = None if status == 200 else f"status {status}"
            with self._lock:
                if outcome is None:
                    self.ok += 1
                    self.bodies.add(body)
                else:
                    self.failures.append(outcome)
                    self.failed_at.append(time.monotonic())

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(20)

    def wait_for(self, n: int, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        start = self.ok
        while self.ok < start + n:
            assert time.monotonic() < deadline, f"only {self.ok - start} of {n} requests"
            time.sleep(0.01)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    # Its POST service makes it a site that may keep state in the cache: the workers tests
    # run it on the per-process cache on purpose (--per-process-cache), since what they
    # test is the supervisor, not sessions.
    (tmp_path / "hello.py").write_text('conn.return_("version 1")\n')
    # ?mark=PATH: the page touches PATH when it starts (a test waits for that, not a time).
    (tmp_path / "slow.py").write_text(
        "from pathlib import Path\nfrom pyweb import runtime\n"
        "if 'mark' in conn.query:\n    Path(conn.query['mark']).touch()\n"
        "await runtime.sleep(float(conn.query.get('s', '1')))\n"
        'conn.return_("slow version 1")\n'
    )
    # A raw upload, as a program sends it: no session, so no CSRF token (csrf=False).
    (tmp_path / "upload.py").write_text(
        "from pyweb import service\n\n\n"
        "@service('/upload', methods=['POST'], csrf=False)\n"
        "async def upload(conn):\n"
        "    return str(len(await conn.body()))\n"
    )
    return tmp_path


# --- configuration file ------------------------------------------------------------------


def test_a_config_file_is_read_and_flags_override_it(site):
    (site / "pyweb.toml").write_text("status = true\nmax_body = 10\nport = 1\n")
    proc, port = start(site)  # --port 0 on the command line beats port = 1 in the file
    try:
        assert request(port, "/upload", b"x" * 5) == (200, b"5")
        assert request(port, "/upload", b"x" * 11)[0] == 413
        status, body = request(port, "/_pyweb/status")
        # The 413 came from the parser, before any page ran: one request reached /upload.
        assert status == 200 and json.loads(body)["pages"]["/upload"]["requests"] == 1
    finally:
        assert stop(proc) == 0


def test_a_bad_config_file_is_refused_at_start_with_its_line(site):
    (site / "pyweb.toml").write_text("port = 0\nkeepalive_timeout = 'soon'\n")
    done = subprocess.run(
        serve_command(site), capture_output=True, text=True
    )
    assert done.returncode == 2
    assert f"{site / 'pyweb.toml'}:2: --keepalive-timeout: not a number of seconds" in done.stderr


# --- reload (Marlow §6) --------------------------------------------------------------------


def test_reload_under_load_new_connections_see_the_new_settings(site):
    (site / "pyweb.toml").write_text("max_body = 100\n")
    proc, port = start(site)
    try:
        old = socket.create_connection(("127.0.0.1", port), timeout=10)  # opened before
        assert request(port, "/upload", b"x" * 50, sock=old) == (200, b"50")
        slow = {}
        mark = site / "slow-started"
        slow_thread = threading.Thread(
            target=lambda: slow.update(r=request(port, f"/slow?s=1.5&mark={mark}"))
        )
        with Load(port) as load:
            load.wait_for(20)
            slow_thread.start()
            until(mark.exists, what="the slow request running with version 1")
            (site / "pyweb.toml").write_text("max_body = 10\n")
            (site / "hello.py").write_text('conn.return_("version 2")\n')
            (site / "slow.py").write_text('conn.return_("slow version 2")\n')
            proc.send_signal(signal.SIGHUP)
            until(lambda: request(port, "/hello") == (200, b"version 2"), what="reload")
            load.wait_for(20)
        slow_thread.join(10)
        assert load.failures == []
        assert load.bodies == {b"version 1", b"version 2"}
        assert slow["r"] == (200, b"slow version 1")  # in progress: finished with the old page
        assert request(port, "/upload", b"x" * 50)[0] == 413  # a new connection: new limit
        assert request(port, "/upload", b"x" * 50, sock=old) == (200, b"50")  # old: old limit
        old.close()
    finally:
        assert stop(proc) == 0
    assert "SIGHUP: reloaded" in proc.stderr.read()


def test_an_invalid_reload_is_refused_and_the_old_settings_stay(site):
    (site / "pyweb.toml").write_text("max_body = 100\n")
    proc, port = start(site)
    err = ReadAlong(proc.stderr)
    try:
        (site / "pyweb.toml").write_text("max_body = 'lots'\n")
        proc.send_signal(signal.SIGHUP)
        until(lambda: err.has("keeping the old settings"), what="the first refusal")
        (site / "pyweb.toml").write_text("max_body = 10\n")  # good settings, a broken page
        (site / "hello.py").write_text("def broken(:\n")
        proc.send_signal(signal.SIGHUP)
        until(lambda: err.has("keeping the old pages"), what="the second refusal")
        assert request(port, "/hello") == (200, b"version 1")
        assert request(port, "/upload", b"x" * 50) == (200, b"50")
    finally:
        assert stop(proc) == 0
    errors = err.text()
    assert "reload refused, keeping the old settings" in errors
    assert "pyweb.toml:1: --max-body: not a whole number: 'lots'" in errors
    assert "reload refused, keeping the old pages" in errors


# --- workers under a supervisor -------------------------------------------------------------


def status_of(port: int) -> dict:
    status, body = request(port, "/_pyweb/status")
    assert status == 200, body
    return json.loads(body)


def test_workers_share_the_port_and_a_killed_one_is_replaced(site):
    proc, port = start(site, "--workers", "2", "--per-process-cache", "--status")
    try:
        pids = {w["pid"] for w in status_of(port)["workers"]}
        assert pids == set(ready_workers(proc).pids().values())  # (start waited for both)
        with Load(port) as load:
            load.wait_for(30)
            victim = sorted(pids)[0]
            os.kill(victim, signal.SIGKILL)
            ready_workers(proc).wait(3)  # the replacement listens
            assert {w["pid"] for w in status_of(port)["workers"]} - pids
            load.wait_for(30)
        # Only requests the killed worker had accepted can fail (4 clients: at most 4).
        assert len(load.failures) <= 4, load.failures
        now = {w["pid"] for w in status_of(port)["workers"]}
        assert victim not in now and len(now) == 2
    finally:
        assert stop(proc) == 0


def test_sigterm_under_load_answers_every_accepted_request(site):
    proc, port = start(site, "--workers", "2", "--per-process-cache")
    answered = []

    def slow_request(mark: Path) -> None:
        answered.append(request(port, f"/slow?s=1&mark={mark}"))

    try:
        with Load(port) as load:
            load.wait_for(20)
            marks = [site / f"slow-{i}" for i in range(3)]
            slow = [threading.Thread(target=slow_request, args=(mark,)) for mark in marks]
            for thread in slow:
                thread.start()
            until(lambda: all(m.exists() for m in marks), what="the slow requests in progress")
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            for thread in slow:
                thread.join(10)
        assert answered == [(200, b"slow version 1")] * 3  # in progress: answered
        assert proc.wait(20) == 0
        # Nothing failed before the signal. After it, connections are refused, or reset if
        # they were still waiting in the kernel's backlog when the last worker closed the
        # socket (no worker had accepted them: docs/production.md).
        assert all(t >= signalled for t in load.failed_at)
        assert all("Refused" in f or "Reset" in f for f in load.failures), load.failures
    finally:
        stop(proc)


# A draining worker serves a just-accepted connection's first request (connection.py:
# a fresh connection is not idle, so SHUTDOWN does not close it).
@pytest.mark.timeout(180)  # (eight workers start in it: slow on a loaded machine)
def test_max_requests_recycles_workers_without_failing_a_request(site):
    proc, port = start(site, "--workers", "2", "--per-process-cache", "--max-requests", "25", "--status")
    try:
        with Load(port) as load:
            # Eight recycles, each a new process importing pyweb: on a loaded machine that
            # takes seconds, so the bound is generous (what matters is that none fails).
            load.wait_for(200, timeout=90)
        assert load.failures == []
        assert len(load.bodies) == 1
    finally:
        assert stop(proc) == 0
    assert "recycled; starting another" in proc.stderr.read()


def test_max_requests_without_workers_is_an_error(site):
    done = subprocess.run(
        serve_command(site, "--max-requests", "5"),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "--max-requests needs --workers" in done.stderr


# --- status page ----------------------------------------------------------------------------


def test_status_page_is_off_by_default_and_counts_per_page(site):
    proc, port = start(site)
    try:
        assert request(port, "/_pyweb/status")[0] == 404
    finally:
        stop(proc)
    proc, port = start(site, "--status")
    try:
        for _ in range(3):
            request(port, "/hello")
        request(port, "/nope")
        data = status_of(port)
        assert data["scheduler"] == "one-to-one"
        assert data["requests_served"] == 4
        assert data["pages"]["/hello"]["requests"] == 3
        assert data["pages"]["/nope"]["requests"] == 1
        assert data["connections_open"] >= 1  # ours
        assert data["workers"] == [] and data["pid"] == proc.pid
    finally:
        assert stop(proc) == 0


# --- log rotation ---------------------------------------------------------------------------


def test_sigusr1_reopens_the_logs_after_logrotate_moved_them(site, tmp_path):
    log = tmp_path / "access.log"
    proc = subprocess.Popen(
        serve_command(site, "--port", "0", "--access-log", str(log)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    port = int(BANNER.match(proc.stdout.readline()).group(1))  # type: ignore[union-attr]
    try:
        request(port, "/hello?before")
        until(lambda: log.exists() and "/hello?before" in log.read_text(), what="log line")
        log.rename(tmp_path / "access.log.1")  # what logrotate does first
        proc.send_signal(signal.SIGUSR1)  # then its postrotate script
        until_reopened(port, log, "/hello")
        request(port, "/hello?after")
        until(lambda: log.exists() and "/hello?after" in log.read_text(), what="new log")
        assert "/hello?after" not in (tmp_path / "access.log.1").read_text()
    finally:
        assert stop(proc) == 0


def test_timed_access_log_names_the_duration_and_the_worker(site, tmp_path, loop):
    log = tmp_path / "access.log"
    proc, port = start(site, "--workers", "2", "--per-process-cache", "--access-log", str(log),
                       "--access-log-format", "timed")  # fmt: skip
    try:
        for _ in range(10):
            assert request(port, "/slow?s=0.05")[0] == 200
        line = re.compile(
            r'.*"GET /slow\?s=0\.05 HTTP/1\.1" 200 14 "-" "-" rt=(\d+\.\d{6}) worker=([01])$'
        )
        until(
            lambda: log.exists() and len(log.read_text().splitlines()) == 10, what="10 lines"
        )
        found = [line.match(text) for text in log.read_text().splitlines()]
        assert all(found), log.read_text()
        # The page slept 50 ms: by trio's clock, or by asyncio's timers, which may wake up
        # to a millisecond early (uvloop's count whole milliseconds).
        slept = 0.05 if loop == "trio" else 0.049
        assert all(float(m.group(1)) >= slept for m in found), [m.group(1) for m in found]
    finally:
        assert stop(proc) == 0


def test_a_reload_that_changes_the_database_says_it_needs_a_restart(site):
    (site / "pyweb.toml").write_text(f"db = 'sqlite:///{site}/one.sqlite3'\n")
    proc, port = start(site)
    err = ReadAlong(proc.stderr)
    try:
        (site / "pyweb.toml").write_text(f"db = 'sqlite:///{site}/two.sqlite3'\n")
        proc.send_signal(signal.SIGHUP)
        until(lambda: err.has("SIGHUP"), what="the reload's verdict")
        assert request(port, "/hello") == (200, b"version 1")
    finally:
        assert stop(proc) == 0
    assert "SIGHUP: db changed; it needs a restart and keeps its old value" in err.text()
