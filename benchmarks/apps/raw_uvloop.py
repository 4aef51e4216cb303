"""A minimal asyncio Protocol server on uvloop: the upper bound for a Python server on asyncio.

The peer of ``raw_trio.py`` on the other loop. pyweb's asyncio server is a Protocol server
on uvloop too, so the distance between this one and pyweb on ``--loop asyncio`` is what
pyweb's layers cost there (the issue's target is stated against it). It does just enough:
uvloop's ``create_server`` (libuv accepts, reads and writes in C), ``data_received`` finds
the end of each head, reads the target, ``Connection: close``, the version and
``Content-Length``, and writes the whole response with one ``transport.write``. The
answers are the ones raw_trio gives (``page.raw_response``). No validation at all: never
use it for anything else.

Usage: python raw_uvloop.py --port 8000 (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import argparse
import asyncio
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


async def main(host: str, port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(RawHttp, host, port, backlog=1024, reuse_address=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    try:
        uvloop.run(main(args.host, args.port))
    except KeyboardInterrupt:
        pass  # Ctrl-C or the benchmark's SIGINT: stop quietly
