"""Helpers shared by test modules all over tests/ (one definition each).

* :func:`until` waits, in a plain thread, for a condition to hold (a bounded poll): the
  one way a test waits for something it cannot be told about (no fixed sleeps:
  tests/test_no_sleeps.py refuses them);
* :func:`until_async` does the same inside a trio run, sleeping between polls;
* :func:`until_settled` checkpoints until a condition holds, without letting time pass
  (for tests on trio's virtual clock, where sleeping would move the clock);
* :func:`write_site` writes a site's files under a directory;
* :func:`reachable` (from :mod:`pyweb.testing`) says whether a TCP service answers;
* :func:`serve_command`, :func:`start_serve`, :func:`stop_serve` and :func:`http_request`
  run ``pyweb serve`` as a process, on the test's loop, and talk to it;
* :class:`ReadyWorkers` (:func:`ready_workers`) reads the "worker ready" lines of
  ``pyweb serve --workers N``, so a test waits for a worker (or a replacement) to listen;
* :func:`until_reopened` waits for a server to write its log anew after SIGUSR1;
* :class:`ReadAlong` reads a process's stderr while it runs, so a test can wait for a
  line (a reload's verdict) instead of sleeping;
* :func:`raw_get` is the raw client: one GET over a plain socket, the reply's bytes as
  they came (for tests about the bytes themselves); :func:`raw_exchange` sends any bytes;
* :func:`chat_in_two_workers` serves the example chat in two worker processes that share
  Redis (the ``chat_workers`` fixture of tests/conftest.py).

The server in a thread is :mod:`pyweb.testing` itself (``serve``, ``ServerThread``).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest
import trio

from pyweb.testing import default_loop, reachable

__all__ = ["until", "until_async", "until_settled", "write_site", "reachable",
           "serve_command", "start_serve", "stop_serve", "http_request", "raw_get", "raw_exchange",
           "ReadAlong", "BANNER",
           "ReadyWorkers", "ready_workers", "until_reopened", "chat_in_two_workers"]  # fmt: skip


def until(predicate: Callable[[], object], what: str = "the condition",
          limit: float = 20.0, poll: float = 0.01) -> None:
    """Poll ``predicate`` until it is true; AssertionError naming ``what`` after ``limit``
    seconds (bounded generously: the machine is shared)."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)


async def until_async(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    """Inside trio: sleep in small steps until ``predicate`` holds (TooSlowError after
    ``timeout`` seconds)."""
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.005)


async def until_settled(predicate: Callable[[], object]) -> None:
    """Inside trio on a virtual clock: checkpoint until ``predicate`` holds; real I/O
    readiness arrives between checkpoints, virtual time does not move."""
    for _ in range(100_000):
        if predicate():
            return
        await trio.sleep(0)
    raise AssertionError("condition never became true")


def free_port() -> int:
    """A port nobody listens on, for a server that binds it a moment later (a subprocess,
    uvicorn), or for a test that needs a refused connection.

    Picked below the kernel's ephemeral range, not by binding port 0: a port from that
    range, released here, could be handed before the server binds it to anyone binding port
    0 meanwhile (every test server does), and the test would
    talk to someone else's server. Below the range only another pick of this function can
    take it, one chance in some ten thousand."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default
    below = range(max(1024, low - 10_000), low)
    # (not the random module's own generator: hypothesis seeds it, alike in every worker)
    for port in random.SystemRandom().sample(below, 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # a service listens there (RabbitMQ's 25672, say), or a test does
            return port
    raise OSError(f"no free port among 200 tried in {below.start}-{below.stop - 1}")


def forged(token: str) -> str:
    """``token`` with one character in its middle changed: base64 text whose bytes differ
    for sure (a change at the end may touch only the last character's spare bits, which
    decode to the same bytes: a forged token that was the real one)."""
    i = len(token) // 2
    return token[:i] + ("B" if token[i] == "A" else "A") + token[i + 1 :]


def write_site(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create ``root`` with the given files (text is dedented; bytes written as they are)."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root


# -- `pyweb serve` as a process, as an operator meets it (tests/server, tests/reliability) --

BANNER = re.compile(r"pyweb serving .+ on http://127\.0\.0\.1:(\d+)/")


def serve_command(site: Path | str, *flags: str) -> list[str]:
    """The command line of ``pyweb serve SITE FLAGS`` on the test's loop (the ``loop``
    fixture's, through :func:`pyweb.testing.default_loop`): ``--loop`` is added unless
    ``flags`` name one, so a module marked ``loops("trio", "asyncio")`` serves on each."""
    loop = [] if "--loop" in flags else ["--loop", default_loop()]
    return [sys.executable, "-m", "pyweb", "serve", str(site), *loop, *flags]


def start_serve(site: Path, *flags: str) -> tuple[subprocess.Popen, int]:
    """``pyweb serve SITE`` on a free port and on the test's loop, access log off unless
    ``flags`` name one (the last ``--access-log`` wins); the process and its port, read
    from the banner. With ``--workers N`` (N > 1) it returns once every worker has said
    it listens (:class:`ReadyWorkers`; :func:`ready_workers` gives them to the test)."""
    proc = subprocess.Popen(
        serve_command(site, "--port", "0", "--access-log", "none", *flags),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    banner = proc.stdout.readline()  # type: ignore[union-attr]
    found = BANNER.match(banner)
    if not found:
        proc.kill()
        raise AssertionError(f"no banner: {banner!r} {proc.stderr.read()}")  # type: ignore[union-attr]
    count = worker_count(flags)
    if count > 1:
        try:
            ReadyWorkers(proc).wait(count)
        except AssertionError:
            stop_serve(proc, signal.SIGKILL)
            raise
    return proc, int(found.group(1))


def worker_count(flags: Iterable[str]) -> int:
    """The N of the last ``--workers N`` in ``flags`` (1 without one)."""
    flags = list(flags)
    found = [flags[i + 1] for i, flag in enumerate(flags[:-1]) if flag == "--workers"]
    return int(found[-1]) if found else 1


READY = re.compile(r"pyweb worker (\d+) \(pid (\d+)\) ready")


class ReadyWorkers:
    """The workers of a ``pyweb serve --workers N`` process that said they listen.

    The supervisor starts each worker with a pipe (``PYWEB_READY_FD``); a worker, once its
    socket accepts, prints ``pyweb worker I (pid P) ready`` on the stdout it shares with
    the supervisor and writes to that pipe. Reading those lines as they come tells a test
    that a worker serves (or that a killed one's replacement does) without guessing a
    time: before it, a request waits in the kernel's backlog for as long as a worker
    takes to import pyweb, which on a loaded machine is longer than a client's timeout.
    """

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        _READY[proc.pid] = self  # (for ready_workers)
        self.started: list[tuple[int, int]] = []
        """(worker index, pid) in the order they said they were ready."""
        self._thread = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
        self._thread.start()

    def _read(self, pipe: Iterable[str]) -> None:
        for line in pipe:  # (every match: a line may hold two, see announce_ready)
            for found in READY.finditer(line):
                self.started.append((int(found.group(1)), int(found.group(2))))

    def pids(self) -> dict[int, int]:
        """Each worker index's latest ready pid."""
        return dict(self.started)

    def wait(self, count: int, limit: float = 90.0) -> None:
        """Until ``count`` workers in all have said they are ready since the start (a
        replacement counts: ``wait(3)`` after killing one of two waits for its successor).
        The limit is generous, only a hung start reaches it."""

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"pyweb serve exited ({self.proc.returncode}) "
                                     f"with {len(self.started)} of {count} workers ready")
            return len(self.started) >= count

        until(ready, what=f"{count} workers to say they are ready", limit=limit)


_READY: dict[int, ReadyWorkers] = {}


def ready_workers(proc: subprocess.Popen) -> ReadyWorkers:
    """The :class:`ReadyWorkers` reading ``proc``'s stdout (made by :func:`start_serve`
    when it starts workers)."""
    return _READY[proc.pid]


def stop_serve(proc: subprocess.Popen, signum: int = signal.SIGTERM) -> int:
    """Signal the server (SIGTERM: drain and exit) and return its exit status."""
    _READY.pop(proc.pid, None)
    if proc.poll() is None:
        proc.send_signal(signum)
    try:
        return proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()


def http_request(port: int, target: str, body: bytes | None = None, sock=None,
                 timeout: float = 10.0) -> tuple[int, bytes]:
    """One request; on ``sock`` (kept alive) or on a new connection (closed after, waiting
    at most ``timeout`` seconds for each step)."""
    own = sock is None
    if own:
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        method = "GET" if body is None else "POST"
        head = f"{method} {target} HTTP/1.1\r\nHost: x\r\n"
        if body is not None:
            head += f"Content-Length: {len(body)}\r\nContent-Type: text/plain\r\n"
        if own:
            head += "Connection: close\r\n"
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
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed in the middle of a reply")
            rest += chunk
        return int(head_bytes.split()[1]), rest[:length]
    finally:
        if own:
            sock.close()


def until_reopened(port: int, log: Path, target: str = "/") -> None:
    """After SIGUSR1, until the server writes ``log`` anew: it reopens its log files at the
    next write and shows no sign of having handled the signal, so this requests
    ``target`` (each time with another query) until a line lands in a new file at
    ``log``'s path (the ones before went to the file logrotate moved away)."""
    sent = 0

    def logged_anew() -> bool:
        nonlocal sent
        sent += 1
        separator = "&" if "?" in target else "?"
        assert http_request(port, f"{target}{separator}reopen-{sent}")[0] == 200
        return log.exists()

    until(logged_anew, what=f"a line in the reopened {log.name}")


class ReadAlong:
    """The lines of a process's pipe (``proc.stderr``), read in a thread as they come."""

    def __init__(self, pipe: Iterable[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: Iterable[str]) -> None:
        for line in pipe:
            self.lines.append(line)

    def has(self, text: str) -> bool:
        """Whether ``text`` has appeared so far."""
        return any(text in line for line in list(self.lines))

    def text(self, wait: float = 20.0) -> str:
        """Everything, once the pipe is closed (the process has ended; at most ``wait`` s)."""
        self._thread.join(wait)
        return "".join(self.lines)


def raw_get(port: int, target: str) -> bytes:
    """``GET target`` with ``Connection: close`` on a new socket; every byte of the reply."""
    return raw_exchange(
        port, f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
    )


def raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` as it is on a new socket; every byte of the reply, until the server
    closes (the request should say ``Connection: close``, or be one the server refuses)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        out = b""
        try:
            while piece := sock.recv(65536):
                out += piece
        except ConnectionResetError:  # a refused request's unread bytes: what came is kept
            pass
    return out


PAGES = Path(__file__).resolve().parents[1] / "pages"
"""The example site (the chat is ``pages/chat.py``)."""


@contextlib.contextmanager
def chat_in_two_workers() -> Iterator[int]:
    """``pyweb serve pages --workers 2 --cache redis://...`` on the test's loop, its Redis
    keys under a prefix of its own (removed after); yields the port. Skips without Redis on
    127.0.0.1:6379, unless CI=true (then it fails)."""
    if not reachable("127.0.0.1", 6379, timeout=0.5):
        if os.environ.get("CI") == "true":
            raise AssertionError("Redis is not running on 127.0.0.1:6379")
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    prefix = f"pyweb-test:{uuid.uuid4().hex[:8]}:"
    url = f"redis://127.0.0.1:6379/0?prefix={prefix}"
    proc, port = start_serve(PAGES, "--workers", "2", "--cache", url)
    try:
        yield port
    finally:
        stop_serve(proc)
        import redis

        client = redis.Redis(host="127.0.0.1", port=6379)
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.unlink(*keys)
