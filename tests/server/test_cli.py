"""The command line, as a user runs it: ``python -m pyweb serve DIR --port 0`` in a
subprocess; the banner names the real port; SIGTERM and SIGINT shut it down with exit 0.
On both loops (``--loop trio`` and ``--loop asyncio``: :func:`tests.helpers.serve_command`)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess

import pytest

from tests.helpers import raw_get, serve_command

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]
SERVERS_ELSEWHERE = "the servers are `pyweb serve` processes (one framer: C if built)"


def _start(site: str, *args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        serve_command(site, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    banner = proc.stdout.readline()  # type: ignore[union-attr]
    return proc, banner


def _settings(loop: str, dev: str, scheduler: str = "one-to-one") -> str:
    """The banner's parenthesis: asyncio names its event loop (uvloop, or the standard
    one); both the scheduler, the dev mode and the regions implementation."""
    if loop == "asyncio":
        return (
            rf"\(loop asyncio on (uvloop|asyncio), scheduler {scheduler}, dev mode {dev}, "
            r"regions (c|python)\)"
        )
    return rf"\(scheduler {scheduler}, dev mode {dev}, regions (c|python)\)"


@pytest.fixture
def site(tmp_path):
    (tmp_path / "hello.txt").write_text("hello from a file\n")
    return tmp_path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_a_directory_then_stop_with_a_signal(site, signum, loop):
    proc, banner = _start(str(site), "--port", "0", "--access-log", "none")
    try:
        m = re.fullmatch(
            r"pyweb serving (.+) on http://127\.0\.0\.1:(\d+)/ " + _settings(loop, "off") + r"\n",
            banner,
        )
        assert m, banner
        port = int(m.group(2))
        assert port != 0
        reply = raw_get(port, "/hello.txt")
        assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b"hello from a file\n")
        assert raw_get(port, "/nothing").startswith(b"HTTP/1.1 404 ")
        proc.send_signal(signum)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_options_reach_the_server(site, loop):
    proc, banner = _start(
        str(site), "--port", "0", "--scheduler", "pool", "--pool-size", "2", "--dev",
        "--access-log", "none", "--error-log", "none", "--max-body", "10",
        "--header-timeout", "1", "--keepalive-timeout", "1", "--body-timeout", "1",
        "--max-connections", "5",
    )  # fmt: skip
    try:
        assert re.search(_settings(loop, "on", scheduler="pool"), banner), banner
        port = int(re.search(r":(\d+)/", banner).group(1))  # type: ignore[union-attr]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n")
            assert s.recv(65536).startswith(b"HTTP/1.1 413 ")  # --max-body 10
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_version_names_pyweb_python_and_the_regions():
    import sys

    import pyweb

    result = subprocess.run(
        [sys.executable, "-m", "pyweb", "--version"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"pyweb {pyweb.__version__} (Python 3.")
    assert "regions " in result.stdout


def test_missing_directory_is_a_clear_error(tmp_path):
    missing = str(tmp_path / "nope")
    result = subprocess.run(
        serve_command(missing, "--port", "0"),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert "does not exist" in result.stderr and missing in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--scheduler", "cohort"],
        ["--port", "70000"],
        ["--pool-size", "0"],
        ["--header-timeout", "-1"],
    ],
)
def test_bad_arguments_are_argparse_errors(args, site):
    result = subprocess.run(
        serve_command(site, *args),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert "usage: pyweb serve" in result.stderr and "error:" in result.stderr


def test_port_in_use_is_a_clear_error(site):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            serve_command(site, "--port", str(port)),
            capture_output=True, text=True, timeout=30, env={**os.environ},
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        f"pyweb: error: 127.0.0.1:{port} is already in use (another pyweb or program); stop it "
        f"or choose another port: make run PORT={port + 1} / --port {port + 1}\n"
    )  # one line: no exception group, no traceback


def test_port_in_use_under_workers_is_the_same_line(site):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            serve_command(site, "--port", str(port), "--workers", "2"),
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert f"127.0.0.1:{port} is already in use" in result.stderr


def test_a_host_that_is_not_ours_is_one_line(site):
    result = subprocess.run(
        serve_command(site, "--host", "192.0.2.1", "--port", "0"),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        "pyweb: error: cannot listen on 192.0.2.1:0: 192.0.2.1 is not an address of this "
        "machine\n"
    )


def test_dev_mode_prints_the_learning_banner(site):
    proc, banner = _start(str(site), "--port", "0", "--dev", "--access-log", "none")
    try:
        port = int(re.search(r":(\d+)/", banner).group(1))  # type: ignore[union-attr]
        lines = [proc.stdout.readline() for _ in range(5)]  # type: ignore[union-attr]
        text = "".join(lines)
        assert f"Open http://127.0.0.1:{port}/ in your browser." in text
        assert f"Edit {site}/NAME.py (or make a new one) and reload the browser" in text
        assert "Ctrl-C stops the server." in text
        assert f"--port {port + 1}" in text
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_second_signal_forces_the_exit(site):
    (site / "big.txt").write_bytes(b"x" * (64 * 1024 * 1024))
    proc, banner = _start(str(site), "--port", "0", "--access-log", "none", "--send-timeout", "60")
    try:
        port = int(re.search(r":(\d+)/", banner).group(1))  # type: ignore[union-attr]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as stuck:
            # a download that this client never reads keeps a request in flight
            stuck.sendall(b"GET /big.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            assert stuck.recv(100).startswith(b"HTTP/1.1 200 ")
            proc.send_signal(signal.SIGTERM)
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(0.5)  # graceful: still waiting for the request in flight
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(10) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
