"""Attacks on a running ``pyweb serve``, and how long a normal client waits meanwhile.

Each scenario starts ``pyweb serve`` in a subprocess (from this checkout, or from another
tree with ``--tree``, to compare with older code), opens the hostile connections, and runs
a *normal client* beside them: one new connection and one ``GET /hello`` every 50 ms. It
prints the normal client's worst and median wait once the hostile connections are in place
(and apart, its worst while they were being opened: 100 every 50 ms, which for
``idle-keepalive`` is also a flood of 2,000 requests in a second), its failures (no answer
within ``--client-timeout``, or a reset), the 503s it got, and the server's peak RSS.

    python benchmarks/attacks.py                              # every scenario, this tree
    python benchmarks/attacks.py slow-bodies --n 1000 --seconds 20
    python benchmarks/attacks.py --tree /tmp/i17-before       # the same against old code

Scenarios (the hardening issue's list): ``slow-headers`` (a header byte every second),
``slow-bodies`` (a declared 1 MB body, one byte every 2 s), ``chunked-trickle`` (a
chunked body that never ends, 1 KiB/s), ``idle`` (connections that send nothing),
``idle-keepalive`` (a request each, then silence), ``long-polls`` (requests to a page
that waits 60 s for an event), ``big-posts`` (40 clients posting 16 MB forms in a loop).
No time is asserted here: ``tests/reliability`` runs short versions.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCENARIOS = (
    "slow-headers", "slow-bodies", "chunked-trickle", "idle", "idle-keepalive", "long-polls",
    "big-posts",
)  # fmt: skip

SITE = {
    "hello.py": 'conn.return_("hello")\n',
    # a long-poll: waits for the client to leave, or 60 s (the chat's pattern)
    "poll.py": (
        "from pyweb.events import select, timeout\n"
        "await select(conn.client_gone_evt(), timeout(60))\n"
        'conn.return_("polled")\n'
    ),
    # a form handler: reads the form (the body), answers its size (an upload's ``size``;
    # older trees hold it whole, as ``data``)
    "post.py": (
        'f = conn.files.get("f")\n'
        'n = (getattr(f, "size", None) or len(f.data)) if f else len(conn.form.get("data", ""))\n'
        "conn.return_(str(n))\n"
    ),
}


def raise_fd_limit() -> int:
    """Raise this process's open-file limit to the hard limit (thousands of sockets)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """``pyweb serve`` of a small site, from ``tree``, in a subprocess."""

    tree: str
    args: list[str] = field(default_factory=list)
    port: int = 0
    proc: subprocess.Popen | None = None
    site: str = ""

    def __enter__(self) -> Server:
        self.site = tempfile.mkdtemp(prefix="pyweb-attacks-")
        for name, text in SITE.items():
            with open(os.path.join(self.site, name), "w") as f:
                f.write(text)
        self.port = free_port()
        env = dict(os.environ, PYTHONPATH=self.tree)
        env.setdefault("PYWEB_SECRET_KEY", "attacks-" + "k" * 32)
        cmd = [sys.executable, "-m", "pyweb", "serve", self.site, "--port", str(self.port),
               "--access-log", "none", *self.args]  # fmt: skip
        if self._knows("--csrf-exempt"):  # POSTs from scripts: no form, no CSRF token
            cmd += ["--csrf-exempt", "/post"]
        self.proc = subprocess.Popen(cmd, cwd=self.tree, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the server did not start")

    def _knows(self, flag: str) -> bool:
        """Whether this tree's ``pyweb serve`` has ``flag`` (older checkouts do not)."""
        config = os.path.join(self.tree, "pyweb", "server", "config.py")
        try:
            with open(config) as f:
                return flag[2:].replace("-", "_") in f.read()
        except OSError:
            return False

    def rss_mb(self) -> float:
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:  # type: ignore[union-attr]
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        shutil.rmtree(self.site, ignore_errors=True)


@dataclass
class Waits:
    waits: list[float] = field(default_factory=list)
    opening: list[float] = field(default_factory=list)
    """Waits that began while the hostile connections were still being opened."""
    failures: int = 0
    busy: int = 0  # 503s
    errors: list[str] = field(default_factory=list)

    def record(self, started: float) -> None:
        wait = time.monotonic() - started
        (self.waits if OPENED.is_set() else self.opening).append(wait)


OPENED = threading.Event()
"""Set once every hostile connection has been opened (the attack is in place)."""


def normal_client(port: int, stop: threading.Event, out: Waits, timeout: float) -> None:
    """A normal client: a fresh connection and one GET every 50 ms until ``stop``."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
                s.settimeout(max(0.1, timeout - (time.monotonic() - started)))
                s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
            status = int(data.split(b" ", 2)[1])
            out.record(started)
            if status == 503:
                out.busy += 1
            elif status != 200:
                out.failures += 1
                out.errors.append(f"status {status}")
        except (OSError, IndexError, ValueError) as exc:
            out.record(started)
            out.failures += 1
            if len(out.errors) < 5:
                out.errors.append(repr(exc))
        stop.wait(0.05)


# ---- the attackers (asyncio: thousands of sockets in one thread) --------------------------


@dataclass
class Until:
    """When the attackers stop (moved once every connection has been opened)."""

    at: float


async def _open(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    try:
        return await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return None


async def _hold(port: int, first: bytes, trickle: bytes, every: float, end: Until,
                reconnect: bool = True) -> None:  # fmt: skip
    """One hostile connection: send ``first``, then ``trickle`` every ``every`` s; when the
    server closes it, open another (an attacker keeps the pressure up)."""
    while time.monotonic() < end.at:
        opened = await _open(port)
        if opened is None:
            await asyncio.sleep(0.1)
            continue
        reader, writer = opened
        try:
            if first:
                writer.write(first)
                await writer.drain()
            while time.monotonic() < end.at:
                if trickle:
                    writer.write(trickle)
                    await writer.drain()
                try:
                    data = await asyncio.wait_for(reader.read(65536), every)
                    if not data:
                        break  # closed by the server: open another
                except TimeoutError:
                    pass
        except OSError:
            pass
        finally:
            writer.close()
        if not reconnect:
            return
        await asyncio.sleep(0.05)


POSTS: Counter[str] = Counter()
"""The big posts' replies by status (``200``, ``503``, ...; ``error``: no reply)."""


async def _big_post(port: int, end: Until, size: int) -> None:
    # an upload (multipart): url-encoded forms have a 1 MiB limit of their own
    part = b'--b\r\nContent-Disposition: form-data; name="f"; filename="f.bin"\r\n\r\n'
    body = part + b"x" * (size - len(part) - 9) + b"\r\n--b--\r\n"
    head = (
        b"POST /post HTTP/1.1\r\nHost: x\r\n"
        b"Content-Type: multipart/form-data; boundary=b\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
    )
    while time.monotonic() < end.at:
        opened = await _open(port)
        if opened is None:
            await asyncio.sleep(0.1)
            continue
        reader, writer = opened
        try:
            writer.write(head + body)
            await writer.drain()
            reply = await asyncio.wait_for(reader.read(65536), 30)
            POSTS[reply[9:12].decode("latin-1") or "none"] += 1
        except (TimeoutError, OSError):
            POSTS["error"] += 1
        finally:
            writer.close()


async def attack(name: str, port: int, n: int, seconds: float) -> None:
    end = Until(time.monotonic() + seconds + 60.0)  # set for real once the crowd is open
    get = b"GET /hello HTTP/1.1\r\nHost: x\r\n"
    if name == "slow-headers":
        jobs = [_hold(port, get, b"X: y\r\n", 1.0, end) for _ in range(n)]
    elif name == "slow-bodies":
        post = b"POST /post HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000000\r\n\r\n"
        jobs = [_hold(port, post, b"a", 2.0, end) for _ in range(n)]
    elif name == "chunked-trickle":
        post = b"POST /post HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"
        jobs = [_hold(port, post, b"400\r\n" + b"a" * 1024 + b"\r\n", 1.0, end) for _ in range(n)]
    elif name == "idle":
        jobs = [_hold(port, b"", b"", 1.0, end) for _ in range(n)]
    elif name == "idle-keepalive":
        jobs = [_hold(port, get + b"\r\n", b"", 1.0, end) for _ in range(n)]
    elif name == "long-polls":
        poll = b"GET /poll HTTP/1.1\r\nHost: x\r\n\r\n"
        jobs = [_hold(port, poll, b"", 1.0, end) for _ in range(n)]
    elif name == "big-posts":
        jobs = [_big_post(port, end, 16 * 1024 * 1024) for _ in range(n)]
    else:
        raise ValueError(f"unknown scenario {name!r}")
    # Open the connections gradually (a burst of thousands of SYNs overflows the backlog
    # of any server; that is a kernel matter, not what is measured here).
    tasks = []
    for job in jobs:
        tasks.append(asyncio.ensure_future(job))
        if len(tasks) % 100 == 0:
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # (the last ones connect, and send what they send first)
    OPENED.set()
    end.at = time.monotonic() + seconds  # the attack lasts ``seconds`` once in place
    await asyncio.gather(*tasks, return_exceptions=True)


def run(name: str, tree: str, n: int, seconds: float, client_timeout: float,
        server_args: list[str]) -> dict[str, float]:  # fmt: skip
    """Run one scenario; return the normal client's worst/median wait, failures, 503s,
    and the server's peak RSS (MB)."""
    POSTS.clear()
    OPENED.clear()
    with Server(tree, server_args) as server:
        stop = threading.Event()
        waits = Waits()
        peak = [server.rss_mb()]

        def watch_rss() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], server.rss_mb())
                stop.wait(0.2)

        threads = [
            threading.Thread(target=normal_client, args=(server.port, stop, waits, client_timeout)),
            threading.Thread(target=watch_rss),
        ]
        for t in threads:
            t.start()
        try:
            asyncio.run(attack(name, server.port, n, seconds))
        finally:
            stop.set()
            for t in threads:
                t.join()
    return {
        "worst": max(waits.waits, default=0.0),
        "worst_opening": max(waits.opening, default=0.0),
        "median": statistics.median(waits.waits) if waits.waits else 0.0,
        "requests": len(waits.waits),
        "failures": waits.failures,
        "busy_503": waits.busy,
        "rss_mb": peak[0],
        "posts": dict(POSTS),  # type: ignore[dict-item]
        "errors": waits.errors,  # type: ignore[dict-item]
    }


DEFAULT_N = {"big-posts": 40}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--tree", default=HERE, help="the pyweb checkout to serve from")
    parser.add_argument(
        "--n", type=int, default=None, help="hostile connections (default 1000; 40 for big-posts)"
    )
    parser.add_argument(
        "--seconds", type=float, default=20.0, help="how long each attack lasts once in place"
    )
    parser.add_argument("--client-timeout", type=float, default=30.0)
    parser.add_argument("--server-arg", action="append", default=[], help="passed to pyweb serve")
    args = parser.parse_args(argv)
    print(f"open files allowed: {raise_fd_limit()}; tree: {args.tree}")
    print(
        f"{'scenario':16} {'n':>5} {'worst s':>8} {'median s':>9} {'reqs':>5} {'fail':>5} {'503':>5} {'RSS MB':>7} {'opening s':>9}"
    )
    for name in args.scenarios:
        n = args.n if args.n is not None else DEFAULT_N.get(name, 1000)
        r = run(name, args.tree, n, args.seconds, args.client_timeout, args.server_arg)
        print(f"{name:16} {n:5} {r['worst']:8.2f} {r['median']:9.3f} {r['requests']:5} "
              f"{r['failures']:5} {r['busy_503']:5} {r['rss_mb']:7.0f} {r['worst_opening']:9.2f}  {r['posts'] or ''} {r['errors'][:2]}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
