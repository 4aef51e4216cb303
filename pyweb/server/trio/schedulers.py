"""Hop's schedulers (Hop §2.4) on trio: only the I/O. What each scheduler decides (who
accepts, how many tasks, admission, the door) is ``scheduling.py``, the same on both
loops; this is where an accepted connection goes on trio (:class:`TrioDriver`).

* ``spawn`` (one-to-one): a newcomer that gets a slot at once (``scheduling.
  admit_at_once``) is served by a task of its own; one at the limit waits for its
  request in a task of its own (``scheduling.admit_when_it_speaks``).
* ``serve`` (pool, nothread): the :class:`~pyweb.server.trio.connection.Connection` runs in the
  calling task, to its end.
* ``refuse``: the fast 503, its lingering in the server's nursery (``slots.py``).

A task whose connection has ended is not thrown away at once: up to :data:`SPARE_TASKS`
of them wait as *spares*, and ``spawn`` hands the next connection to one (Hop's pool of
threads, §2.4.5, as a cache in front of ``thread-start!``). Starting a trio task and
ending it cost about 20,000 instructions more than waking a spare (docs/performance.md):
a server that gets a connection per request pays that for each. A spare serves its
connection in a fresh copy of the accept loop's context, as a new task would: nothing a
page put in a ``ContextVar`` is seen by the next connection.
"""

from __future__ import annotations

import contextvars
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio
from outcome import Value
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from ..listener import close_socket, prepared
from ..scheduling import Driver, admit_at_once, admit_when_it_speaks
from .connection import Connection

if TYPE_CHECKING:
    from ..host import Host

SPARE_TASKS = 64
"""Tasks of finished connections kept to serve the next ones (one-to-one's ``spawn``)."""

__all__ = ["SPARE_TASKS", "TrioDriver"]


class TrioDriver(Driver):
    """The schedulers' I/O on trio: tasks in the server's ``nursery``."""

    def __init__(self, server: Host, nursery: trio.Nursery) -> None:
        self.server = server
        self.nursery = nursery
        self.spares: list[Task] = []
        """Tasks waiting for a connection to serve, the one that ended last at the end."""
        self.stopped = False
        self.watching = trio.CancelScope()
        """The scope of the one-to-one accept loop (:meth:`watch`)."""

    def start(self, fn: Callable[..., Awaitable[None]], /, *args: Any) -> None:
        self.nursery.start_soon(fn, *args)

    def watch(self, listener: socket.socket, burst: Callable[[], float | None]) -> None:
        self.nursery.start_soon(self._watch, listener, burst)

    async def _watch(self, listener: socket.socket, burst: Callable[[], float | None]) -> None:
        """One-to-one's accept loop: a burst, then a wait (``stop`` cancels it)."""
        with self.watching:
            while True:
                pause = burst()
                if self.stopped:
                    return  # stop() came during the burst: the listener is closed
                if pause is None:
                    try:
                        await trio.lowlevel.wait_readable(listener)
                    except trio.ClosedResourceError:
                        return  # the scheduler stopped and closed it under the wait
                elif pause:
                    await trio.sleep(pause)
                else:
                    await trio.lowlevel.checkpoint()  # (the others get a turn)

    async def serve(self, sock: socket.socket, address: Any) -> None:
        await Connection(self.server, *prepared(sock, address)).run()

    def refuse(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.server.slots.refuse(sock, self.nursery)

    def spawn(self, sock: socket.socket, address: Any) -> None:
        sock, peer = prepared(sock, address)
        if not admit_at_once(self.server.slots, sock, peer):
            self.nursery.start_soon(self._admit_when_it_speaks, sock, peer)
        elif self.spares:  # the task that was serving a connection last (its frames are warm)
            task = self.spares.pop()
            # The context a new task would have (trio runs each step of a task in its
            # context: set while the task waits, it holds from the step that wakes it).
            task.context = contextvars.copy_context()
            reschedule(task, Value(Connection(self.server, sock, peer)))
        else:
            self.nursery.start_soon(self._serve, Connection(self.server, sock, peer))

    async def _admit_when_it_speaks(self, sock: socket.socket, peer: str) -> None:
        slots = self.server.slots
        try:
            admitted = await admit_when_it_speaks(slots, sock, peer)
        except BaseException:  # the server is stopping
            close_socket(sock)
            raise
        if admitted is None:
            close_socket(sock)
        elif not admitted:
            slots.refuse(sock, self.nursery)
        else:
            await self._serve(Connection(self.server, sock, peer))

    async def _serve(self, connection: Connection | None) -> None:
        """Serve ``connection``, then, as a spare, the connections ``spawn`` hands over."""
        while connection is not None:
            try:
                await connection.run()
            finally:
                connection.server.slots.release(connection)
            connection = await self._next_connection()

    async def _next_connection(self) -> Connection | None:
        """Wait as a spare for the next connection (None: the task ends, because the server
        is stopping or enough tasks are spare already)."""
        if self.stopped or len(self.spares) >= SPARE_TASKS:
            return None
        task = current_task()
        self.spares.append(task)

        def abort(_: object) -> Abort:  # cancelled while spare: the server's nursery ends
            self.spares.remove(task)
            return Abort.SUCCEEDED

        connection: Connection | None = await wait_task_rescheduled(abort)
        return connection

    def stop(self) -> None:
        self.stopped = True
        self.watching.cancel()
        spares, self.spares = self.spares, []
        for task in spares:
            reschedule(task, Value(None))
