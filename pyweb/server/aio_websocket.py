"""WebSocket sessions on the asyncio server: ``websocket.py``'s session, fed by callbacks.

Everything about a WebSocket is ``websocket.py``'s: the handshake's ``101``, wsproto's
frames, the inbox whose ``recv_evt()`` a handler selects on, pings and the silent-peer
check, closing (1000, 1011, 1001 on shutdown), the cancel of a handler nobody listens to.
Only two things differ on asyncio:

* **reading**: the loop hands the connection's bytes to the protocol
  (``data_received``), which keeps them for the session (``HttpProtocol.ws_receive``), so
  :meth:`AioWebSocket._receive` waits for them instead of reading the socket;
* **the tasks**: the reader, the keeper and the watch run as asyncio tasks beside the
  handler (trio runs them in a nursery), cancelled when the handler's session ends.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pyweb.protocol.messages import Request
from pyweb.protocol.websocket import WebSocketUpgrade

from .websocket import WebSocket, end_handler_when_closed, open_session

if TYPE_CHECKING:
    from .aio import HttpProtocol

__all__ = ["AioWebSocket", "run_aio_session"]


class AioWebSocket(WebSocket):
    """A WebSocket whose bytes come from the asyncio protocol."""

    async def _receive(self) -> bytes:
        return await self._conn.ws_receive()  # type: ignore[no-any-return]


async def run_aio_session(
    conn: HttpProtocol, request: Request, upgrade: WebSocketUpgrade, first: bytes
) -> None:
    """Complete the handshake and run ``upgrade.session(ws)`` to the end; ``first``: the
    frames that came right behind the handshake (already in the HTTP parser)."""
    ws = await open_session(AioWebSocket, conn, request, upgrade)
    loop = asyncio.get_running_loop()
    helpers = [
        loop.create_task(ws._read_loop(first)),
        loop.create_task(ws._keep()),
        loop.create_task(end_handler_when_closed(ws)),
    ]
    try:
        await ws.serve(upgrade, request)
    finally:
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
