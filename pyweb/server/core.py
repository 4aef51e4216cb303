"""What every connection decides the same way, on either loop: the steps of Marlow's ``talk``
(§3.2) that move no bytes.

:class:`ConnectionCore` is the common base of the two drivers, trio's
:class:`~pyweb.server.trio.connection.Connection` and asyncio's
:class:`~pyweb.server.asyncio.HttpProtocol`. It holds no state of its own (each driver keeps
its fields its own way) and no I/O: it is the handler's side of ``genResponse`` (a
Response or a 500 page), Marlow's ``Left resp`` (a protocol error's page), whether the
connection stays open (``isKeepAlive``, with nginx's two limits), what the request holds
of the body budget, how long a wait for a request may last, which client a trusted proxy
speaks for, a WebSocket upgrade (its 503 or its ``101``, then the session), and
``logAccess``. The driver reads, waits and writes around these steps; the shared modules
ask it only what ``contract.py`` promises.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, cast

from pyweb.protocol.negotiation import prefers_json
from pyweb.protocol.parser import RequestParser
from pyweb.protocol.response import Response
from pyweb.runtime import now

from .budget import BUDGET
from .contract import HEAD
from .logging import access_record
from .proxy import peer_host
from .reply import request_line
from .websocket import run_session

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyweb.handler import Handler
    from pyweb.protocol.errors import ProtocolError
    from pyweb.protocol.messages import Request
    from pyweb.protocol.websocket import WebSocketUpgrade

    from .config import ServerConfig
    from .context import RequestContext
    from .contract import ServerConnection
    from .host import Host
    from .logging import ServerLog
    from .proxy import TrustedProxies
    from .reply import Sent

__all__ = ["ConnectionCore"]


class ConnectionCore:
    """The loop-free steps of a connection (see the module doc)."""

    # Kept by the driver (slots on trio; class attributes with instance overrides on
    # asyncio). No ``__slots__ = ()`` here: the fields it writes are the driver's.
    server: Host
    config: ServerConfig
    handler: Handler
    site: Handler
    log: ServerLog
    parser: RequestParser
    peer: str
    client: str
    served: int
    opened_at: float
    reserved: int
    in_stream_budget: bool
    phase: int
    fresh: bool
    proxies: TrustedProxies | None
    via_proxy: Callable[[str], bool] | None

    if TYPE_CHECKING:  # the driver's (asyncio's comes from a base class after this one)

        async def send(self, request: Request, response: Response, keep_alive: bool) -> Sent:
            """Send a reply: (status, body bytes sent, whether the connection stays)."""

    def open(self, server: Host) -> None:
        """What a connection takes from its server when it opens, and keeps to its end (a
        reload changes them for new connections only, Marlow §6): the settings, the
        handler, the site (it draws the server's error pages with its own dev flag), the
        log; with its own sans-IO parser, and when it opened (``keepalive_time``)."""
        self.server = server
        self.config = config = server.config
        self.handler = server.handler
        self.site = server.site_handler
        log = server.log
        assert log is not None, "connections exist only while the server serves"
        self.log = log
        self.parser = RequestParser(config.limits)
        self.opened_at = time.time()

    def checked(self, response: Response) -> Response:
        """``genResponse``: the handler's result, if it is a Response (a TypeError, for the
        500 page, if not); a streamed one moves to the stream budget (slots.py)."""
        if type(response) is not Response and not isinstance(response, Response):
            raise TypeError(
                f"a handler must return a pyweb Response, not {type(response).__name__}"
            )
        body = response.body
        if type(body) is not bytes and hasattr(body, "__aiter__"):
            self.server.slots.to_streams(self)
        return response

    def failure_page(self, request: Request, exc: Exception, *, quiet: bool = False) -> Response:
        """``genResponse``'s other half: the handler raised, or gave something that is not
        a Response: logged (unless ``quiet``: its client has left), and a 500 page."""
        if not quiet:
            self.log.error(
                f"handler error for {self.peer}", request_line=request_line(request), exc=exc
            )
        return self.error_page(500, detail=str(exc), exc=exc, as_json=_wants_json(request))

    def reject_page(self, err: ProtocolError, request: Request | None) -> Response:
        """Marlow's ``Left resp``: log a request that cannot be served, and its page."""
        self.log.error(
            f"{err.status} for {self.peer}: {err.message}",
            request_line=(request_line(request) if request else ""),
        )
        if request is not None:
            as_json = _wants_json(request)
        else:  # refused before its head was whole: what the raw head said (parser.py)
            as_json = prefers_json(err.content_type, err.accept)
        return self.error_page(
            err.status, detail=err.message, offending=err.offending, as_json=as_json
        )

    def error_page(self, status: int, **details: Any) -> Response:
        """The page for an error the server answers itself, through the server: a site may
        draw its own (templates/_404.html...). ``details`` are ``error_response``'s:
        ``detail``, ``exc``, ``offending``; shown in development mode (this connection's
        setting) only."""
        return self.server.error_page(status, dev=self.config.dev, site=self.site, **details)

    def may_keep_alive(self, ctx: RequestContext) -> bool:
        """Whether the connection may stay open after this request: the client asks for
        it, the server is not stopping, the connection has not served
        ``keepalive_requests`` requests or lived ``keepalive_time`` (nginx's two limits:
        clients reconnect now and then, so a new worker gets its share of them), and the
        body is out of the way (:meth:`RequestBody.settle`: what the handler left unread is
        dropped, drained after the reply, or the connection closes)."""
        self.served += 1
        config = self.config
        keep_alive = (
            ctx.request.keep_alive
            and not self.server.closing
            and self.served < config.keepalive_requests
            and ctx.received_at - self.opened_at < config.keepalive_time
        )
        body = ctx.request_body
        if body is None:  # a request without a body: the parser's EndOfMessage, at once
            self.parser.next_event()
            return keep_alive
        return body.settle(keep_alive)

    def patience(self) -> float:
        """How long a wait for a request may last, from now: the header timeout for a head under way, the
        ``first_byte_timeout`` for a new connection's first request, what is left of
        ``close_grace`` for an idle one once the server is stopping (its next request may
        be on the wire: it is answered with ``Connection: close``), else the keep-alive
        timeout. The slots spread the last two in a crowd (slots.py)."""
        config = self.config
        if self.phase == HEAD:
            return config.header_timeout
        slots = self.server.slots
        if self.fresh:  # a new connection that has sent nothing yet (slots.py)
            return slots.first_byte(config.first_byte_timeout)
        if self.server.closing:
            return max(0.0, self.server.closing_since + config.close_grace - now())
        return slots.keepalive(config.keepalive_timeout)

    def proxy_test(self) -> Callable[[str], bool] | None:
        """When the peer is a trusted reverse proxy (each request names its client,
        proxy.py): the test of the further proxies named in ``X-Forwarded-For``; else
        None. Asked by the first request that has forwarding fields, and remembered
        (``proxies`` is the server's list until then, None after): the connection of a
        client that does not come through a proxy never looks its address up (6k
        instructions a connection, docs/performance.md)."""
        proxies = self.proxies
        if proxies is not None:  # the first time
            self.proxies = None
            if proxies.trusts(peer_host(self.peer)):
                self.via_proxy = proxies.trusts
        return self.via_proxy

    async def upgrade(self, request: Request, upgrade: WebSocketUpgrade, received_at: float) -> None:
        """The handler accepted a WebSocket (RFC 6455: the connection leaves HTTP). Like a
        long-poll it is a long wait, so it moves to the stream budget (a 503 when that is
        full: it never takes a request slot); the ``101`` is logged, then the session has
        the connection to itself until it closes (:mod:`pyweb.server.websocket`). The
        driver closes the connection after it."""
        log_access = self.server.access_enabled
        if not self.server.slots.to_streams(self):
            page = self.error_page(503, detail="every stream place is taken (max_streams)")
            status, sent, _ = await self.send(request, page, False)
            if log_access:
                self.log_access(request, status, sent, received_at)
            return
        if log_access:
            self.log_access(request, 101, 0, received_at)
        # (each driver is a ServerConnection: test_contract.py checks it)
        await run_session(cast("ServerConnection", self), request, upgrade)

    def release_body(self) -> None:
        """The request's body is no longer held: its bytes leave the budget (budget.py)."""
        if self.reserved:
            BUDGET.release(self.reserved)
            self.reserved = 0

    def log_access(
        self,
        request: Request | None,
        status: int,
        sent: int,
        received_at: float,
        alloc: tuple[int, int] | None = None,
    ) -> None:
        """Send one access record to the logging task (Marlow's ``logAccess``); ``request``
        is ``None`` when none could be parsed. ``alloc``: what the request's page allocated
        (``ctx.alloc``), ``None`` when nothing was counted (the log then says ``alloc=-``).
        The request is counted for ``/_pyweb/metrics`` here too (metrics.py)."""
        metrics = self.server.metrics
        if self.log.access_enabled:
            record = access_record(self.client, request, status, sent, received_at, alloc)
            self.log.access(record)
            if metrics is not None:
                metrics.observe(request, status, record.duration)
        elif metrics is not None:
            metrics.observe(request, status, time.time() - received_at)


def _wants_json(request: Request) -> bool:
    """Whether this request's errors are JSON (an API client: negotiation.py decides)."""
    return prefers_json(request.header("content-type"), request.header("accept"))
