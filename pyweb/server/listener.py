"""The listening socket: the "Accept" stage of Hop's pipeline (Hop §2.4.1, §3.3.2).

Hop creates its server socket once, with a backlog (``make-server-socket (port) :backlog
(somaxconn)``), and hands it to the scheduler's ``accept``. pyweb does the same. Two socket
options matter for a web server:

* ``SO_REUSEADDR`` on the listener, so a restarted server can bind its port again at once
  instead of waiting for old connections in TIME_WAIT to expire;
* ``TCP_NODELAY`` on every accepted connection, which switches off Nagle's algorithm: on a
  persistent connection Nagle combined with delayed ACKs can hold back the last packet of
  a response for up to 200 ms (Hop §3.3.2).

Why plain (non-blocking) standard-library sockets and not ``trio.socket``: every
``trio.socket`` call passes through trio's scheduler once even when the system call
succeeds at once, so that a task can never run forever without letting others in. That
is the right default, but on the hot path of a server it doubles the cost of an accept or
a recv. pyweb tries the system call first and waits for the socket (the runtime's
``wait_readable``) only when it would block, and takes its fairness checkpoint once per
reply instead (``Replies.send_all`` in replies.py). Measured with ``make bench-peers``: one
connection per request went from 0.36× to about 0.9× of a raw trio server.

Nothing here is trio's own: the waits go through :mod:`pyweb.runtime`, so a scheduler on
either loop may accept with these functions (a task waits on the listener while nobody
else does; closing it with :func:`close_socket` wakes that task).
"""

from __future__ import annotations

import socket
from typing import Any

from pyweb.runtime import current, to_thread

__all__ = ["open_listener", "accept", "prepared", "close_socket"]


async def open_listener(host: str, port: int, backlog: int = 128) -> socket.socket:
    """Bind a TCP socket to ``host:port`` (port 0: any free port) and start listening."""
    try:  # an address needs no lookup: no thread for it
        infos = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE | socket.AI_NUMERICHOST
        )
    except socket.gaierror:  # a name: looked up in a thread, the loop goes on meanwhile
        infos = await to_thread(
            socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM, 0, socket.AI_PASSIVE
        )
    if not infos:
        raise OSError(f"cannot resolve {host!r}")
    family, type_, proto, _, address = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


async def accept(listener: socket.socket) -> tuple[socket.socket, str]:
    """Wait for the next connection; return its non-blocking socket (Nagle off) and the
    peer as text. Raises the runtime's ``ClosedResourceError`` (trio's own on trio) if the
    listener is closed meanwhile (that is how shutdown stops an accept loop:
    ``Server.shutdown`` closes it with :func:`close_socket`), ``OSError`` if accept fails
    (EMFILE...).

    The wait is a plain ``wait_readable``: a choice of the socket and the server's
    broadcast (``select(readable_evt(listener), port.recv_evt())``, CML §2.3) said the same
    at several times the cost, paid at each wait of a server that accepts a connection
    per request (docs/performance.md)."""
    while True:
        try:
            # ``_accept``, what ``socket.accept`` calls: the wrapper also turns the listener's
            # family and type into enums for the new socket, a third of an accept's work.
            fd, address = listener._accept()  # type: ignore[attr-defined]
            break
        except BlockingIOError:
            await current().wait_readable(listener)
    # The listener's family, type and protocol, as socket.accept passes them; read from
    # the C socket below the wrapper, as plain ints (the wrapper's properties make enums).
    plain: Any = super(socket.socket, listener)
    return prepared(socket.socket(plain.family, plain.type, plain.proto, fileno=fd), address)


def prepared(sock: socket.socket, address: Any) -> tuple[socket.socket, str]:
    """An accepted socket as a connection wants it: non-blocking, Nagle off (the module
    doc says why), and the peer as ``"host:port"``."""
    sock.setblocking(False)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass  # not TCP (a test may pass a Unix socket): nothing to switch off
    if isinstance(address, tuple):
        return sock, f"{address[0]}:{address[1]}"
    return sock, str(address)


def close_socket(sock: socket.socket) -> None:
    """Close ``sock``, first waking any task that waits on it (it gets the runtime's
    ``ClosedResourceError``): a loop must not go on watching a descriptor that is closed,
    and may be reused, under its waiter."""
    if sock.fileno() >= 0:
        current().notify_closing(sock)
    sock.close()
