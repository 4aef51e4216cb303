"""What a server is on either loop: its settings, its handler layers, reload, error pages
and the start of a graceful shutdown (Marlow §5-§6, Hop §2.4).

pyweb has two servers: :class:`pyweb.server.Server` on trio and
:class:`pyweb.server.asyncio.AsyncioServer` on asyncio. They differ in how they listen,
accept and move bytes; they agree on everything else, and that is written once here in
:class:`BaseServer`, which both are:

* the handler with the server's own layers around it (:meth:`BaseServer._layers`): the
  operator pages (``/_pyweb/status``: status.py, ``/_pyweb/metrics``: metrics.py) and the
  ``--max-requests`` counter;
* reload on SIGHUP (:meth:`BaseServer.reconfigure`, Marlow §6): new connections get the
  new settings, open ones keep theirs, and ``RELOAD`` goes out on the broadcast;
* the error pages the server answers itself (:meth:`BaseServer.error_page`);
* the first steps of a graceful shutdown (:meth:`BaseServer.begin_shutdown`): the
  ``SHUTDOWN`` message on ``broadcast`` (control.py, CML §3.1), the ``stopping`` latch
  that ends long waits in handlers, the schedulers told to stop.

Each loop's server adds only what needs its loop: ``serve()`` on trio (nurseries),
``start()``/``wait_closed()`` on asyncio, and the rest of ``shutdown()`` (how idle
connections and the listener are told).
"""

from __future__ import annotations

import math
import os
import random
import signal
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyweb_regions
from pyweb.events import Latch, Multicast
from pyweb.handler import Context, Handler
from pyweb.protocol.response import Response
from pyweb.runtime import now

from .budget import BUDGET, give_big_buffers_back
from .collector import size_young_generation
from .config import ServerConfig, settings
from .control import RELOAD, SHUTDOWN
from .listener import open_listener
from .proxy import TrustedProxies
from .scheduling import Scheduler, make_scheduler
from .slots import Slots
from .supervised import announce_ready

if TYPE_CHECKING:
    from .logging import ServerLog
    from .metrics import Metrics
    from .status import StatusHandler

__all__ = ["BaseServer"]


class BaseServer:
    """The part of an HTTP/1.1 server that does not depend on its event loop."""

    """Hop's scheduler: each loop's server makes its own (schedulers.py, asyncio/)."""

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
        """The loop's time at :meth:`shutdown` (idle connections get ``close_grace`` from it)."""
        self.handler: Handler = self._layers(config, handler)
        BUDGET.limit = config.max_body_memory  # process-wide (budget.py)
        give_big_buffers_back()  # freed bodies go back to the system (budget.py)
        size_young_generation(config.gc_young)  # a request's objects die young (collector.py)
        self.slots: Slots[Any] = Slots(config)
        """Who holds the connection slots (slots.py: idle first out, fast 503)."""
        self.scheduler: Scheduler = make_scheduler(
            config.scheduler, pool_size=config.pool_size, max_connections=config.max_connections
        )
        """Hop's scheduler (``--scheduler``: scheduling.py), the same policy on both loops;
        each loop's server hands it a driver for its own I/O when it starts."""
        self.proxies = self._proxies(config)
        """The trusted reverse proxies (``--proxy-headers``), or None: :mod:`.proxy`."""
        self.site_handler: Handler = handler
        """The handler as given (a Site): it may draw the error pages (:meth:`error_page`)."""
        self.connections: set[Any] = set()
        """The live connections (for shutdown and the status page)."""
        self.closing = False
        """True once :meth:`shutdown` was called: no new requests, replies say close."""
        self.access_enabled = config.access_log is not None or config.metrics
        """Whether connections call ``log_access`` (the access log, or the metrics count)."""
        self.listener: socket.socket | None = None
        self.log: ServerLog | None = None
        """The access and error logs, open while the server serves."""
        self.host = config.host
        self.port = config.port
        self.broadcast: Multicast[str] = Multicast()
        """Control messages to every waiting task (control.py, CML §3.1): :data:`SHUTDOWN`
        from :meth:`shutdown`, :data:`RELOAD` from :meth:`reconfigure`; ``port()`` listens."""
        self.stopping = Latch()
        """Set by :meth:`shutdown`; ``ctx.shutdown_evt()`` is its event (control.py)."""

    async def listen(self, sock: socket.socket | None = None) -> socket.socket:
        """The listening socket, non-blocking: ``sock``, the supervisor's shared one
        (``listen_fd``: this is a worker), or a new one on ``host:port``; ``host`` and
        ``port`` say where it listens (port 0 becomes the real one)."""
        config = self.config
        if sock is None and config.listen_fd is not None:
            sock = socket.socket(fileno=config.listen_fd)
        if sock is None:
            sock = await open_listener(config.host, config.port, config.backlog)
        sock.setblocking(False)
        self.listener = sock
        self.host, self.port = sock.getsockname()[:2]
        return sock

    def open_log(self) -> ServerLog:
        """The access and error logs of this run (written by the log's own task)."""
        from .logging import ServerLog

        config = self.config
        self.log = ServerLog(
            config.access_log,
            config.error_log,
            access_format=config.access_log_format,
            log_format=config.log_format,
        )
        return self.log

    def announce(self, site_dir: str | None, loop: str = "") -> bool:
        """Say that the server listens: a worker tells its supervisor it is ready (False),
        a server on its own prints where it serves (True; ``loop``: which loop, when not
        trio's)."""
        config = self.config
        worker = os.environ.get("PYWEB_WORKER_ID")
        if config.listen_fd is not None and worker is not None:
            announce_ready(worker)  # (one write: supervised.py says why)
            return False
        print(
            f"pyweb serving {site_dir} on {self.url} ({loop}scheduler "
            f"{config.scheduler}, dev mode {'on' if config.dev else 'off'}, "
            f"regions {pyweb_regions.IMPLEMENTATION})",
            flush=True,
        )
        return True

    def answer_signal(self, signum: int, reload: Callable[[], object] | None) -> bool:
        """What ``pyweb serve`` does on a signal, on either loop: SIGHUP reloads
        (``reload()``), SIGUSR1 reopens the log files (logrotate moved them), the first
        SIGINT or SIGTERM begins a graceful shutdown. True for a second one: the caller
        stops at once."""
        if signum == signal.SIGHUP:
            if reload is not None and not self.closing:
                reload()
        elif signum == signal.SIGUSR1:
            if self.log is not None:
                self.log.reopen()
        elif not self.closing:
            _say(f"{signal.Signals(signum).name}, shutting down")
            self.shutdown()
        else:
            _say("second signal, stopping now")
            return True
        return False

    @property
    def url(self) -> str:
        """``http://host:port/`` (with the real port once listening)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

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
        return self._counted(config.max_requests, config.max_requests_jitter, handler)

    def _counted(self, max_requests: int, jitter: int | None, handler: Handler) -> Handler:
        """``handler``, counting requests towards ``--max-requests`` (plus a random jitter)."""
        if jitter is None:
            jitter = max_requests // 10
        if self._recycle_at is None or self._recycle_base != (max_requests, jitter):
            # Drawn once per process (a reload keeps it): workers started together recycle
            # at different times, so they are never all draining at once.
            self._recycle_base = (max_requests, jitter)
            self._recycle_at = max_requests + random.randint(0, jitter)
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
        """Graceful shutdown: each loop's server says how (it calls :meth:`begin_shutdown`)."""
        raise NotImplementedError

    def begin_shutdown(self) -> bool:
        """The steps of a graceful shutdown that both loops take, in this order; False if
        it had begun already (call from a task on the server's loop). Then the loop's own
        :meth:`shutdown` tells its idle connections and closes its listener."""
        if self.closing:
            return False
        self.closing = True
        self.closing_since = now()
        # One message wakes every waiter that listens (control.py). A connection waiting
        # idle for its next request does not listen (its wait is the hot path): each
        # loop's shutdown tells it, and it closes once close_grace is over.
        self.broadcast.send(SHUTDOWN)
        self.stopping.set()  # long waits in handlers (ctx.shutdown_evt()) end now
        self.scheduler.stop()
        return True


def _say(text: str) -> None:
    print(f"pyweb: {text}", file=sys.stderr, flush=True)
