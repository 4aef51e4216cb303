"""Hop's pluggable schedulers (Hop §2.4, "Hop pipeline scheduler") on the asyncio server.

``--scheduler`` means the same on both loops (``schedulers.py`` is the trio side, and
explains the names):

* :class:`AioOneToOne` (the default): the loop's own accept loop
  (``loop.create_server``) makes a protocol per connection, and the protocol a task for its
  requests; the connection slots (``slots.py``) hold the limit;
* :class:`AioPool`: ``pool_size`` long-lived tasks that each accept a connection
  (``loop.sock_accept``), serve it to the end and accept the next (Hop §2.4.5), taking
  turns at ``accept`` through a lock as on trio (one waiter per socket);
* :class:`AioNoThread`: one such task: one connection at a time (Hop §2.4.3).

Each accepted socket becomes the same :class:`~pyweb.server.aio.HttpProtocol` as with
one-to-one (``loop.connect_accepted_socket``); the task then waits until the connection
has closed and its last request is done (``HttpProtocol.finished``). While every task is
busy, the same door as on trio (``schedulers.Door``'s decision, here in :func:`_door`) closes
the connection waiting longest for a newcomer in the backlog, and the pool answers the
fast 503 after :data:`~pyweb.server.schedulers.DOOR_PATIENCE`.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .aio_slots import refuse
from .schedulers import DOOR_PATIENCE, DOOR_PERIOD, Door, _backlog
from .slots import LINGER

if TYPE_CHECKING:
    from .aio import AsyncioServer, HttpProtocol

__all__ = ["AioScheduler", "AioOneToOne", "AioPool", "AioNoThread", "make_aio_scheduler"]

Protocols = Callable[[], "HttpProtocol"]
"""Makes the protocol of a new connection (the server's ``lambda: HttpProtocol(server)``)."""


class AioScheduler:
    """Starts accepting on ``server.listener`` (:meth:`start`) and stops (:meth:`stop`)."""

    name = "abstract"

    async def start(self, server: AsyncioServer, protocols: Protocols) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Stop accepting and close the listening socket (graceful shutdown)."""
        raise NotImplementedError


class AioOneToOne(AioScheduler):
    """A protocol per connection, accepted by the loop itself (Hop §2.4.4)."""

    name = "one-to-one"

    def __init__(self) -> None:
        self.aio_server: asyncio.base_events.Server | None = None

    async def start(self, server: AsyncioServer, protocols: Protocols) -> None:
        assert server.listener is not None, "the schedulers run while the server listens"
        self.aio_server = await asyncio.get_running_loop().create_server(
            protocols, sock=server.listener, backlog=server.config.backlog
        )

    def stop(self) -> None:
        if self.aio_server is not None:
            self.aio_server.close()


class AioPool(AioScheduler):
    """``size`` tasks, each accepting and serving connections in a row (Hop §2.4.5)."""

    name = "pool"
    patience: float | None = DOOR_PATIENCE
    """How long a newcomer waits in the backlog, with nobody to close, before the door's
    fast 503 (None: forever)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.accept_lock = asyncio.Lock()
        self.tasks: set[asyncio.Task[None]] = set()
        self.accepting: asyncio.Task[None] | None = None
        """The task waiting in ``accept`` (it holds the lock), if any."""
        self.listener: socket.socket | None = None

    async def start(self, server: AsyncioServer, protocols: Protocols) -> None:
        self.listener = server.listener
        loop = asyncio.get_running_loop()
        for _ in range(self.size):
            self._spawn(loop.create_task(self._serve_in_a_row(server, protocols)))
        self._spawn(loop.create_task(_door(server, self.accept_lock, self.patience)))

    def _spawn(self, task: asyncio.Task[None]) -> None:
        self.tasks.add(task)  # (the loop keeps only a weak reference to a task)
        task.add_done_callback(self.tasks.discard)

    async def _serve_in_a_row(self, server: AsyncioServer, protocols: Protocols) -> None:
        """Accept a connection, serve it to the end, accept the next (Hop's
        ``stage-accept``), until the server stops."""
        loop = asyncio.get_running_loop()
        listener = server.listener
        assert listener is not None, "the schedulers run while the server listens"
        while not server.closing:
            async with self.accept_lock:
                if server.closing:
                    return
                self.accepting = asyncio.current_task()
                try:
                    sock, _ = await loop.sock_accept(listener)
                except OSError as exc:  # out of descriptors (EMFILE): log, pause, go on
                    if server.log is not None:
                        server.log.error(f"accept failed: {exc}", exc=exc)
                    await asyncio.sleep(0.1)
                    continue
                finally:
                    self.accepting = None
            try:
                _, protocol = await loop.connect_accepted_socket(protocols, sock)
            except OSError:  # (the client has already reset the connection)
                sock.close()
                continue
            await protocol.finished()

    def stop(self) -> None:
        # The task waiting in accept is cancelled (the others see ``server.closing`` when
        # their connection ends); the listener is closed once it has stopped waiting.
        accepting = self.accepting
        listener = self.listener
        if accepting is not None:
            accepting.cancel()
            if listener is not None:
                accepting.add_done_callback(lambda _: listener.close())
        elif listener is not None:
            listener.close()


class AioNoThread(AioPool):
    """One connection at a time, every stage in sequence (Hop §2.4.3): a pool of one,
    whose door never answers 503 (one request at a time is the point)."""

    name = "nothread"
    patience = None

    def __init__(self) -> None:
        super().__init__(1)


async def _door(server: AsyncioServer, accept_lock: asyncio.Lock, patience: float | None) -> None:
    """While every task is busy (none holds ``accept_lock``) and a newcomer waits in the
    backlog, close the connection waiting longest (idle first: slots.py), whose task then
    accepts the newcomer; with nothing to close for ``patience`` seconds, answer the
    newcomers with the fast 503 (schedulers.py's door, on this loop)."""
    loop = asyncio.get_running_loop()
    listener = server.listener
    assert listener is not None, "the schedulers run while the server listens"
    slots = server.slots
    door = Door(patience)
    while not server.closing:
        await asyncio.sleep(DOOR_PERIOD)
        stuck = not accept_lock.locked() and _backlog(listener)  # (a task at accept holds it)
        if door.turn_away(stuck, slots, loop.time()):
            while _backlog(listener):
                try:
                    sock, _ = listener.accept()
                except OSError:  # (a task took it meanwhile, or out of descriptors)
                    break
                await loop.connect_accepted_socket(lambda: _Refused(slots), sock)


class _Refused(asyncio.Protocol):
    """A newcomer the door turns away: the fast 503, then what it sends is dropped until
    it closes or :data:`~pyweb.server.slots.LINGER` passes (aio_slots.refuse says why)."""

    def __init__(self, slots: Any) -> None:
        self.slots = slots
        self.lingering = False
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        self.lingering = refuse(self.slots, transport)
        if self.lingering:
            self.timer = asyncio.get_running_loop().call_later(LINGER, transport.close)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.lingering:
            self.lingering = False
            self.slots.lingering -= 1
        if self.timer is not None:
            self.timer.cancel()


def make_aio_scheduler(name: str, *, pool_size: int = 16, max_connections: int = 1000) -> AioScheduler:
    """The asyncio scheduler called ``name`` (the names of :func:`schedulers.make_scheduler`)."""
    if name == "one-to-one":
        return AioOneToOne()
    if name == "pool":
        return AioPool(min(pool_size, max_connections))
    if name == "nothread":
        return AioNoThread()
    raise ValueError(f"unknown scheduler {name!r}")
