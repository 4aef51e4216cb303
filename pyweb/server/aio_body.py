"""The request body on the asyncio server: ``body.py``'s :class:`RequestBody`, fed by callbacks.

Everything about a body is decided in ``body.py``, for both servers: reading on demand,
``100 Continue`` when the handler first asks, the whole-body deadline (``body_timeout``
plus a second per ``body_min_rate`` bytes), the process's ``max_body_memory`` budget (503),
and what happens to a body the handler left unread (:meth:`~RequestBody.settle`,
:meth:`~RequestBody.drain`). Only the wait for more bytes differs: on trio the body reads
the socket itself; here the loop has already fed every byte that arrived to the parser
(``data_received``), so :meth:`AioBody._receive` just waits for the next feed, under the
same deadlines, counted as a stalled body in the connection slots (a full server may close
it for a newcomer: then a 408, as on trio).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pyweb.protocol.errors import ProtocolError
from pyweb.runtime import now

from .body import RequestBody

if TYPE_CHECKING:
    from .aio import HttpProtocol

__all__ = ["AioBody", "Evicted"]


class Evicted(Exception):
    """The connection was closed for a newcomer while its body was stalled (slots.py)."""


class AioBody(RequestBody):
    """A request body on an asyncio connection (see the module doc)."""

    __slots__ = ()

    connection: HttpProtocol  # type: ignore[assignment]

    async def _turn(self) -> None:
        """Let the other connections run before the next piece: the rest of the loop's
        turn, then this task again (a 256 KiB read holds sixteen pieces)."""
        await asyncio.sleep(0)

    async def _receive(self) -> None:
        """Wait until more of the body has been fed to the parser: each wait at most
        ``body_timeout``, never past the whole body's deadline (then a 408)."""
        connection = self.connection
        body_timeout = connection.config.body_timeout
        while True:
            left = self.deadline() - now()
            if left <= 0:
                raise ProtocolError(
                    f"the request body was too slow: body_timeout ({body_timeout:g} s) "
                    "plus a second per body_min_rate bytes has passed",
                    status=408,
                )
            if await self._wait(min(body_timeout, left)):
                return
            if left > body_timeout:
                raise ProtocolError(
                    f"the request body stopped arriving for {body_timeout:g} s", status=408
                )

    async def _wait(self, wait: float) -> bool:
        """One wait for bytes: True when some arrived, False when ``wait`` passed."""
        connection = self.connection
        slots: Any = connection.server.slots
        slots.waiting(connection, stalled_body=True)
        try:
            return await connection.wait_for_bytes(wait)
        except Evicted:
            raise ProtocolError(
                "the request body was too slow while the server was full", status=408
            ) from None
        finally:
            slots.working(connection)
