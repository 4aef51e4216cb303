"""Connection slots on the asyncio server: ``slots.py``'s policy, through Protocol callbacks.

The asyncio server keeps the trio server's :class:`~pyweb.server.slots.Slots` (idle
connections closed first for a newcomer, ``first_byte_timeout``, the ``max_streams``
budget, ``max_connections_per_client``, the fast 503). What differs is only how a
connection meets it, since the loop accepts on its own and hands each connection to a
protocol (``connection_made``):

* a newcomer that finds every slot taken waits for its request without a slot, as on
  trio (up to ``first_byte_timeout``, counted in ``Slots.waiting_to_speak``): its first
  bytes (``data_received``) or the end of the wait decide, and one whose request is here
  may take the slot of a connection that sent nothing;
* one still without a slot is refused here: :func:`refuse` writes the whole
  :data:`~pyweb.server.slots.BUSY_503` at once, half-closes, and drops what the client
  sends for :data:`~pyweb.server.slots.LINGER` seconds before closing (closing on unread
  bytes would reset the connection and could destroy the 503 before it is read);
* the policy asks whether a silent connection really has nothing waiting
  (``has_bytes(connection.sock)``); a transport's socket cannot ``recv``, so
  :class:`PeekSocket` peeks at the descriptor without owning it.
"""

from __future__ import annotations

import socket
from typing import Any

from ..slots import BUSY_503, Slots

__all__ = ["PeekSocket", "refuse"]


class PeekSocket:
    """``recv(n, MSG_PEEK | MSG_DONTWAIT)`` on a transport's descriptor (for ``has_bytes``)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def recv(self, n: int, flags: int = 0) -> bytes:
        sock = socket.socket(fileno=self.fd)  # borrowed: detached again below, never closed
        try:
            return sock.recv(n, flags | socket.MSG_DONTWAIT)
        finally:
            sock.detach()


def refuse(slots: Slots, transport: Any) -> bool:
    """Answer a connection that gets no slot with the fast 503. True if it now lingers
    (the caller drops its bytes and closes it after :data:`LINGER`), False if it was
    closed at once (too many lingering already)."""
    transport.write(BUSY_503)
    if not slots.refusing(transport.can_write_eof()):
        transport.close()
        return False
    transport.write_eof()
    return True
