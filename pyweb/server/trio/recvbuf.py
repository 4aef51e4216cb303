"""Receiving request bytes without allocating a buffer per read (Hop §3.1).

``sock.recv(65536)`` allocates a 64 KiB ``bytes`` object on every call, including the calls
that find nothing and raise ``BlockingIOError``, and shrinks it afterwards: measured with
``--profile-alloc``, about 131 KB of the 146 KB a keep-alive ``GET /hello`` allocated on
the server thread. Hop's fix was one input buffer per thread instead of one per socket;
pyweb's is the same, with the buffer a region page (:class:`pyweb_regions.Arena`, SMLserver
§5.1) from the process-wide free list: ``Arena.recv`` reads straight into it (one C call:
no ``bytes``, no memoryview), the parser copies what arrived into its own buffer through the
buffer protocol, and the arena is reset (O(1), the page back on the free list) right after.
One page per *thread* is enough because a read and its ``feed`` run without yielding to
another task. Request bodies are read the same way (``RequestBody`` in ``body.py``).

The first version used the general ``sock.recv_into(arena.tail())`` + ``commit`` + a view
slice: correct, but its four calls and two memoryviews made a read 0.3 µs slower than
``sock.recv`` (and a read that finds nothing 0.4 µs slower). With a reply path that then had
a coroutine more, the whole server served 8 % fewer ``hello`` requests per second than
without arenas (``benchmarks/peers.py --servers pyweb,pyweb-noarena``): allocation that is
freed at once is cheap in CPython, and saving it must not add interpreter work.

Replies go the other way through a second arena, one per connection (``replies.py``): a
reply may have to wait for a slow client, so its pages cannot be shared by the thread; they
are held only until the reply is sent.

With the pure-Python fallback of :mod:`pyweb_regions` reads use ``os.read``: the
fallback's pages cannot be fed to the parser through the buffer protocol on Python 3.11
(a Python class cannot export a buffer before 3.12). ``receive`` is chosen once, here: the
server has one read call whichever it is. ``benchmarks/bench_regions.py`` measures both.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

import pyweb_regions

__all__ = ["receive", "ARENA", "RECV_SIZE"]

RECV_SIZE = 65536
"""Most bytes one plain ``recv`` asks for."""

ARENA = pyweb_regions.IMPLEMENTATION == "c"
"""Whether reads go through a region page (see the module doc)."""

_local = threading.local()
# Bound now, while ``ARENA`` says it is the C class: reading relies on its buffer protocol
# (the fallback's pages cannot be read through ``bytearray +=`` on Python 3.11), and a test
# that swaps pyweb_regions' names for the fallback's must not change the server's read path.
_Arena = pyweb_regions.Arena


class _Parser(Protocol):
    def feed(self, data: bytes) -> None: ...


def _receive_arena(fd: int, parser: _Parser) -> None:
    try:
        arena = _local.arena
    except AttributeError:
        arena = _local.arena = _Arena(max_pages=1)
    # The descriptor, not the socket object: the connection keeps it, and a socket would
    # cost a fileno() call per read (60 ns).
    arena.recv(fd)  # BlockingIOError: the arena is left as it was, empty
    try:
        # The parser copies the page's bytes through the buffer protocol (no memoryview
        # object); an empty arena has length 0, which tells it the client closed.
        parser.feed(arena)
    finally:
        arena.reset()  # the page goes back to the free list


def _receive_plain(fd: int, parser: _Parser) -> None:
    parser.feed(os.read(fd, RECV_SIZE))  # a 64 KiB bytes per call, as sock.recv makes


receive = _receive_arena if ARENA else _receive_plain
"""``receive(fd, parser)``: one read from the non-blocking socket ``fd`` fed to ``parser``;
raises ``BlockingIOError`` when nothing is there."""
