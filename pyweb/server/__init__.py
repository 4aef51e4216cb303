"""pyweb.server: the trio HTTP/1.1 server (Marlow §3-§7, Hop §2-§3).

:class:`Server` puts the pieces together, in the order a connection meets them::

    listener (listener.py)  ─►  scheduler (scheduling.py, Hop §2.4; trio's I/O: schedulers.py)
        ─►  Connection.talk (connection.py, Marlow §3.2, timeouts §4)
        ─►  handler(RequestContext) -> Response   (context.py; pyweb.app.site by default;
                                                   the body on demand: body.py)
        ─►  Replies.send (reply.py, Hop §3: the arena, sendfile, chunked streams)
        ─►  ServerLog (logging.py, Marlow §5: one logging task fed through a Mailbox)

Where a task waits for more than one thing it says so with first-class events (CML §2,
pyweb.events; docs/events.md "How the server uses events"), and graceful shutdown is one
SHUTDOWN message on ``Server.broadcast``, a Multicast (control.py, CML §3.1). The two
hottest waits are written out by hand instead: an idle connection waits for
``choose(bytes, its deadline, shutdown)`` as a cancel scope around the socket's wait
(shutdown shortens its deadline), and the accept loop for a connection within a cancel
scope (the scheduler's stop cancels it).

Use::

    server = Server(ServerConfig(port=0), Site("pages"))    # Site: pyweb.app.site
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)     # listening now; server.url is valid
        ...
        server.shutdown()                     # graceful: serve() returns when done
"""

from __future__ import annotations

import math
import random
import socket
from typing import TYPE_CHECKING, Any

import trio

from pyweb.events import Latch, Multicast
from pyweb.handler import Context, Handler
from pyweb.protocol.response import Response

from .budget import BUDGET, give_big_buffers_back
from .collector import size_young_generation
from .config import ServerConfig, settings
from .connection import Connection
from .context import RequestContext
from .control import RELOAD, SHUTDOWN
from .proxy import TrustedProxies
from .schedulers import TrioDriver
from .scheduling import Scheduler, make_scheduler
from .slots import Slots

if TYPE_CHECKING:
    from .logging import ServerLog
    from .metrics import Metrics
    from .status import StatusHandler

__all__ = ["Server", "ServerConfig", "RequestContext", "Handler"]


class Server:
    """An HTTP/1.1 server: ``await server.serve()`` until :meth:`shutdown`."""

    def __init__(self, config: ServerConfig, handler: Handler) -> None:
        # The handler is always given: the server does not know about pages or sites
        # (DESIGN.md: server/ does not import app/); `pyweb serve` passes a pyweb.app Site.
        self.config = config
        self.status: StatusHandler | None = None
        """The :class:`~pyweb.server.status.StatusHandler` when ``config.status`` is on."""
        self.metrics: Metrics | None = None
        """The request counts of ``/_pyweb/metrics`` when ``config.metrics`` is on."""
        if config.metrics:
            from .metrics import Metrics

            self.metrics = Metrics(self)
        self.served = 0
        """Requests handed to the handler so far (counted only with ``max_requests``)."""
        self.recycled = False
        """True when :meth:`shutdown` came from ``max_requests`` (the worker is recycled)."""
        self._recycle_at: int | None = None
        self._recycle_base: tuple[int, int] | None = None
        self.closing_since = math.inf
        """trio time of :meth:`shutdown` (idle connections get ``close_grace`` from it)."""
        self.handler: Handler = self._layers(config, handler)
        BUDGET.limit = config.max_body_memory  # process-wide (budget.py)
        give_big_buffers_back()  # freed bodies go back to the system (budget.py)
        size_young_generation(config.gc_young)  # a request's objects die young (collector.py)
        self.slots: Slots[Connection] = Slots(config)
        """Who holds the connection slots (slots.py: idle first out, fast 503)."""
        self.proxies = self._proxies(config)
        """The trusted reverse proxies (``--proxy-headers``), or None: :mod:`.proxy`."""
        self.site_handler: Handler = handler
        """The handler as given (a Site): it may draw the error pages (:meth:`error_page`)."""
        self.scheduler: Scheduler = make_scheduler(
            config.scheduler, pool_size=config.pool_size, max_connections=config.max_connections
        )
        self.connections: set[Connection] = set()
        """Live :class:`~pyweb.server.connection.Connection` objects (for shutdown)."""
        self.closing = False
        """True once :meth:`shutdown` was called: no new requests, replies say close."""
        self.access_enabled = config.access_log is not None or config.metrics
        """Whether connections call ``log_access`` (the access log, or the metrics count)."""
        self.listener: socket.socket | None = None
        self.log: ServerLog | None = None
        """The access and error logs, open while :meth:`serve` runs."""
        self.host = config.host
        self.port = config.port
        self.broadcast: Multicast[str] = Multicast()
        """Control messages to every waiting task (control.py, CML §3.1): :data:`SHUTDOWN`
        from :meth:`shutdown`, :data:`RELOAD` from :meth:`reconfigure`; ``port()`` listens."""
        self.stopping = Latch()
        """Set by :meth:`shutdown`; ``ctx.shutdown_evt()`` is its event (control.py)."""

    @property
    def url(self) -> str:
        """``http://host:port/`` (with the real port once listening)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def serve(
        self, *, task_status: trio.TaskStatus[Server] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen, call ``task_status.started(self)``, serve until :meth:`shutdown`, then
        wait for in-flight requests and the log to drain, and return."""
        from .listener import close_socket, open_listener
        from .logging import ServerLog

        config = self.config
        self.log = log = ServerLog(
            config.access_log,
            config.error_log,
            access_format=config.access_log_format,
            log_format=config.log_format,
        )
        stop_port = self.broadcast.port()  # serve() itself waits for SHUTDOWN
        async with trio.open_nursery() as outer:
            await outer.start(log.run)
            if self.metrics is not None:  # a worker's counts, for the others (metrics.py)
                outer.start_soon(self.metrics.keep_written)
            try:
                if config.listen_fd is not None:  # a worker: the supervisor's shared socket
                    self.listener = socket.socket(fileno=config.listen_fd)
                    self.listener.setblocking(False)
                else:
                    self.listener = await open_listener(config.host, config.port, config.backlog)
                try:
                    address = self.listener.getsockname()
                    self.host, self.port = address[0], address[1]
                    async with trio.open_nursery() as nursery:
                        await self.scheduler.accept(self, TrioDriver(self, nursery))
                        task_status.started(self)
                        while not self.closing:  # (shutdown() may come before serve())
                            await stop_port.recv()
                        # From here the nursery only waits for connections to finish.
                finally:
                    close_socket(self.listener)
            finally:
                log.close()
                if self.metrics is not None:
                    self.metrics.write()  # drained: the last counts

    # Settings that belong to the listening socket, the scheduler or the open log files: a
    # reload cannot change them (Marlow §6 re-reads what new connections use); they need a
    # restart (log files are reopened with SIGUSR1).
    FIXED_ON_RELOAD = (*(f.name for f, how in settings() if how.restart), "backlog")

    def reconfigure(self, config: ServerConfig, handler: Handler) -> list[str]:
        """Reload (SIGHUP, Marlow §6): connections accepted from now on use ``config`` and
        ``handler``; those already open finish with the settings they started with. Returns
        the names of settings that differ but need a restart (they keep their old value)."""
        ignored = [
            name for name in self.FIXED_ON_RELOAD
            if getattr(config, name) != getattr(self.config, name)
        ]  # fmt: skip
        for name in ignored:
            setattr(config, name, getattr(self.config, name))
        self.handler = self._layers(config, handler)
        self.proxies = self._proxies(config)
        BUDGET.limit = config.max_body_memory
        size_young_generation(config.gc_young)
        self.site_handler = handler
        self.config = config
        self.broadcast.send(RELOAD)  # open connections keep their settings (control.py)
        return ignored

    @staticmethod
    def _proxies(config: ServerConfig) -> TrustedProxies | None:
        return TrustedProxies(config.forwarded_allow_ips) if config.proxy_headers else None

    def _layers(self, config: ServerConfig, handler: Handler) -> Handler:
        """The site's handler with the server's own layers around it: the status page
        (its counts survive reloads) and the ``max_requests`` counter."""
        # Each layer is made anew for the new settings and site, never changed in place:
        # a connection keeps the handler it started with (and so its site's dev flag).
        from .status import StatusHandler, guard_operator_pages

        site = handler
        own: dict[str, Handler] = {}  # the operator pages the server answers itself
        if self.metrics is not None:
            from .metrics import METRICS_PATH

            own[METRICS_PATH] = self.metrics.page
        if config.status:
            if self.status is None:
                self.status = StatusHandler(handler, self, config.status_token)
            else:  # the counts go on across reloads
                self.status = self.status.renewed(handler, config.status_token)
            handler = self.status

        def refuse() -> Response:
            return self.error_page(
                403, dev=config.dev, site=site,
                detail="the operator pages answer loopback clients and token holders",
            )  # fmt: skip

        handler = guard_operator_pages(handler, config.status_token, refuse, own)
        if config.max_requests is None:
            return handler
        jitter = config.max_requests_jitter
        if jitter is None:
            jitter = config.max_requests // 10
        if self._recycle_at is None or self._recycle_base != (config.max_requests, jitter):
            # Drawn once per process (a reload keeps it): workers started together recycle
            # at different times, so they are never all draining at once.
            self._recycle_base = (config.max_requests, jitter)
            self._recycle_at = config.max_requests + random.randint(0, jitter)
        limit = self._recycle_at

        async def counted(ctx: Context) -> Response:
            # --max-requests: the request that reaches the limit is served, its reply says
            # close, and the server drains; the supervisor starts a fresh worker.
            self.served += 1
            if self.served >= limit and not self.closing:
                self.recycled = True
                self.shutdown()
            return await handler(ctx)

        return counted

    def error_page(
        self, status: int, *, dev: bool | None = None, site: Handler | None = None, **details: Any
    ) -> Response:
        """The page for an error the server answers itself (a bad request, 408, 413, ...):
        the handler's own ``error_page`` when it has one (a site's ``templates/_404.html``,
        its traceback pages), else :func:`~pyweb.protocol.errorpage.error_response`.
        ``dev`` and ``site``: the connection's (settings are per connection, and a site
        carries its own dev flag); default the server's current ones."""
        draw = getattr(self.site_handler if site is None else site, "error_page", None)
        if draw is not None:
            try:
                response = draw(status, **details)
                if isinstance(response, Response):
                    return response
            except Exception:  # a broken site page must not hide the error being reported
                pass
        from pyweb.protocol.errorpage import error_response

        return error_response(status, dev=self.config.dev if dev is None else dev, **details)

    def shutdown(self) -> None:
        """Graceful shutdown (call from a task in the server's trio run): stop accepting,
        close idle persistent connections now, let requests in flight finish (their replies
        say ``Connection: close``); :meth:`serve` returns when the last one is done."""
        if self.closing:
            return
        self.closing = True
        self.closing_since = trio.current_time()
        # One message wakes every waiter that listens (serve() starts waiting for the busy
        # connections; control.py). A connection waiting idle for its next request does
        # not listen (its wait is the hot path: connection.py): it is told here, and
        # closes once close_grace is over.
        self.broadcast.send(SHUTDOWN)
        for connection in list(self.slots.idle):
            connection.close_when_idle()
        self.stopping.set()  # long waits in handlers (ctx.shutdown_evt()) end now
        self.scheduler.stop()
        if self.listener is not None:
            from .listener import close_socket

            close_socket(self.listener)  # (stop() has ended the wait at accept on it)
