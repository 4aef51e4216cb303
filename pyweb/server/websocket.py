"""WebSocket sessions (RFC 6455) on a server connection, with CML events (Reppy §2).

After the opening handshake (:mod:`pyweb.protocol.websocket`) the connection stops speaking
HTTP: the server sends ``101 Switching Protocols`` and :func:`run_session` takes the socket
over. Frames are wsproto's business (a sans-IO library: bytes in, events out, as pyweb's own
HTTP parser); this module does the I/O and gives the handler a :class:`WebSocket` whose
operations are events and calls, so a handler is written like any waiting page::

    @pyweb.websocket("/chat/ws")
    async def chat(ws):
        port = NEWS.port()
        while True:
            got = await select(
                wrap(ws.recv_evt(), lambda text: ("said", text)),
                wrap(port.recv_evt(), lambda message: ("news", message)),
                wrap(timeout(60), lambda _: ("idle", None)),
                wrap(ws.shutdown_evt(), lambda _: ("stop", None)),
            )
            ...

Three tasks share the connection, in one nursery (Marlow §3.2's "one thread per
connection" become three cooperating ones):

* the **handler** (``session(ws)``);
* the **reader**: reads the socket, feeds wsproto, puts whole messages in the inbox (a
  :class:`~pyweb.events.Mailbox`: ``ws.recv_evt()`` is its receive event), answers pings,
  and closes with 1009 when a message grows past ``max_message`` (counted after inflating,
  with permessage-deflate) or comes in more than ``max_fragments`` frames;
* the **keeper**: pings a peer that has sent nothing for ``ping_interval`` and drops it if
  the next interval brings no answer (a vanished laptop sends no FIN); on a graceful server
  shutdown it closes with 1001 (going away) once the handler has had ``close_timeout`` to
  finish by itself.

Closing: ``await ws.close(code, reason)`` sends a Close and waits (``close_timeout``) for
the peer's; when the peer closes first, its Close is answered and ``ws.recv_evt()`` raises
:class:`WebSocketClosed` (with the peer's code), so a handler blocked in a ``select`` on it
ends. A handler that returns closes with 1000, one that raises with 1011 (the error goes to
the error log). Once the connection is gone the handler gets ``close_timeout`` to end, then
it is cancelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from wsproto.connection import Connection as WSConnection
from wsproto.connection import ConnectionState, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Message, Ping, Pong, TextMessage
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from pyweb.events import Event, Latch, Mailbox, at_time, select, timeout, wrap
from pyweb.protocol.messages import Request
from pyweb.protocol.websocket import (
    WebSocketClosed,
    WebSocketOptions,
    WebSocketUpgrade,
    accept_head,
)
from pyweb.protocol.websocket_deflate import Deflate, server_deflate
from pyweb.runtime import current, now

if TYPE_CHECKING:
    from .contract import ServerConnection

__all__ = ["WebSocket", "WebSocketClosed", "run_session"]

NORMAL, GOING_AWAY, PROTOCOL_ERROR, TOO_BIG, INTERNAL_ERROR, ABNORMAL = (
    1000, 1001, 1002, 1009, 1011, 1006,
)  # fmt: skip


TIMER_SLACK = 0.002
"""Seconds a loop's timer may fire early (uvloop rounds its timers down to milliseconds)."""

_END = object()
"""The last item of a WebSocket's inbox: nothing more can arrive."""


class WebSocket:
    """The socket a ``@pyweb.websocket`` handler receives (module doc)."""

    def __init__(
        self,
        conn: ServerConnection,
        request: Request,
        options: WebSocketOptions,
        deflate: Deflate | None = None,
    ) -> None:
        self.request = request
        self.path = request.path
        self.query = request.query
        self.headers = request.headers
        """The handshake's header fields, ``(name, value)`` with lower-case names."""
        self.peer = conn.peer
        self.options = options
        self.close_code: int | None = None
        """The code the WebSocket closed with, once it has (``None`` while open)."""
        self.close_reason = ""
        self._conn = conn
        self._ws = WSConnection(ConnectionType.SERVER, extensions=[deflate] if deflate else None)
        self._inbox: Mailbox[Any] = Mailbox()  # messages, then _END
        self._closed = Latch()  # set once no more messages can arrive
        self._partial: list[Any] = []
        self._partial_size = 0
        self._fragments = 0  # frames of the message being reassembled
        rt = current()  # trio's lock and cancel scope, or asyncio's (pyweb.runtime)
        self._send_lock = rt.Lock()
        self._now = rt.now  # the loop's clock, as the keeper's timers (MockClock too)
        self._heard = self._now()
        self._handler_scope = rt.CancelScope()

    def __repr__(self) -> str:
        state = "open" if self.close_code is None else f"closed {self.close_code}"
        return f"<WebSocket {self.path} from {self.peer} {state}>"

    def header(self, name: str, default: str | None = None) -> str | None:
        """The handshake's header field ``name`` (case-insensitive)."""
        return self.request.header(name, default)

    # -- receiving: an event --------------------------------------------------------------

    def recv_evt(self) -> Event[str | bytes]:
        """An event enabled by the next message (``str`` for text, ``bytes`` for binary);
        once the WebSocket is closed and every message taken, syncing on it raises
        :class:`WebSocketClosed`."""
        return wrap(self._inbox.recv_evt(), self._message)

    def _message(self, item: Any) -> Any:
        # The end is an item of the inbox too, after the last message, so order is kept;
        # whoever takes it puts it back, so that every later receive sees the end as well.
        if item is _END:
            self._inbox.send(_END)
            raise WebSocketClosed(self.close_code or ABNORMAL, self.close_reason)
        return item

    async def recv(self) -> str | bytes:
        """The next message (``await select(ws.recv_evt())``, on the fast path)."""
        return self._message(await self._inbox.recv())

    def closed_evt(self) -> Event[None]:
        """Enabled once no message can arrive any more (the peer closed, or is gone)."""
        return self._closed.evt()

    def shutdown_evt(self) -> Event[None]:
        """Enabled once the server begins a graceful shutdown (as ``conn.shutdown_evt()``)."""
        return self._conn.server.stopping.evt()

    # -- sending: calls --------------------------------------------------------------------

    async def send(self, data: str | bytes) -> None:
        """Send one message: ``str`` as text, ``bytes`` as binary. Raises
        :class:`WebSocketClosed` once the WebSocket is closing or closed."""
        if isinstance(data, str):
            event: Any = TextMessage(data=data)
        elif isinstance(data, bytes | bytearray | memoryview):
            event = BytesMessage(data=bytes(data))
        else:
            raise TypeError(f"a WebSocket message is str or bytes, got {data!r}")
        if self._ws.state is not ConnectionState.OPEN:
            raise WebSocketClosed(self.close_code or ABNORMAL, self.close_reason)
        await self._send_frame(event)

    async def close(self, code: int = NORMAL, reason: str = "") -> None:
        """Close with ``code`` and ``reason``, and wait (``close_timeout``) for the peer's
        Close. Does nothing if the WebSocket is already closing or closed."""
        if self._ws.state is not ConnectionState.OPEN:
            return
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason
        try:
            await self._send_frame(CloseConnection(code=code, reason=reason))
        except WebSocketClosed:
            return
        await select(self._closed.evt(), timeout(self.options.close_timeout))
        self._end()

    async def _send_frame(self, event: Any) -> None:
        async with self._send_lock:  # the reader answers pings while the handler sends
            try:
                data = self._ws.send(event)
            except LocalProtocolError:
                # The peer's Close arrived (and was answered by the reader) while this task
                # waited for the lock: the WebSocket is closed, nothing more may be sent.
                raise WebSocketClosed(self.close_code or ABNORMAL, self.close_reason) from None
            try:
                if data:
                    await self._conn.send_all(data)
            except OSError as exc:
                self._lost()
                raise WebSocketClosed(ABNORMAL, str(exc)) from None

    async def serve(self, upgrade: WebSocketUpgrade, request: Request) -> None:
        """Run the handler (``upgrade.session(self)``) to its end, then close: 1000 when
        it returned, 1011 when it raised (logged). The reader, the keeper and the watch
        that cancels a handler nobody listens to run beside it (:func:`run_session`)."""
        session = upgrade.session
        assert session is not None
        code, reason = NORMAL, ""
        with self._handler_scope:
            try:
                await session(self)
            except WebSocketClosed:
                pass
            except Exception as exc:
                self._conn.log.error(
                    f"WebSocket handler error for {self.peer}",
                    request_line=f"GET {request.target} HTTP/1.1",
                    exc=exc,
                )
                code, reason = INTERNAL_ERROR, "internal error"
        await self.close(code, reason)

    # -- the reader and the keeper ---------------------------------------------------------

    def _end(self) -> None:
        """No message can arrive any more: the inbox ends, ``closed_evt()`` is enabled."""
        if not self._closed.is_set:
            self._closed.set()
            self._inbox.send(_END)

    def _lost(self) -> None:
        """The connection is gone: nothing more in, nothing more out."""
        if self.close_code is None:
            self.close_code = ABNORMAL
        self._end()

    async def _read_loop(self, first: bytes) -> None:
        data = first
        while True:
            if data:
                self._heard = self._now()
                self._ws.receive_data(data)
                if not await self._handle_events():
                    return
            try:
                data = await self._conn.receive_frames()
            except OSError:
                self._lost()
                return
            if not data:  # EOF without a Close frame
                self._ws.receive_data(None)
                self._lost()
                return

    async def _handle_events(self) -> bool:
        """Act on what wsproto parsed; False when no more can come (closed)."""
        try:
            events = list(self._ws.events())
        except RemoteProtocolError as exc:  # a broken frame: say why (1002/1007) and stop
            hint = exc.event_hint
            code = hint.code if isinstance(hint, CloseConnection) else PROTOCOL_ERROR
            await self._fail(code, str(exc))
            return False
        for event in events:
            if isinstance(event, Message):
                too_big = self._add_to_message(event)
                if too_big:
                    await self._fail(TOO_BIG, too_big)
                    return False
            elif isinstance(event, Ping):
                await self._quietly(event.response())
            elif isinstance(event, Pong):
                pass  # _heard was updated when the bytes arrived
            elif isinstance(event, CloseConnection):
                reason = event.reason or ""
                if event.code == TOO_BIG and self._ws.state is ConnectionState.OPEN:
                    # not the peer's Close but wsproto's, for the inflater's limit
                    reason = f"message larger than {self.options.max_message} bytes"
                if self.close_code is None:
                    self.close_code, self.close_reason = event.code, reason
                if self._ws.state is ConnectionState.REMOTE_CLOSING:
                    await self._quietly(event.response())  # the answering Close
                elif self._ws.state is ConnectionState.OPEN:
                    # wsproto reports a broken frame (unmasked, bad UTF-8...) as a Close
                    # with its code (1002, 1007): send it, the peer must hear why
                    await self._quietly(CloseConnection(code=event.code, reason=reason[:120]))
                self._end()
                return False
        return True

    def _add_to_message(self, event: Message[Any]) -> str:
        """Add a piece of a message; a whole one goes to the inbox. Returns why the message
        is refused (over ``max_message`` or ``max_fragments``), or ""."""
        self._partial.append(event.data)
        self._partial_size += len(event.data)
        self._fragments += event.frame_finished
        if self._partial_size > self.options.max_message:
            return f"message larger than {self.options.max_message} bytes"
        if self._fragments > self.options.max_fragments:
            return f"message in more than {self.options.max_fragments} fragments"
        if event.message_finished:
            joined: str | bytes = (
                "".join(self._partial)
                if isinstance(event, TextMessage)
                else b"".join(self._partial)
            )
            self._partial, self._partial_size, self._fragments = [], 0, 0
            self._inbox.send(joined)
        return ""

    async def _quietly(self, event: Any) -> None:
        try:
            await self._send_frame(event)
        except WebSocketClosed:
            pass

    async def _fail(self, code: int, reason: str) -> None:
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason
        if self._ws.state is ConnectionState.OPEN:
            await self._quietly(CloseConnection(code=code, reason=reason[:120]))
        self._end()

    async def _keep(self) -> None:
        """Ping a peer quiet for an interval, drop one that has not answered the ping
        within the next, and close on a server shutdown."""
        interval = self.options.ping_interval
        pinged: float | None = None  # when a ping went out that the peer has not answered
        while True:
            if pinged is not None and self._heard >= pinged:
                pinged = None  # a byte since the ping (its pong, or anything): alive
            # Wake when the next step is due, reckoned from the peer's last byte or from our
            # ping, not on a fixed beat: a beat fixed at the connection's start could come
            # just short of a ping, and the next beat drop a peer that had answered the
            # last ping promptly and was never asked again (seen on a loaded machine).
            # (- TIMER_SLACK: uvloop counts timers in whole milliseconds and may wake early)
            due = (self._heard if pinged is None else pinged) + interval - TIMER_SLACK
            what = await select(
                wrap(at_time(due), lambda _: "due"),
                wrap(self.shutdown_evt(), lambda _: "shutdown"),
                wrap(self._closed.evt(), lambda _: "closed"),
            )
            if what == "closed":
                return
            if what == "shutdown":
                # The handler may say goodbye itself (it sees ws.shutdown_evt()); if it has
                # not within close_timeout, the server does.
                await select(self._closed.evt(), timeout(self.options.close_timeout))
                await self.close(GOING_AWAY, "server shutting down")
                return
            if pinged is not None and self._heard < pinged:
                self._lost()  # pinged an interval ago, and not a byte since: gone
                return
            if pinged is None and now() - self._heard + TIMER_SLACK >= interval:
                pinged = now()
                await self._quietly(Ping(payload=b"pyweb"))


async def run_session(conn: ServerConnection, request: Request, upgrade: WebSocketUpgrade) -> None:
    """Complete the handshake on ``conn`` and run ``upgrade.session(ws)`` to the end, with
    the reader, the keeper and the watch beside it (one task group, on either loop)."""
    headers = list(upgrade.headers)
    deflate = server_deflate(request.header("sec-websocket-extensions"), upgrade.options)
    if deflate is not None:
        headers.append(("Sec-WebSocket-Extensions", deflate.params.header()))
    await conn.send_all(accept_head(upgrade.accept, headers))
    ws = WebSocket(conn, request, upgrade.options, deflate)
    # Frames a client sent right behind its handshake are already in the HTTP parser.
    first = conn.parser.take_leftover()
    async with anyio.create_task_group() as helpers:
        helpers.start_soon(ws._read_loop, first)
        helpers.start_soon(ws._keep)
        helpers.start_soon(end_handler_when_closed, ws)
        await ws.serve(upgrade, request)
        helpers.cancel_scope.cancel()


async def end_handler_when_closed(ws: WebSocket) -> None:
    """Once nothing can arrive any more, the handler gets ``close_timeout`` to notice (its
    ``recv_evt()`` raises), then it is cancelled: nobody is listening."""
    await select(ws.closed_evt())
    await select(timeout(ws.options.close_timeout))
    ws._handler_scope.cancel()
