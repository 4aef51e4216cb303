"""The server's control broadcast: shutdown and reload as messages (CML §3.1, Marlow §6).

Reppy's buffered multicast channel (CML §3.1) gives every reader its own port that sees
every message sent after the port was made, in order. The server owns one
:class:`~pyweb.events.Multicast` (``Server.broadcast``): ``serve()`` holds a port and
waits on it, and so may anyone who cares (a page, a notebook, a test). So graceful shutdown
is one message, and whoever listens wakes up and decides for itself what it means. The two
waits on the hot path do not listen, since a port in their choice tripled what a wait
cost (docs/performance.md): shutdown closes the listener, which ends the accept loops'
waits, and shortens the deadline of each connection that waits idle for its next request
(``Connection.close_when_idle``); a connection half-way through a request head finishes it.

Messages are plain strings so that anyone may listen (a page, a notebook, a test).
``Server.stopping`` is a :class:`pyweb.events.Latch` beside the broadcast: a port would not
do for ``ctx.shutdown_evt()``, since it also delivers RELOAD and a port cannot be filtered
inside one sync.
"""

from __future__ import annotations

from pyweb.events import Latch

__all__ = ["RELOAD", "SHUTDOWN", "Latch"]

SHUTDOWN = "shutdown"
"""Graceful shutdown: stop accepting; idle connections close now; requests in flight finish
with ``Connection: close``."""

RELOAD = "reload"
"""The configuration was re-read (SIGHUP): connections already open keep the settings they
started with (Marlow §6), so they ignore it; it is there for listeners that care."""
