"""WebSockets under an ASGI server: a ``@pyweb.websocket`` handler on an ASGI ``websocket``
scope (RFC 6455 through the ASGI server; Hop §2's server push, pluggable server).

Under pyweb's own server a WebSocket handler gets :class:`pyweb.server.websocket.WebSocket`,
which reads frames from the socket itself. Under an ASGI server the frames, the pings and
the closing handshake are the ASGI server's business, and messages arrive as
``websocket.receive`` events. :class:`AsgiWebSocket` gives the handler the same object
(``recv_evt()``, ``recv()``, ``send()``, ``close()``, ``closed_evt()``, ``shutdown_evt()``,
``header()``), so a handler runs unchanged under either server:

* the handshake is checked by the site exactly as under pyweb's server (the route's
  origins, 426 for a plain GET, 404 for an unknown URL); a refusal is answered as an HTTP
  response when the ASGI server offers the ``websocket.http.response`` extension, and by
  ``websocket.close`` (the ASGI server then answers 403) otherwise;
* a reader task turns ``websocket.receive`` into messages of the inbox and
  ``websocket.disconnect`` into the end of the inbox, with the route's ``max_message``
  (1009 beyond it);
* ``send``/``close`` become ``websocket.send``/``websocket.close``.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import anyio

from pyweb.events import select, timeout
from pyweb.protocol.messages import Request
from pyweb.protocol.response import Response
from pyweb.protocol.websocket import WebSocketUpgrade
from pyweb.server.websocket import (
    ABNORMAL,
    NORMAL,
    TOO_BIG,
    WebSocket,
    WebSocketClosed,
    end_handler_when_closed,
)

__all__ = ["AsgiWebSocket", "refuse", "serve_websocket"]

log = logging.getLogger("pyweb.asgi")


class AsgiWebSocket(WebSocket):
    """The WebSocket a handler receives under an ASGI server (module doc)."""

    def __init__(self, conn: Any, request: Request, upgrade: WebSocketUpgrade, send: Any) -> None:
        super().__init__(conn, request, upgrade.options)
        self._asgi_send = send
        self._closing = False

    async def send(self, data: str | bytes) -> None:
        if isinstance(data, str):
            message: dict[str, Any] = {"type": "websocket.send", "text": data}
        elif isinstance(data, bytes | bytearray | memoryview):
            message = {"type": "websocket.send", "bytes": bytes(data)}
        else:
            raise TypeError(f"a WebSocket message is str or bytes, got {data!r}")
        if self._closing or self._closed.is_set:
            raise WebSocketClosed(self.close_code or ABNORMAL, self.close_reason)
        await self._send_asgi(message)

    async def close(self, code: int = NORMAL, reason: str = "") -> None:
        if self._closing or self._closed.is_set:
            return
        self._closing = True
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason
        try:
            await self._send_asgi({"type": "websocket.close", "code": code, "reason": reason})
        except WebSocketClosed:
            return
        await select(self._closed.evt(), timeout(self.options.close_timeout))
        self._end()

    async def _send_asgi(self, message: dict[str, Any]) -> None:
        try:
            await self._asgi_send(message)
        except OSError as exc:  # the ASGI server says the client is gone
            self._lost()
            raise WebSocketClosed(ABNORMAL, str(exc)) from None

    async def read_messages(self, receive: Any) -> None:
        """The reader: ASGI's events into the inbox, until the client disconnects."""
        limit = self.options.max_message
        while True:
            event = await receive()
            kind = event["type"]
            if kind == "websocket.disconnect":
                if self.close_code is None:
                    self.close_code = int(event.get("code", ABNORMAL))
                    self.close_reason = str(event.get("reason") or "")
                self._end()
                return
            if kind != "websocket.receive":
                continue
            data = event.get("text")
            if data is None:
                data = event.get("bytes") or b""
            if len(data) > limit:
                await self._refuse_message(limit)
                continue  # until the client's disconnect ends the inbox
            self._inbox.send(data)

    async def _refuse_message(self, limit: int) -> None:
        """A message over ``max_message``: close with 1009 (the reader goes on reading, so
        that the client's disconnect still ends the inbox)."""
        if self._closing or self._closed.is_set:
            return
        self._closing = True
        self.close_code, self.close_reason = TOO_BIG, f"a message is limited to {limit} bytes"
        try:
            await self._send_asgi(
                {"type": "websocket.close", "code": TOO_BIG, "reason": self.close_reason}
            )
        except WebSocketClosed:
            pass


class _ErrorLog:
    """What a WebSocket handler's errors go to: Python logging (the ASGI server's)."""

    def error(self, message: str, request_line: str = "", exc: BaseException | None = None) -> None:
        log.error("%s (%s)", message, request_line, exc_info=exc)


async def serve_websocket(
    ctx: Any, stopping: Any, response: Response, receive: Any, send: Any
) -> bool:
    """Run the session on an ASGI ``websocket`` scope when the site accepted the handshake
    (its answer is a :class:`WebSocketUpgrade`); False when it refused it (the caller sends
    :func:`refuse`)."""
    if type(response) is not WebSocketUpgrade:
        return False
    upgrade: WebSocketUpgrade = response
    first = await receive()
    if first["type"] != "websocket.connect":  # the client left before the handshake ended
        return True
    headers, subprotocol = [], None
    for name, value in upgrade.headers:
        if name.lower() == "sec-websocket-protocol":
            subprotocol = value
        else:
            headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))
    accept: dict[str, Any] = {"type": "websocket.accept", "headers": headers}
    if subprotocol is not None:
        accept["subprotocol"] = subprotocol
    await send(accept)
    conn = SimpleNamespace(
        peer=ctx.peer, log=_ErrorLog(), server=SimpleNamespace(stopping=stopping)
    )
    request = ctx.request
    ws = AsgiWebSocket(conn, request, upgrade, send)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(ws.read_messages, receive)
        tasks.start_soon(end_handler_when_closed, ws)
        await ws.serve(upgrade, request)
        tasks.cancel_scope.cancel()
    return True


async def refuse(send: Any, response: Response, extensions: dict[str, Any]) -> None:
    """A handshake the site refused: its status and page when the ASGI server can send an
    HTTP response on a WebSocket scope, a close before accepting (a 403) otherwise."""
    if "websocket.http.response" not in extensions:
        await send({"type": "websocket.close", "code": 1008})
        return
    body = response.body if isinstance(response.body, bytes) else b""
    await send(
        {
            "type": "websocket.http.response.start",
            "status": response.status,
            "headers": [
                (n.lower().encode("latin-1"), v.encode("latin-1")) for n, v in response.headers
            ],
        }
    )
    await send({"type": "websocket.http.response.body", "body": body})
