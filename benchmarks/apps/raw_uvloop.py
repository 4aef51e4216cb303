"""A minimal asyncio Protocol server on uvloop: the upper bound for a Python server on asyncio.

The peer of ``raw_trio.py`` on the other loop. pyweb's asyncio server is a Protocol server
on uvloop too, so the distance between this one and pyweb on ``--loop asyncio`` is what
pyweb's layers cost there (the issue's target is stated against it). It does just enough:
uvloop's ``create_server`` (libuv accepts, reads and writes in C), ``data_received`` finds
the end of each head, reads the target, ``Connection: close``, the version and
``Content-Length``, and writes the whole response with one ``transport.write``. The
answers are the ones raw_trio gives (``page.raw_response``). No validation at all: never
use it for anything else.

With ``--task`` (the ``raw-uvloop-task`` row of ``peers.py``) each answer is written by a
task per connection that a future wakes, the shape of pyweb's asyncio server: the
difference between the two is what that wake costs a request.

Usage: python raw_uvloop.py --port 8000 [--task] (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
from typing import cast

import page
import uvloop

page.check()


class RawHttp(asyncio.Protocol):
    """One connection: a buffer of what has arrived, answered one request head at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop turns TCP_NODELAY on for TCP transports itself (small replies must not wait
        # for Nagle's algorithm, Hop §3.3.1). Its transports are not asyncio.Transport
        # subclasses, only alike: a cast, not a check.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        transport = self.transport
        assert transport is not None
        try:
            while (end := buf.find(b"\r\n\r\n")) >= 0:  # pipelined requests: one by one
                target, close, length = page.parse_head(buf, end)
                if len(buf) < end + 4 + length:
                    break  # the body is not all here yet
                buf = buf[end + 4 + length :]
                transport.write(page.raw_response(target, close))
                if close:
                    transport.close()
                    break
        except (ValueError, IndexError):
            transport.close()  # a malformed request: just drop the connection
            buf = b""
        self.buf = buf


class TaskHttp(RawHttp):
    """``--task``: the same answers, written by a task per connection that a future wakes
    for each one, as pyweb's asyncio server answers (its connection's task waits for the
    next request). Beside ``RawHttp``, the difference is what that wake costs a request.
    ``data_received`` is RawHttp's own: the transport it sees hands what it is given to the
    task (:class:`_Handoff`)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.real = cast(asyncio.Transport, transport)
        self.transport = cast(asyncio.Transport, _Handoff(self))
        self.pending: collections.deque[bytes | None] = collections.deque()  # None: close
        self.waiter: asyncio.Future[None] | None = None
        self.task = asyncio.get_running_loop().create_task(self.answer())

    def connection_lost(self, exc: Exception | None) -> None:
        self.task.cancel()

    def hand(self, data: bytes | None) -> None:
        self.pending.append(data)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def answer(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self.pending:
                self.waiter = loop.create_future()
                await self.waiter
            data = self.pending.popleft()
            if data is None:
                self.real.close()
                return
            self.real.write(data)


class _Handoff:
    """The transport TaskHttp's ``data_received`` writes to: it hands over instead."""

    def __init__(self, conn: TaskHttp) -> None:
        self.conn = conn

    def write(self, data: bytes) -> None:
        self.conn.hand(data)

    def close(self) -> None:
        self.conn.hand(None)


async def main(host: str, port: int, protocol: type[RawHttp]) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(protocol, host, port, backlog=1024, reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--task", action="store_true",
                        help="answer from a task per connection, woken by a future")  # fmt: skip
    args = parser.parse_args()
    try:
        uvloop.run(main(args.host, args.port, TaskHttp if args.task else RawHttp))
    except KeyboardInterrupt:
        pass  # Ctrl-C or the benchmark's SIGINT: stop quietly
