"""RequestContext: what a handler receives, one per request.

It is the request of Hop's "Request" stage (§2.4.1) plus what the server knows about it:
who sent it (``peer``), when (``received_at``), whether errors may be shown in detail
(``dev``), and a way to read the body *on demand*. Reading on demand is what makes
``Expect: 100-continue`` honest (RFC 9110 §10.1.1): the server tells the client to send its
body (``100 Continue``) only when the handler actually asks for it, so a handler that
rejects an upload from its headers alone never makes the client send it.

It is written once for both loops: it asks its connection only what the
``ServerConnection`` contract promises (``contract.py``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from pyweb.events import Event
from pyweb.protocol.messages import Request

from .body import RequestBody
from .proxy import forwarded

if TYPE_CHECKING:
    from .contract import ServerConnection

__all__ = ["RequestContext"]


class RequestContext:
    """One request as a handler sees it: ``await handler(ctx) -> Response``. The server's
    side of the handler contract, :class:`pyweb.handler.Context`."""

    __slots__ = (
        "request", "peer", "scheme", "dev", "received_at", "alloc", "request_body",
        "_connection", "after_reply",
    )  # fmt: skip

    def __init__(self, connection: ServerConnection, request: Request) -> None:
        self.request = request
        self.peer = connection.peer
        """The client's address, ``"host:port"`` (behind a trusted proxy, the client it
        names in ``X-Forwarded-For``, with port 0: :mod:`pyweb.server.proxy`)."""
        self.scheme = "http"
        """``"http"``, or what a trusted proxy's ``X-Forwarded-Proto`` says."""
        if request.forwarded and (proxy_test := connection.proxy_test()) is not None:
            # the client behind the proxy, and its scheme (the parser noted the fields)
            self.peer, self.scheme = forwarded(request.headers, self.peer, proxy_test)
        connection.client = self.peer  # (the access log names it)
        self.dev = connection.config.dev
        """Development mode: error pages may show tracebacks (the connection's setting)."""
        self.received_at = time.time()
        """``time.time()`` when the request head had arrived."""
        self.alloc: tuple[int, int] | None = None
        """Bytes and calls this request's page allocated, set by :mod:`pyweb.regions` with
        ``--profile-alloc`` (C only); ``None`` when nothing was counted. The access log's
        ``alloc`` format shows it."""
        self.request_body = (
            RequestBody(connection, request) if request.content_length or request.chunked else None
        )
        """The body, read on demand (``server/body.py``); None while a request without one
        has not been asked for it (most requests: no object made for them)."""
        self._connection = connection
        self.after_reply: Callable[[int], None] | None = None
        """Called with the status once the reply is sent: ``conn.after`` sets it to start
        the page's work after the reply (``pyweb/app/after.py``). None, the usual case:
        no work after this reply, and no call."""

    def _body(self) -> RequestBody:
        if self.request_body is None:  # asked of a request without a body: an empty one
            self.request_body = RequestBody(self._connection, self.request)
        return self.request_body

    @property
    def server_port(self) -> int:
        """The port this server listens on (never taken from the client's ``Host``)."""
        return self._connection.server.port

    async def body(self, copies: int = 1) -> bytes:
        """The whole request body (de-chunked). Sends ``100 Continue`` first when the client
        waits for it. Raises :class:`~pyweb.protocol.BodyTooLarge` past ``Limits.max_body``;
        a body that stops arriving for ``body_timeout`` seconds, or is slower in all than
        its deadline, ends the connection (408); one that does not fit the process's
        ``max_body_memory`` (``copies`` times: how often the caller will hold it) is refused
        (503, before it is read when its length is known)."""
        return await self._body().read(copies)

    def stream(self) -> AsyncIterator[bytes]:
        """The request body piece by piece, as it arrives (for uploads too large to hold)."""
        return self._body().stream()

    def hold(self, n: int) -> bool:
        """Count ``n`` bytes the handler keeps in memory from :meth:`stream` against the
        process's ``max_body_memory`` (negative: give them back); False, nothing counted,
        when they do not fit (the handler spools them to disk or answers 503). Given back
        when the handler is done (``body.py``)."""
        return self._body().hold(n)

    def client_gone_evt(self) -> Event[None]:
        """An event (:mod:`pyweb.events`) enabled once the client has closed or reset its
        connection while this request is being answered: put it in a choice so that a
        long wait ends when nobody listens any more (see ``pyweb/server/trio/gone.py``)::

            msg = await select(port.recv_evt(), timeout(30), ctx.client_gone_evt())
        """
        return self._connection.client_watch().evt()

    def shutdown_evt(self) -> Event[None]:
        """An event enabled once the server has begun a graceful shutdown. A handler that
        waits long puts it in its choice next to :meth:`client_gone_evt`, so that stopping
        the server does not wait for its timeout::

            msg = await select(port.recv_evt(), timeout(30), ctx.client_gone_evt(),
                               ctx.shutdown_evt())
        """
        return self._connection.server.stopping.evt()

    def log_error(self, message: str, exc: BaseException | None = None) -> None:
        """Write ``message`` (and ``exc``'s traceback) to the server's error log, naming
        this request. Never blocks, never raises (it is queued for the logging task)."""
        r = self.request
        self._connection.log.error(
            f"{message} [from {self.peer}]",
            request_line=f"{r.method} {r.target} HTTP/{r.http_version}",
            exc=exc,
        )

    def __repr__(self) -> str:
        r = self.request
        return f"<RequestContext {r.method} {r.target} from {self.peer}>"
