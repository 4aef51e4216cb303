"""The asyncio server's connection deadlines: one timer for them all, not one per connection.

Every connection waiting for a request has a deadline (``first_byte_timeout``,
``header_timeout``, ``keepalive_timeout``, a newcomer's grace to speak, a refused one's
linger). A uvloop timer per connection, made and cancelled, cost about 4,400
instructions more than this (docs/performance.md), a tenth of what the raw uvloop server
spends on a whole connection; a server answering one request per connection would pay it
for every request. So the deadlines
are kept here instead, in *buckets* of :data:`RESOLUTION` seconds (a timer wheel): putting
a connection in a bucket is a dictionary store, and one loop timer fires for the earliest
bucket. A deadline is met between its time and :data:`RESOLUTION` seconds later.

The buckets are lazy, like the timer they replace: a keep-alive connection moves its
deadline later for every request (a float stored on the connection) but stays in the
bucket it is in; when that bucket comes due, the connection looks at its real deadline
(``HttpProtocol.timed_out``) and, if it has moved, is put in a later bucket. Only a
deadline that comes *sooner* moves a connection at once. A connection that closes leaves
its bucket (:meth:`Deadlines.remove`), so nothing here outlives its connection; the timer
is set again only for a bucket that still holds a connection, so a server answering one
request per connection (each gone long before its deadline) wakes up about once per
timeout, not once per bucket.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from typing import Protocol


class Timed(Protocol):
    """What the deadlines need of a connection: where it is kept, and what to call."""

    bucket: int | None
    """The bucket its deadline is kept in (None: in none)."""

    def timed_out(self) -> None:
        """Its bucket came due: look at the deadline (it may have moved) and act on it."""

__all__ = ["Deadlines", "RESOLUTION", "Timed"]

RESOLUTION = 0.01
"""Seconds per bucket: how late past its deadline a connection may be closed."""


class Deadlines:
    """The deadlines of one server's connections (see the module doc)."""

    def __init__(self) -> None:
        self._buckets: dict[int, dict[Timed, None]] = {}
        self._due: list[int] = []  # the buckets' numbers, a heap: the earliest first
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf  # the bucket the timer fires for

    def arm(self, connection: Timed, deadline: float) -> None:
        """See to it that ``connection.timed_out()`` runs at ``deadline`` (loop time) or
        up to :data:`RESOLUTION` later; if it is already in a bucket that comes due no
        later, it stays there (and will look at its deadline then)."""
        number = math.ceil(deadline / RESOLUTION)
        if connection.bucket is not None:
            if connection.bucket <= number:
                return
            self.remove(connection)
        connection.bucket = number
        bucket = self._buckets.get(number)
        if bucket is None:
            bucket = self._buckets[number] = {}
            heapq.heappush(self._due, number)
            if number < self._timer_at:
                self._set_timer(number)
        bucket[connection] = None

    def remove(self, connection: Timed) -> None:
        """The connection closed: out of its bucket (the bucket's time still comes, and
        finds it gone)."""
        number = connection.bucket
        if number is not None:
            connection.bucket = None
            bucket = self._buckets.get(number)
            if bucket is not None:  # (None: its bucket is the one being fired)
                bucket.pop(connection, None)

    def close(self) -> None:
        """The server has stopped: no timer left behind on the loop."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = math.inf

    def _set_timer(self, number: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = number
        self._timer = asyncio.get_running_loop().call_at(number * RESOLUTION, self._fire)

    def _fire(self) -> None:
        """The earliest bucket is due: each connection in it (and in any other bucket due
        by now) looks at its deadline. The due buckets are taken out first, so a
        connection that puts itself in a bucket again waits for the next timer."""
        self._timer = None
        self._timer_at = math.inf
        loop = asyncio.get_running_loop()
        now = math.floor(loop.time() / RESOLUTION)
        due, buckets = self._due, self._buckets
        ready = []
        while due and due[0] <= now:
            ready.append(buckets.pop(heapq.heappop(due)))
        try:
            for bucket in ready:
                for connection in bucket:
                    connection.bucket = None
                    try:
                        connection.timed_out()
                    except Exception as exc:  # one connection's bug must not stop the rest
                        loop.call_exception_handler(
                            {"message": "a connection's deadline failed", "exception": exc}
                        )
        finally:
            while due and not buckets[due[0]]:  # emptied by connections that closed
                del buckets[heapq.heappop(due)]
            if due and due[0] < self._timer_at:  # (a connection put back may have set it)
                self._set_timer(due[0])
