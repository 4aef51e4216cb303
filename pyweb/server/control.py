"""The server's control broadcast: shutdown and reload as messages (CML §3.1, Marlow §6).

Reppy's buffered multicast channel (CML §3.1) gives every reader its own port that sees
every message sent after the port was made, in order. The server owns one
:class:`~pyweb.events.Multicast` (``Server.broadcast``); the accept loop of each scheduler
task and each connection that waits for a request hold a port and put its ``recv_evt()``
in the choice they block on (``select(readable_evt(sock), deadline, port.recv_evt())``,
see connection.py). So graceful shutdown is one message, not a walk over every
connection: whoever is waiting wakes up and decides for itself what the message means
(an idle connection closes; one half-way through a request head finishes it first).

Messages are plain strings so that anyone may listen (a page, a notebook, a test).
"""

from __future__ import annotations

from collections import deque

from pyweb.events import BaseEvent
from pyweb.events._core import Offer, _Sync, complete

__all__ = ["RELOAD", "SHUTDOWN", "Latch"]

SHUTDOWN = "shutdown"
"""Graceful shutdown: stop accepting; idle connections close now; requests in flight finish
with ``Connection: close``."""

RELOAD = "reload"
"""The configuration was re-read (SIGHUP): connections already open keep the settings they
started with (Marlow §6), so they ignore it; it is there for listeners that care."""


class Latch(BaseEvent[None]):
    """A flag that is set once and then stays set, as an event: ``evt()`` is enabled from
    :meth:`set` on, forever (CML's write-once ``SyncVar``, whose ``iGetEvt`` never blocks
    once the variable is full). ``Server.stopping`` is one: a handler that waits long (a
    long poll) puts ``ctx.shutdown_evt()`` in its choice and answers at once when a
    graceful shutdown begins, instead of holding the shutdown up until its own timeout.
    (A port on the broadcast would not do: it also delivers RELOAD, and a port cannot be
    filtered inside one sync.)"""

    __slots__ = ("is_set", "_waiters")

    def __init__(self) -> None:
        self.is_set = False
        self._waiters: deque[Offer] = deque()

    def set(self) -> None:
        if self.is_set:
            return
        self.is_set = True
        waiters = self._waiters
        while waiters:  # complete() withdraws each sync's other offers
            complete(waiters.popleft(), None)

    def evt(self) -> Latch:
        return self

    # the BaseEvent protocol (docs/events.md, "Writing a new base event")
    def ready(self) -> bool:
        return self.is_set

    def commit_now(self) -> None:
        return None

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        offer = Offer(sync, leaf, self._waiters)
        self._waiters.append(offer)
        sync.offers.append(offer)
