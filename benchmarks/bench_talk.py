"""CPU time per request of the connection loop (``Connection.talk``), in one process.

A client task and a :class:`pyweb.server.Server` share one ``trio.run``: the client sends
``GET /hello`` on one keep-alive connection, in batches of pipelined requests, and reads the
replies; the handler returns a prebuilt ``Response``. What is measured is the process's CPU
time per request (``time.process_time``), so a busy machine slows the run down but changes
the number much less than it changes req/s in ``peers.py``; the client's share is the same
for every version of the server, so two versions compare by their difference.

``--batch 1`` sends one request at a time (each one waits for bytes: the wait for the next
request, its deadline); ``--batch 50`` keeps requests in the parser's buffer (the
parse/handler/reply path alone); ``--close`` opens a connection per request
(``Connection: close``: the accept, the connection's task, its slot and its close);
``--metrics`` serves with the request counting of ``/_pyweb/metrics`` (off by default,
as in ``pyweb serve``). To compare two checkouts, run the script with each on ``PYTHONPATH``, in
turns, pinned to one core, and keep the best of several runs::

    for i in 1 2 3 4 5; do for tree in /tmp/before .; do
      PYTHONPATH=$tree taskset -c 0 .venv/bin/python benchmarks/bench_talk.py --batch 1
    done; done

``--callgrind`` counts instructions per request instead (under valgrind, ``--requests``
and twice as many, the difference), which a loaded machine does not move.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
import tempfile
import time

import trio

from pyweb.protocol import Response
from pyweb.server import Server, ServerConfig

REQUEST = b"GET /hello HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench_talk\r\n\r\n"
CLOSING = REQUEST[:-2] + b"Connection: close\r\n\r\n"
REPLY = Response(200, [("Content-Type", "text/plain")], b"Hello, world!")


async def hello(ctx: object) -> Response:
    return REPLY


async def read_exactly(sock: trio.socket.SocketType, n: int) -> None:
    while n:
        data = await sock.recv(min(n, 1 << 16))
        if not data:
            raise EOFError("the server closed the connection")
        n -= len(data)


async def one_reply_size(sock: trio.socket.SocketType) -> int:
    await sock.send(REQUEST)
    data = b""
    while b"\r\n\r\n" not in data:
        data += await sock.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(
        next(
            line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        ).split(b":")[1]
    )
    await read_exactly(sock, length - len(body))
    return len(head) + 4 + length


async def one_connection(port: int) -> None:
    """A request on a connection of its own, read to the server's close."""
    sock = trio.socket.socket()
    with sock:
        await sock.connect(("127.0.0.1", port))
        await sock.send(CLOSING)
        while await sock.recv(1 << 16):
            pass


async def measure(requests: int, batch: int, close: bool = False, metrics: bool = False) -> float:
    config = ServerConfig(port=0, access_log=None, error_log=None)
    if hasattr(config, "metrics"):  # (a checkout from before metrics has none to turn off)
        config = dataclasses.replace(config, metrics=metrics)
    if hasattr(config, "keepalive_requests"):  # one connection for the whole run
        config = dataclasses.replace(config, keepalive_requests=10**9)
    server = Server(config, hello)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        sock = trio.socket.socket()
        await sock.connect(("127.0.0.1", server.port))
        size = await one_reply_size(sock)  # the Date line keeps its length all day
        for _ in range(200):  # warm up
            await sock.send(REQUEST)
            await read_exactly(sock, size)
        started = time.process_time()
        done = 0
        while close and done < requests:
            await one_connection(server.port)
            done += 1
        while done < requests:
            await sock.send(REQUEST * batch)
            await read_exactly(sock, size * batch)
            done += batch
        cpu = time.process_time() - started
        sock.close()
        server.shutdown()
    return cpu / done


def callgrind(args: argparse.Namespace) -> None:
    """Instructions per request: the run under valgrind with ``--requests`` and twice as
    many; the difference cancels start-up (client included, the same for every server)."""
    counts = []
    for n in (args.requests, 2 * args.requests):
        with tempfile.NamedTemporaryFile(suffix=".out") as out:
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}",
                       sys.executable, __file__, "--requests", str(n), "--batch", str(args.batch),
                       *(["--close"] if args.close else []),
                       *(["--metrics"] if args.metrics else [])]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            counts.append(int(re.search(r"Collected : (\d+)", done.stderr).group(1)))  # type: ignore[union-attr]
    metrics = "on" if args.metrics else "off"
    print(f"batch {args.batch} (metrics {metrics}): "
          f"{(counts[1] - counts[0]) / args.requests:,.0f} instructions per request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--close", action="store_true", help="a connection per request")
    parser.add_argument("--metrics", action="store_true", help="request counting on")
    parser.add_argument("--callgrind", action="store_true", help="instructions per request")
    args = parser.parse_args()
    if args.callgrind:
        callgrind(args)
        return
    seconds = trio.run(measure, args.requests, args.batch, args.close, args.metrics)
    how = "a connection each" if args.close else f"batch {args.batch}"
    print(f"{seconds * 1e6:.2f} µs CPU per request ({how}, {args.requests} requests)")


if __name__ == "__main__":
    main()
