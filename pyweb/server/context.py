"""RequestContext: what a handler receives, one per request.

It is the request of Hop's "Request" stage (§2.4.1) plus what the server knows about it:
who sent it (``peer``), when (``received_at``), whether errors may be shown in detail
(``dev``), and a way to read the body *on demand*. Reading on demand is what makes
``Expect: 100-continue`` honest (RFC 9110 §10.1.1): the server tells the client to send its
body (``100 Continue``) only when the handler actually asks for it, so a handler that
rejects an upload from its headers alone never makes the client send it.
"""

from __future__ import annotations

import io
import math
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import trio

from pyweb.events import Event
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.events import NEED_DATA, Data, EndOfMessage, Request

from .budget import BUDGET

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["RequestContext"]


class RequestContext:
    """One request as a handler sees it: ``await handler(ctx) -> Response``."""

    __slots__ = (
        "request",
        "peer",
        "dev",
        "received_at",
        "_conn",
        "body_done",
        "_continue_sent",
        "alloc",
        "scheme",
        "_body_started",
        "_received",
        "drain_until",
    )

    def __init__(
        self, conn: Connection, request: Request, peer: str, dev: bool, received_at: float
    ):
        self.request = request
        self.peer = peer
        """The client's address, ``"host:port"`` (behind a trusted proxy, the client it
        names in ``X-Forwarded-For``, with port 0: :mod:`pyweb.server.proxy`)."""
        self._body_started = -1.0  # trio time of the first wait for body bytes
        self._received = 0
        self.drain_until = math.inf
        """After the reply, an unread body is drained until then at the latest."""
        self.scheme = "http"
        """``"http"``, or what a trusted proxy's ``X-Forwarded-Proto`` says."""
        self.dev = dev
        """Development mode: error pages may show tracebacks."""
        self.received_at = received_at
        """``time.time()`` when the request head had arrived."""
        self._conn = conn
        self.body_done = False
        """True once the body has been read to its end (by the handler or the server)."""
        self._continue_sent = False
        self.alloc: tuple[int, int] | None = None
        """Bytes and calls this request's page allocated, set by :mod:`pyweb.regions` with
        ``--profile-alloc`` (C only); ``None`` when nothing was counted. The access log's
        ``alloc`` format shows it."""

    async def body(self, copies: int = 1) -> bytes:
        """The whole request body (de-chunked). Sends ``100 Continue`` first when the client
        waits for it. Raises :class:`~pyweb.protocol.BodyTooLarge` past ``Limits.max_body``;
        a body that stops arriving for ``body_timeout`` seconds, or takes longer than its
        deadline in all, ends the connection (408); a body that does not fit the process's
        ``max_body_memory`` is refused (503). ``copies``: how many times the caller will
        hold the bytes (a multipart form is parsed into a copy of its files: 2)."""
        declared = self.request.content_length
        if declared is not None:
            self._reserve(declared * copies)  # refused before a byte of it is read
        out = io.BytesIO()  # its getvalue() hands over the buffer: the bytes are held once
        async for piece in self.stream():
            if declared is None:
                self._reserve(len(piece) * copies)
            out.write(piece)
        return out.getvalue()

    def _reserve(self, n: int) -> None:
        if not BUDGET.reserve(n):
            raise ProtocolError(
                f"the server holds as many request bodies as max_body_memory allows "
                f"({BUDGET.limit} bytes); try again soon",
                status=503,
            )
        self._conn.reserved += n  # given back when the reply is out (Connection)

    def _body_deadline(self) -> float:
        """When the whole body must have arrived: ``body_timeout`` after the first wait,
        plus a second per ``body_min_rate`` bytes received (a slow but steady upload goes
        on; a trickle does not), and never after :attr:`drain_until`."""
        config = self._conn.server.config
        if self._body_started < 0:
            self._body_started = trio.current_time()
        deadline = (
            self._body_started + config.body_timeout + self._received / config.body_min_rate
        )
        return min(deadline, self.drain_until)

    async def stream(self) -> AsyncIterator[bytes]:
        """The request body piece by piece, as it arrives (for uploads too large to hold)."""
        if self.body_done:
            return
        conn = self._conn
        parser = conn.parser
        while True:
            event = parser.next_event()
            if event is NEED_DATA:
                if not self._continue_sent and self.request.expect_continue:
                    # The client holds its body back until we say so; the handler wants it.
                    self._continue_sent = True
                    await conn.send_continue()
                await conn.receive_body(self._body_deadline())
            elif type(event) is Data:
                self._received += len(event.data)
                yield event.data
            elif type(event) is EndOfMessage:
                self.body_done = True
                return
            else:  # pragma: no cover - the parser emits EndOfMessage before the next Request
                raise RuntimeError(f"unexpected parser event in a request body: {event!r}")

    @property
    def server_port(self) -> int:
        """The port this server listens on (never taken from the client's ``Host``)."""
        return self._conn.server.port

    def client_gone_evt(self) -> Event[None]:
        """An event (:mod:`pyweb.events`) enabled once the client has closed or reset its
        connection while this request is being answered: put it in a choice so that a
        long wait ends when nobody listens any more (see ``pyweb/server/gone.py``)::

            msg = await select(port.recv_evt(), timeout(30), ctx.client_gone_evt())
        """
        return self._conn.client_watch().evt()

    def shutdown_evt(self) -> Event[None]:
        """An event enabled once the server has begun a graceful shutdown. A handler that
        waits long puts it in its choice next to :meth:`client_gone_evt`, so that stopping
        the server does not wait for its timeout::

            msg = await select(port.recv_evt(), timeout(30), ctx.client_gone_evt(),
                               ctx.shutdown_evt())
        """
        return self._conn.server.stopping.evt()

    def log_error(self, message: str, exc: BaseException | None = None) -> None:
        """Write ``message`` (and ``exc``'s traceback) to the server's error log, naming
        this request. Never blocks, never raises (it is queued for the logging task)."""
        r = self.request
        log = self._conn.log
        if log is not None:
            log.error(
                f"{message} [from {self.peer}]",
                request_line=f"{r.method} {r.target} HTTP/{r.http_version}",
                exc=exc,
            )

    def __repr__(self) -> str:
        r = self.request
        return f"<RequestContext {r.method} {r.target} from {self.peer}>"
