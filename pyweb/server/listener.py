"""The listening socket: the "Accept" stage of Hop's pipeline (Hop §2.4.1, §3.3.2).

Hop creates its server socket once, with a backlog (``make-server-socket (port) :backlog
(somaxconn)``), and hands it to the scheduler's ``accept``. pyweb does the same with a trio
socket. Two socket options matter for a web server:

* ``SO_REUSEADDR`` on the listener, so a restarted server can bind its port again at once
  instead of waiting for old connections in TIME_WAIT to expire;
* ``TCP_NODELAY`` on every accepted connection, which switches off Nagle's algorithm: on a
  persistent connection Nagle combined with delayed ACKs can hold back the last packet of
  a response for up to 200 ms (Hop §3.3.2).
"""

from __future__ import annotations

import socket as _stdsocket

import trio

__all__ = ["open_listener", "accept"]


async def open_listener(host: str, port: int, backlog: int = 128) -> trio.socket.SocketType:
    """Bind a TCP socket to ``host:port`` (port 0: any free port) and start listening."""
    infos = await trio.socket.getaddrinfo(
        host, port, type=_stdsocket.SOCK_STREAM, flags=_stdsocket.AI_PASSIVE
    )
    if not infos:
        raise OSError(f"cannot resolve {host!r}")
    family, type_, proto, _, address = infos[0]
    sock = trio.socket.socket(family, type_, proto)
    try:
        sock.setsockopt(_stdsocket.SOL_SOCKET, _stdsocket.SO_REUSEADDR, 1)
        await sock.bind(address)
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


async def accept(listener: trio.socket.SocketType) -> tuple[trio.socket.SocketType, str]:
    """Wait for the next connection; return its socket (Nagle off) and the peer as text."""
    sock, address = await listener.accept()
    try:
        sock.setsockopt(_stdsocket.IPPROTO_TCP, _stdsocket.TCP_NODELAY, 1)
    except OSError:
        pass  # not TCP (a test may pass a Unix socket): nothing to switch off
    if isinstance(address, tuple):
        peer = f"{address[0]}:{address[1]}"
    else:
        peer = str(address)
    return sock, peer
