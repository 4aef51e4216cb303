"""``client_gone_evt``: an event enabled when the client hangs up (CML §2.3, Hop §2.4).

A handler that waits for something slow (a long poll, a stream of server-sent events)
should stop as soon as nobody is listening any more: a closed browser tab must free its
waiter at once, not when the next message or the 30-second timeout comes. In CML terms
the connection offers one more base event, like ``syncOnInput`` (§2.3), that a handler
puts in its choice::

    msg = await select(port.recv_evt(), timeout(30), ctx.client_gone_evt())

How it is noticed. While the handler runs nobody reads the socket, so the kernel keeps
what the client sends. The client going away shows up as the socket becoming readable
with nothing to read: ``recv(MSG_PEEK)`` returns ``b""`` (FIN) or fails (RST). On Linux
``poll(POLLRDHUP)`` also sees a FIN behind bytes that are already buffered (a pipelined
request, an unread body); elsewhere such a connection is checked by polling every
``RECHECK`` seconds. Nothing is consumed: the connection loop reads the socket again
after the reply as usual.

A *half-close* counts as gone: a client that sends its request and then shuts down its
sending side (``shutdown(SHUT_WR)``, rare among HTTP clients) is treated as having left.

The watching costs nothing until a handler asks: the first ``client_gone_evt()`` sync of a
request starts one small background task that waits on the socket; the connection stops
it when the reply has been sent (or before it reads the request body, since only one task
may wait on a socket at a time, and starts it again after).

The watch needs only a loop that can wait on a socket, so it is written against
:mod:`pyweb.runtime` and works on either loop; it serves a driver whose task reads the
socket itself (trio's ``Connection``). The asyncio driver does not need it: its transport
reads the socket all along, and the loop tells it when the client hangs up
(``connection_lost``).
"""

from __future__ import annotations

import errno
import select
import socket

from pyweb.events import ClientGoneEvt, Latch
from pyweb.runtime import current
from pyweb.runtime.contract import Scope

__all__ = ["ClientWatch", "RECHECK"]

RECHECK = 0.25
"""Seconds between checks while bytes the handler has not read sit in the socket (a
readable socket cannot be waited on: it is readable at once)."""

_POLLRDHUP = getattr(select, "POLLRDHUP", 0)


def client_has_gone(sock: socket.socket) -> bool | None:
    """True if the peer closed or reset the connection, False if it is still there,
    ``None`` if unread bytes hide the answer (and POLLRDHUP is not available)."""
    if sock.fileno() < 0:
        return True
    if _POLLRDHUP and hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN | _POLLRDHUP)
        events = poller.poll(0)
        if not events:
            return False
        mask = events[0][1]
        if mask & (_POLLRDHUP | select.POLLHUP | select.POLLERR | select.POLLNVAL):
            return True
        # Readable without a FIN: bytes are waiting and the client is still there.
        return False
    try:
        data = sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return False
    except OSError as exc:
        return exc.errno != errno.EINTR
    return True if data == b"" else None


class ClientWatch:
    """Watches one connection's socket for the client leaving, for the current request: the
    :class:`~pyweb.events.Watcher` behind :class:`~pyweb.events.ClientGoneEvt`."""

    __slots__ = ("sock", "latch", "scope", "running")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.latch = Latch()
        """Set (for good) once the client has gone."""
        self.scope: Scope | None = None
        self.running = False

    @property
    def gone(self) -> bool:
        return self.latch.is_set

    def evt(self) -> ClientGoneEvt:
        return ClientGoneEvt(self)

    def check(self) -> bool:
        if not self.latch.is_set and client_has_gone(self.sock):
            self.latch.set()
        return self.latch.is_set

    def start(self) -> None:
        if self.running or self.latch.is_set:
            return
        self.running = True
        rt = current()
        self.scope = rt.CancelScope()
        rt.spawn_background(self._watch, self.scope)

    def stop(self) -> None:
        """Stop watching (the reply is out, or the connection is about to read the socket).
        Synchronous: the socket is free for another waiter on return."""
        if self.scope is not None:
            self.scope.cancel()
            self.scope = None
        self.running = False

    async def _watch(self, scope: Scope) -> None:
        rt = current()
        with scope:
            try:
                while not self.check():
                    if not self.latch.waiting:
                        return  # every waiter chose another branch: nobody is listening
                    if self._readable():
                        # Bytes wait unread, so the socket is readable at once: waiting on
                        # it would spin. Check again a little later instead.
                        await rt.sleep(RECHECK)
                    else:
                        await rt.wait_readable(self.sock)
            except Exception:  # closed under us, busy: the client is as good as gone
                self.latch.set()
        if scope is self.scope:
            self.running = False
            self.scope = None

    def _readable(self) -> bool:
        if not hasattr(select, "poll"):
            return True  # no poll(2): always recheck on a timer
        poller = select.poll()
        poller.register(self.sock, select.POLLIN)
        return bool(poller.poll(0))
