"""Instructions per request of the asyncio server's connection code (``pyweb/server/asyncio/``), in one process.

The asyncio twin of ``bench_talk.py``: an :class:`~pyweb.server.asyncio.HttpProtocol` is fed
requests by hand (``data_received``) on a uvloop loop, and its replies go to a transport
that only keeps them, so what is measured is the protocol's own path (the parser, the
context, the handler call, the framing, the slots and timers), not sockets or the kernel.
The handler returns a prebuilt ``Response``.

Scenarios: ``hello`` (one keep-alive connection, one request at a time), ``close`` (a new
connection per request, ``Connection: close``: ``connection_made`` to ``connection_lost``),
``dynamic`` (a 984-byte body, as the peers' page), ``page`` (the hello page's body as a
page gives it: str ``Fragments``).

``--callgrind`` runs the scenario under valgrind twice (``--n`` and ``2 * --n``
requests) and prints the difference per request: start-up cancels out. ``--metrics``
serves with the request counting of ``/_pyweb/metrics`` on (off by default, as in
``pyweb serve``): run both to see what counting costs a request.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_aio_talk.py [--scenario hello]
                                                                  [--n 2000] [--callgrind]
                                                                  [--metrics]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

from pyweb.protocol import Response
from pyweb.protocol.response import Fragments
from pyweb.server import ServerConfig
from pyweb.server.asyncio import AsyncioServer, HttpProtocol
from pyweb.server.logging import ServerLog

REQUESTS = {
    "hello": b"GET /hello HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\n\r\n",
    "close": b"GET /hello HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n",
    "dynamic": b"GET /dynamic HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\n\r\n",
    "page": b"GET /page HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\n\r\n",
}
HELLO = Response(200, [("content-type", "text/plain")], b"Hello, world!")
DYNAMIC = Response(200, [("content-type", "text/html; charset=utf-8")], b"x" * 984)
PAGE = Response(200, [("content-type", "text/html; charset=utf-8")],
                Fragments(["<p>", "Hello, world!", "</p>"], 20))  # fmt: skip
PAGES = {"/dynamic": DYNAMIC, "/page": PAGE}


async def handler(ctx: Any) -> Response:
    return PAGES.get(ctx.request.path, HELLO)


class Transport:
    """What the protocol needs of a uvloop TCP transport; written bytes are counted."""

    def __init__(self, replied: list[int]) -> None:
        self.replied = replied
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def write(self, data: bytes) -> None:
        self.replied[0] += 1

    def writelines(self, pieces: Any) -> None:
        self.replied[0] += 1

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    abort = close

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass


async def run(scenario: str, n: int, metrics: bool = False) -> float:
    config = ServerConfig(access_log=None, error_log=None)
    if hasattr(config, "metrics"):  # (a checkout from before metrics has none to turn off)
        config.metrics = metrics
    server = AsyncioServer(config, handler)
    server.log = ServerLog(None, None)
    server.loop = asyncio.get_running_loop()  # (set by AsyncioServer.start, not called here)
    request = REQUESTS[scenario]
    replied = [0]
    started = time.perf_counter()
    transport = Transport(replied)
    transport.closed = True
    protocol = HttpProtocol(server)
    for i in range(n):
        if transport.closed:  # a new connection (keepalive_requests ends one too)
            transport = Transport(replied)
            protocol = HttpProtocol(server)
            protocol.connection_made(transport)
        protocol.data_received(request)
        while replied[0] <= i:  # the reply is written by a task: let it run
            await asyncio.sleep(0)
        if transport.closed:
            protocol.connection_lost(None)
    return time.perf_counter() - started


def callgrind(args: argparse.Namespace) -> None:
    counts = []
    for n in (args.n, 2 * args.n):
        with tempfile.NamedTemporaryFile(suffix=".out") as out:
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}",
                       sys.executable, __file__, "--scenario", args.scenario, "--n", str(n),
                       *(["--metrics"] if args.metrics else [])]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            counts.append(int(re.search(r"Collected : (\d+)", done.stderr).group(1)))  # type: ignore[union-attr]
    metrics = "on" if args.metrics else "off"
    print(f"{args.scenario} (metrics {metrics}): {(counts[1] - counts[0]) / args.n:,.0f} "
          "instructions per request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="hello", choices=sorted(REQUESTS))
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--metrics", action="store_true", help="request counting on")
    args = parser.parse_args()
    if args.callgrind:
        callgrind(args)
        return
    import uvloop

    seconds = uvloop.run(run(args.scenario, args.n, args.metrics))
    print(f"{args.scenario}: {seconds / args.n * 1e6:.2f} µs per request")


if __name__ == "__main__":
    main()
