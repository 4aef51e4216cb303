"""What Hop's schedulers (Hop §2.4) decide the same way on both loops: when accepting pauses,
how many connections are accepted in a row, and the door of the pool and nothread
schedulers (when a newcomer waiting in the listen backlog is let in by closing a waiting
connection, or answered with the fast 503).

The schedulers (``scheduling.py``) run these decisions through the runtime seam, and the
loops' drivers (``schedulers.py`` on trio, ``asyncio/schedulers.py`` on asyncio) do the
refusing: this module holds no I/O but a zero-timeout poll of the listener.
"""

from __future__ import annotations

import errno
import select
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .slots import Slots

__all__ = [
    "ACCEPT_PAUSE",
    "ACCEPTS_IN_A_ROW",
    "DOOR_PATIENCE",
    "DOOR_PERIOD",
    "OUT_OF_RESOURCES",
    "Door",
    "backlog",
    "pauses_accepting",
]

ACCEPTS_IN_A_ROW = 1024
"""Connections accepted before the accept loop lets other tasks run (accept only waits,
and so yields, when none is queued)."""

OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""accept() errors that pause accepting; any other (a connection reset or refused before it
was accepted: ECONNABORTED, EPERM, EPROTO...) ends only that connection."""

ACCEPT_PAUSE = 0.1
"""Seconds a scheduler stops accepting after accept() ran out of resources (EMFILE: out of
file descriptors), so that connections can finish and free some (both loops)."""


def pauses_accepting(exc: BaseException) -> bool:
    """Whether an accept() failure pauses accepting (out of descriptors or memory), rather
    than ending only the connection that failed (:data:`OUT_OF_RESOURCES`)."""
    return not isinstance(exc, OSError) or exc.errno in OUT_OF_RESOURCES


DOOR_PERIOD = 0.05
"""Seconds between the door's looks at the backlog while every task is busy."""
DOOR_PATIENCE = 1.0
"""Seconds a newcomer may wait in the backlog for one of the pool's tasks, with nothing to
evict, before the door answers it with the fast 503."""


class Door:
    """The door's decision, the same on both loops: each look tells whether to answer the
    newcomers in the backlog with the fast 503 now. The loop's own code sleeps between
    looks and does the refusing."""

    def __init__(self, patience: float | None) -> None:
        self.patience = patience
        self.stuck_since: float | None = None
        """When a newcomer was first seen waiting with nothing to evict for it."""

    def turn_away(self, stuck: bool, slots: Slots, now: float) -> bool:
        """``stuck``: every task is busy (none waits at ``accept``) and a newcomer waits
        in the backlog. Close the connection waiting longest for it, if there is one (its
        task accepts the newcomer next); true once nothing could be closed for
        ``patience`` seconds (never, with ``None``)."""
        if not stuck or slots.evict_waiting():
            self.stuck_since = None  # a task is free, nobody waits, or one makes room
            return False
        if self.stuck_since is None:
            self.stuck_since = now
            return False
        return self.patience is not None and now - self.stuck_since >= self.patience


def backlog(listener: socket.socket) -> bool:
    """Does a connection wait in the listen backlog? (No wait: a zero-timeout poll.)"""
    try:
        return bool(select.select([listener], [], [], 0)[0])
    except (OSError, ValueError):  # closed under us: the server is stopping
        return False
