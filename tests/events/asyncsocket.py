"""A socket pair with ``await send()``/``await recv()`` on either runtime (trio's
``trio.socket.socketpair`` exists on trio only)."""

from __future__ import annotations

import socket

from pyweb import runtime as rt


class AsyncSocket:
    """One end of a socket pair with ``await send()``/``await recv()`` on either loop."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock

    def fileno(self) -> int:
        return self.sock.fileno()

    async def send(self, data: bytes) -> int:
        await rt.current().wait_writable(self.sock)
        return self.sock.send(data)

    async def recv(self, size: int) -> bytes:
        while True:
            try:
                return self.sock.recv(size)
            except BlockingIOError:
                await rt.current().wait_readable(self.sock)

    def __enter__(self) -> AsyncSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


def socketpair() -> tuple[AsyncSocket, AsyncSocket]:
    a, b = socket.socketpair()
    return AsyncSocket(a), AsyncSocket(b)
