"""The trio :class:`Server`: ``serve()`` in nurseries, and how shutdown reaches idle
connections and the listener.

What it shares with the asyncio server (``pyweb/server/asyncio/``), its settings, handler
layers, reload, error pages and the start of shutdown, is
:class:`~pyweb.server.base.BaseServer` (base.py). Its connections are
:class:`~pyweb.server.trio.connection.Connection` objects, started by the scheduler
(``scheduling.py``) through :class:`~pyweb.server.trio.schedulers.TrioDriver`.

Where a task waits for more than one thing it says so with first-class events (CML §2,
pyweb.events; docs/events.md "How the server uses events"), and graceful shutdown is one
SHUTDOWN message on ``Server.broadcast``, a Multicast (control.py, CML §3.1). The two
hottest waits are written out by hand instead: an idle connection waits for
``choose(bytes, its deadline, shutdown)`` as a cancel scope around the socket's wait
(shutdown shortens its deadline), and the accept loop for a connection within a cancel
scope (the scheduler's stop cancels it).
"""

from __future__ import annotations

import trio

from ..base import BaseServer
from ..slots import Slots
from .connection import Connection
from .schedulers import TrioDriver

__all__ = ["Server"]


class Server(BaseServer):
    """An HTTP/1.1 server on trio: ``await server.serve()`` until :meth:`shutdown`."""

    slots: Slots[Connection]
    connections: set[Connection]
    """Live :class:`~pyweb.server.trio.connection.Connection` objects (for shutdown)."""

    async def serve(
        self, *, task_status: trio.TaskStatus[Server] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen, call ``task_status.started(self)``, serve until :meth:`shutdown`, then
        wait for in-flight requests and the log to drain, and return."""
        from ..listener import close_socket

        log = self.open_log()
        stop_port = self.broadcast.port()  # serve() itself waits for SHUTDOWN
        async with trio.open_nursery() as outer:
            await outer.start(log.run)
            if self.metrics is not None:  # a worker's counts, for the others (metrics.py)
                outer.start_soon(self.metrics.keep_written)
            try:
                listener = await self.listen()  # (a worker's: the supervisor's socket)
                try:
                    async with trio.open_nursery() as nursery:
                        await self.scheduler.accept(self, TrioDriver(self, nursery))
                        task_status.started(self)
                        while not self.closing:  # (shutdown() may come before serve())
                            await stop_port.recv()
                        # From here the nursery only waits for connections to finish.
                finally:
                    close_socket(listener)
            finally:
                log.close()
                if self.metrics is not None:
                    self.metrics.write()  # drained: the last counts

    def shutdown(self) -> None:
        """Graceful shutdown (call from a task in the server's trio run): stop accepting,
        close idle persistent connections now, let requests in flight finish (their replies
        say ``Connection: close``); :meth:`serve` returns when the last one is done."""
        if not self.begin_shutdown():  # SHUTDOWN, stopping, the scheduler (base.py)
            return
        # A connection waiting idle for its next request does not listen to the broadcast
        # (its wait is the hot path: connection.py): it is told here, and closes once
        # close_grace is over.
        for connection in list(self.slots.idle):
            connection.close_when_idle()
        if self.listener is not None:
            from ..listener import close_socket

            close_socket(self.listener)  # (stop() has ended the wait at accept on it)
