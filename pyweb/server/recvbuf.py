"""Receiving request bytes without allocating a buffer per read (Hop §3.1).

``sock.recv(65536)`` allocates a 64 KiB ``bytes`` object on every call, including the calls
that find nothing and raise ``BlockingIOError``, and shrinks it afterwards: measured with
``--profile-alloc``, about 131 KB of the 146 KB a keep-alive ``GET /hello`` allocated on
the server thread. Hop's fix was one input buffer per thread instead of one per socket;
pyweb's is the same, with the buffer a region page (:class:`pyweb_regions.Arena`, SMLserver
§5.1) from the process-wide free list: ``recv_into`` writes straight into it, the parser
copies what arrived into its own buffer, and the arena is reset (O(1), the page back on
the free list) right after. One page per *thread* is enough because a read and its
``feed`` run without yielding to another task; the view into the page is released before
``reset``, which would otherwise refuse (BufferError). Request bodies are read the same way
(``Connection.receive_body``).

Replies go the other way through a second arena, one per connection
(``Connection.send_arena``): a reply may have to wait for a slow client, so its pages
cannot be shared by the thread; they are held only until the reply is sent.

The arena path is used with the C implementation of :mod:`pyweb_regions`; with the
pure-Python fallback, or with ``PYWEB_ARENA=0`` in the environment (to measure the
difference: benchmarks/bench_regions.py and ``peers.py --servers pyweb,pyweb-noarena``),
reads use ``recv`` and replies are joined into one ``bytes``, as before.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Protocol

import pyweb_regions

__all__ = ["receive", "ARENA", "RECV_SIZE"]

RECV_SIZE = 65536
"""Most bytes one plain ``recv`` asks for."""

ARENA = pyweb_regions.IMPLEMENTATION == "c" and os.environ.get("PYWEB_ARENA", "1") != "0"
"""Whether reads go through a region page (see the module doc)."""

_local = threading.local()


class _Parser(Protocol):
    def feed(self, data: bytes) -> None: ...


def _receive_arena(sock: socket.socket, parser: _Parser) -> None:
    arena = getattr(_local, "arena", None)
    if arena is None:
        arena = _local.arena = pyweb_regions.Arena(max_pages=1)
    try:
        with arena.tail() as view:
            n = sock.recv_into(view)  # BlockingIOError: nothing committed, view released
            arena.commit(n)
            parser.feed(view[:n])  # b"" (n == 0) tells the parser the client closed
    finally:
        arena.reset()  # the page goes back to the free list, read or not


def _receive_plain(sock: socket.socket, parser: _Parser) -> None:
    parser.feed(sock.recv(RECV_SIZE))


receive = _receive_arena if ARENA else _receive_plain
"""``receive(sock, parser)``: one read from the non-blocking ``sock`` fed to ``parser``;
raises ``BlockingIOError`` when nothing is there."""
