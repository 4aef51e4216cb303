"""A minimal hand-written HTTP/1.1 server on trio: the upper bound for a trio server.

The issue's targets are ratios to uvicorn, and one of them is relative to this server,
measured in the same run: it shows what trio itself allows, so the gap between it and pyweb
is what pyweb's layers cost. It does just enough to answer the benchmark's four URLs
correctly with keep-alive (the answers are ``page.raw_response``, shared with
raw_uvloop.py): an accept loop, a task per connection, non-blocking recv into a
buffer (waiting with ``trio.lowlevel.wait_readable`` only when a call would block), find the
end of the header block, read the path, ``Connection: close``, the HTTP version and
``Content-Length`` (to skip a body), and one send per response. No validation at all:
never use it for anything else.

Usage: python raw_trio.py --port 8000 (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import argparse
import socket

import page
import trio

page.check()


async def connection(conn: socket.socket) -> None:
    # trio.lowlevel, not trio.socket: try the non-blocking call first and wait for the socket
    # only when it would block. trio's socket methods add a checkpoint (a trip through the
    # scheduler) to every call, which an upper bound has no reason to pay.
    buf = b""
    with conn:
        try:
            while True:
                try:
                    data = conn.recv(65536)
                except BlockingIOError:
                    await trio.lowlevel.wait_readable(conn)
                    continue
                if not data:
                    return
                buf += data
                while (end := buf.find(b"\r\n\r\n")) >= 0:  # pipelined requests: one by one
                    target, close, length = page.parse_head(buf, end)
                    if len(buf) < end + 4 + length:
                        break  # the body is not all here yet
                    buf = buf[end + 4 + length :]
                    out = memoryview(page.raw_response(target, close))
                    while out:
                        try:
                            out = out[conn.send(out) :]
                        except BlockingIOError:
                            await trio.lowlevel.wait_writable(conn)
                    if close:
                        return
        except (OSError, ValueError, IndexError):
            return  # a reset connection or a malformed request: just drop it


async def main(host: str, port: int) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.setblocking(False)
    async with trio.open_nursery() as nursery:
        while True:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                await trio.lowlevel.wait_readable(listener)
                continue
            conn.setblocking(False)
            # Small responses must not wait for Nagle's algorithm (Hop §3.3.1).
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            nursery.start_soon(connection, conn)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    try:
        trio.run(main, args.host, args.port)
    except* KeyboardInterrupt:
        pass  # Ctrl-C or the benchmark's SIGINT: stop quietly
