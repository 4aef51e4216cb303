"""pyweb.server: the trio HTTP/1.1 server (Marlow §3-§7, Hop §2-§3).

:class:`Server` puts the pieces together, in the order a connection meets them::

    listener (listener.py)  ─►  scheduler (schedulers.py, Hop §2.4)
        ─►  Connection.talk (connection.py, Marlow §3.2, timeouts §4)
        ─►  handler(RequestContext) -> Response   (context.py; pyweb.app.site by default)
        ─►  ServerLog (logging.py, Marlow §5: one logging task fed through a channel)

Use::

    server = Server(ServerConfig(port=0), Site("pages"))    # Site: pyweb.app.site
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)     # listening now; server.url is valid
        ...
        server.shutdown()                     # graceful: serve() returns when done
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import trio

from pyweb.protocol.response import Response

from .config import ServerConfig
from .connection import Connection, watch_deadlines
from .context import RequestContext
from .schedulers import Scheduler, make_scheduler

__all__ = ["Server", "ServerConfig", "RequestContext", "Handler"]

Handler = Callable[[RequestContext], Awaitable[Response]]
"""``async def handler(ctx: RequestContext) -> Response``."""


class Server:
    """An HTTP/1.1 server: ``await server.serve()`` until :meth:`shutdown`."""

    def __init__(self, config: ServerConfig, handler: Handler) -> None:
        # The handler is always given: the server does not know about pages or sites
        # (DESIGN.md: server/ does not import app/); `pyweb serve` passes a pyweb.app Site.
        self.config = config
        self.handler: Handler = handler
        self.scheduler: Scheduler = make_scheduler(
            config.scheduler, pool_size=config.pool_size, max_connections=config.max_connections
        )
        self.connections: set[Connection] = set()
        """Live :class:`~pyweb.server.connection.Connection` objects (for shutdown)."""
        self.closing = False
        """True once :meth:`shutdown` was called: no new requests, replies say close."""
        self.access_enabled = config.access_log is not None
        self.listener: socket.socket | None = None
        self.log = None
        self.host = config.host
        self.port = config.port
        self._stopped: trio.Event | None = None  # created inside the trio run, in serve()

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
        self.log = log = ServerLog(config.access_log, config.error_log)
        self._stopped = trio.Event()
        if self.closing:  # shutdown() came before serve()
            self._stopped.set()
        async with trio.open_nursery() as outer:
            await outer.start(log.run)
            try:
                self.listener = await open_listener(config.host, config.port, config.backlog)
                try:
                    address = self.listener.getsockname()
                    self.host, self.port = address[0], address[1]
                    # One watchdog enforces every connection's timeouts (connection.py).
                    shortest = min(
                        config.header_timeout, config.keepalive_timeout,
                        config.body_timeout, config.send_timeout,
                    )  # fmt: skip
                    watchdog = trio.CancelScope()
                    outer.start_soon(self._watch, watchdog, min(0.25, shortest / 4))
                    async with trio.open_nursery() as nursery:
                        await self.scheduler.accept(self, nursery)
                        task_status.started(self)
                        await self._stopped.wait()
                        # From here the nursery only waits for connections to finish.
                    watchdog.cancel()
                finally:
                    close_socket(self.listener)
            finally:
                log.close()

    async def _watch(self, scope: trio.CancelScope, tick: float) -> None:
        with scope:
            await watch_deadlines(self.connections, tick)

    def shutdown(self) -> None:
        """Graceful shutdown (call from a task in the server's trio run): stop accepting,
        close idle persistent connections now, let requests in flight finish (their replies
        say ``Connection: close``); :meth:`serve` returns when the last one is done."""
        if self.closing:
            return
        self.closing = True
        self.scheduler.stop()
        if self.listener is not None:
            from .listener import close_socket

            close_socket(self.listener)  # wakes the task blocked in accept
        for connection in list(self.connections):
            connection.close_if_idle()
        if self._stopped is not None:
            self._stopped.set()
