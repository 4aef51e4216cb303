"""The process-wide budget of request bodies held in memory (``max_body_memory``).

``ctx.body()`` holds a whole body in memory (a form's fields are parsed from it). One body
is bounded by ``max_body``, but nothing bounded them together: 60 concurrent 16 MB posts
took a server from 51 MB to 1.33 GB, and the default limits allowed tens of GB. The budget
is what every body being held counts against: a body whose bytes do not fit is refused
with ``503 Service Unavailable`` (a client can retry; the server stays up), before any of
it is read when its ``Content-Length`` says it cannot fit now, else as soon as it goes
over. Bytes count as they arrive, not as declared: a body trickled in holds nothing. The bytes are
given back when the request's reply has been sent. Streamed bodies (``ctx.stream()``) hold
one piece at a time and are not counted.
"""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["BodyBudget", "BUDGET", "give_big_buffers_back"]

_M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_THRESHOLD = 256 * 1024


class BodyBudget:
    """Bytes of request bodies held at once, process-wide, at most :attr:`limit`."""

    __slots__ = ("limit", "held", "refused", "peak")

    def __init__(self, limit: int = 256 * 1024 * 1024) -> None:
        self.limit = limit
        self.held = 0
        self.refused = 0
        self.peak = 0

    def fits(self, n: int) -> bool:
        """Would ``n`` more bytes fit now? (Nothing taken; a refusal is counted.)"""
        if self.held + n > self.limit:
            self.refused += 1
            return False
        return True

    def reserve(self, n: int) -> bool:
        """Take ``n`` bytes of the budget; False (nothing taken) if they do not fit."""
        if self.held + n > self.limit:
            self.refused += 1
            return False
        self.held += n
        if self.held > self.peak:
            self.peak = self.held
        return True

    def release(self, n: int) -> None:
        self.held -= n


BUDGET = BodyBudget()
"""The one budget of this process (every server in it: workers are processes of their
own). :class:`~pyweb.server.Server` sets its limit from ``max_body_memory``."""


_given_back = False


def give_big_buffers_back() -> bool:
    """Make glibc's malloc hand every buffer of :data:`MMAP_THRESHOLD` bytes or more straight
    back to the system when it is freed (``mallopt(M_MMAP_THRESHOLD)``). By default glibc
    raises that threshold each time a big buffer is freed, and the next bodies then come
    from the heap, which never shrinks: measured with 40 clients posting 16 MB uploads and a
    256 MiB budget, the server's RSS went to 422 MB instead of 309 MB. Without glibc (or
    when it fails) nothing changes; returns whether it was done. Once per process."""
    global _given_back
    if _given_back:
        return True
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    _given_back = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    return _given_back
