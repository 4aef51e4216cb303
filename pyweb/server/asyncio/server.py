"""``pyweb serve --loop asyncio``: the same pages on an asyncio server (Hop §2.4, pluggable
schedulers), on uvloop when it is installed.

trio is pyweb's default loop and its teaching model; this is the second scheduler.
:class:`AsyncioServer` is a :class:`~pyweb.server.base.BaseServer`, as the trio server is
(the same settings, handler layers, status and metrics pages, ``max_requests`` recycling,
reload, error pages and shutdown broadcast); only how bytes move differs: its connections
are :class:`~.connection.HttpProtocol` objects, accepted by Hop's schedulers
(``--scheduler``: one-to-one, pool, nothread; ``scheduling.py``, the same as on trio, with
this loop's I/O: ``schedulers.py``). The process around it
(signals, SIGHUP reload, ``--workers``) is ``main.py``.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from ..base import BaseServer
from .connection import HttpProtocol
from .deadlines import Deadlines
from .schedulers import AioDriver

__all__ = ["AsyncioServer", "new_loop"]


def new_loop() -> tuple[asyncio.AbstractEventLoop, str]:
    """A new event loop, uvloop's when installed; and its name for the banner."""
    try:
        import uvloop
    except ImportError:
        return asyncio.SelectorEventLoop(), "asyncio"
    return uvloop.new_event_loop(), "uvloop"


class AsyncioServer(BaseServer):
    """A server whose connections are asyncio protocols::

    server = AsyncioServer(config, site)
    await server.start()          # listening: server.url is valid
    ...
    server.shutdown()             # graceful
    await server.wait_closed()    # requests finished, log written
    """

    # The Slots and connection set of base.py, holding HttpProtocols: the slots need only
    # what both kinds of connection have (see slots.py).
    slots: Any
    connections: set[Any]
    loop: asyncio.AbstractEventLoop
    """The loop the server runs on (set by :meth:`start`). Its connections ask it, not
    ``asyncio.get_running_loop()``, which on Python 3.11 makes a ``getpid`` system call
    each time (its check for a fork): three per keep-alive request (docs/performance.md)."""

    def __init__(self, config: Any, handler: Any) -> None:
        super().__init__(config, handler)
        self._log_task: asyncio.Task[None] | None = None
        self._metrics_task: asyncio.Task[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self.deadlines = Deadlines()
        """The connections' waits for a request, under one timer (deadlines.py)."""
        self.set_nodelay = True
        """Whether connections switch Nagle off themselves (not on uvloop: it does)."""

    async def start(self, sock: socket.socket | None = None) -> None:
        """Open the logs and listen (on ``sock``, the supervisor's ``listen_fd``, or a new
        socket on ``host:port``)."""
        self.loop = loop = asyncio.get_running_loop()
        self._log_task = loop.create_task(self.open_log().run())
        if self.metrics is not None:  # a worker's counts, for the others (metrics.py)
            self._metrics_task = loop.create_task(self.metrics.keep_written())
        self._drained = loop.create_future()
        await self.listen(sock)
        self.set_nodelay = not type(loop).__module__.startswith("uvloop")
        await self.scheduler.accept(self, AioDriver(self, lambda sock: HttpProtocol(self, sock)))

    def shutdown(self) -> None:
        """Graceful shutdown: stop accepting, give idle connections ``close_grace`` (a
        request may be on its way), let requests in flight finish (their replies say
        ``Connection: close``); :meth:`wait_closed` returns when the last one is done."""
        if not self.begin_shutdown():  # SHUTDOWN, stopping, the scheduler (base.py)
            return
        for connection in list(self.connections):
            connection.server_closing()
        self.connection_ended()

    def connection_ended(self) -> None:
        """A connection has closed: the last one during shutdown ends :meth:`wait_closed`."""
        if self.closing and not self.connections:
            drained = self._drained
            if drained is not None and not drained.done():
                drained.set_result(None)

    async def wait_closed(self) -> None:
        """Wait for :meth:`shutdown` and the last connection, then write the log out."""
        if self._drained is not None:
            await self._drained
        self.deadlines.close()
        if self.log is not None:
            self.log.close()
        if self._log_task is not None:
            await self._log_task
        if self._metrics_task is not None:
            await self._metrics_task
        if self.metrics is not None:
            self.metrics.write()  # drained: the last counts

    def abort_all(self) -> None:
        """Close every connection now (a second signal)."""
        for connection in list(self.connections):
            connection.abort()
