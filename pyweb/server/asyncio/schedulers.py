"""Hop's pluggable schedulers (Hop §2.4, "Hop pipeline scheduler") on the asyncio server.

``--scheduler`` means the same on both loops (``schedulers.py`` is the trio side, and
explains the names):

* :class:`AioOneToOne` (the default): a protocol per connection, and the protocol a task
  for its requests; the connection slots (``slots.py``) hold the limit. It accepts by
  itself, every queued connection at once (:meth:`AioOneToOne._accept_burst`), as the trio
  server does: the loop's own accept loop (``loop.create_server``; libuv's, on uvloop)
  takes one connection per turn of the loop, which under load serves one new connection
  per turn and wakes the client once per reply (docs/performance.md measures it);
* :class:`AioPool`: ``pool_size`` long-lived tasks that each accept a connection
  (``loop.sock_accept``), serve it to the end and accept the next (Hop §2.4.5), taking
  turns at ``accept`` through a lock as on trio (one waiter per socket);
* :class:`AioNoThread`: one such task: one connection at a time (Hop §2.4.3).

Each accepted socket becomes an :class:`~pyweb.server.asyncio.HttpProtocol` through
``loop.connect_accepted_socket``, which is given the socket too (the protocol half-closes
it after its last reply: ``HttpProtocol.close_after_reply``); the pool's task then waits
until the connection
has closed and its last request is done (``HttpProtocol.finished``). While every task is
busy, the same door as on trio (``accepting.Door``'s decision, here in :func:`_door`) closes
the connection waiting longest for a newcomer in the backlog, and the pool answers the
fast 503 after :data:`~pyweb.server.accepting.DOOR_PATIENCE`.
"""

from __future__ import annotations

import _socket
import asyncio
import socket
from collections.abc import Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

from ..accepting import (
    ACCEPT_PAUSE,
    ACCEPTS_IN_A_ROW,
    DOOR_PATIENCE,
    DOOR_PERIOD,
    Door,
    backlog,
    pauses_accepting,
)
from ..slots import LINGER
from .slots import refuse

if TYPE_CHECKING:
    from ..host import Host

__all__ = [
    "Accepted", "AioScheduler", "AioOneToOne", "AioPool", "AioNoThread", "make_aio_scheduler"
]  # fmt: skip


class Accepted(asyncio.Protocol):
    """A connection's protocol as the schedulers see it: a pool's task serves one, then
    accepts the next once it is :meth:`finished` (``connection.py``'s ``HttpProtocol`` is one)."""

    async def finished(self) -> None:
        """Wait until the connection has closed and its last request is done."""
        raise NotImplementedError


Protocols = Callable[[socket.socket], Accepted]
"""Makes the protocol of a new connection from its socket (the server's ``lambda sock:
HttpProtocol(server, sock)``)."""

class AioScheduler:
    """Starts accepting on ``server.listener`` (:meth:`start`) and stops (:meth:`stop`)."""

    name = "abstract"

    async def start(self, server: Host, protocols: Protocols) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        """Stop accepting and close the listening socket (graceful shutdown)."""
        raise NotImplementedError


class AioOneToOne(AioScheduler):
    """A protocol per connection (Hop §2.4.4), accepted in bursts.

    When the listening socket is readable, :meth:`_accept_burst` accepts every connection
    queued there (up to :data:`~pyweb.server.accepting.ACCEPTS_IN_A_ROW`, as trio's accept
    loop does) and hands each to the loop as a transport with its protocol. Not
    ``loop.create_server``: libuv, under uvloop, accepts one connection per turn of the
    loop. A server answering one request per connection then answers one per turn, each
    reply alone, and a client waiting for many replies is woken for each of them; on the
    peer benchmark's one-connection-per-request run that halved the requests a second
    (docs/performance.md). In bursts, the connections' requests arrive together, their
    replies go out together, and each turn's fixed costs are shared."""

    name = "one-to-one"

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.listener: socket.socket | None = None
        self.protocols: Protocols | None = None
        self.server: Host | None = None
        self.stopped = False

    async def start(self, server: Host, protocols: Protocols) -> None:
        assert server.listener is not None, "the schedulers run while the server listens"
        self.loop = asyncio.get_running_loop()
        self.listener, self.protocols, self.server = server.listener, protocols, server
        self.loop.add_reader(server.listener.fileno(), self._accept_burst)

    def _accept_burst(self) -> None:
        """The listening socket is readable: accept what is queued, each connection handed
        to the loop at once (its ``connection_made`` comes in the loop's next turn)."""
        listener, protocols, loop = self.listener, self.protocols, self.loop
        assert listener is not None and protocols is not None and loop is not None
        for _ in range(ACCEPTS_IN_A_ROW):
            try:
                sock = accept_now(listener)
            except BlockingIOError:
                return  # the queue is empty
            except OSError as exc:
                if pauses_accepting(exc):  # (EMFILE...): log, pause, go on
                    self._accept_failed(exc)
                    return
                continue  # one connection failed before it was accepted: the next
            _run_by_hand(loop.connect_accepted_socket(partial(protocols, sock), sock))

    def _accept_failed(self, exc: OSError) -> None:
        """accept() failed: stop accepting for :data:`ACCEPT_PAUSE` (instead of spinning on
        a listener that stays readable), then start again unless the server has stopped."""
        server, loop, listener = self.server, self.loop, self.listener
        assert server is not None and loop is not None and listener is not None
        if server.log is not None:
            server.log.error(f"accept failed: {exc}", exc=exc)
        loop.remove_reader(listener.fileno())
        loop.call_later(ACCEPT_PAUSE, self._resume)

    def _resume(self) -> None:
        if not self.stopped and self.loop is not None and self.listener is not None:
            self.loop.add_reader(self.listener.fileno(), self._accept_burst)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        listener, loop = self.listener, self.loop
        if listener is not None and loop is not None:
            if listener.fileno() >= 0:
                loop.remove_reader(listener.fileno())
            listener.close()


class AcceptedSocket(socket.socket):
    """An accepted connection's socket whose ``family`` and ``type`` are plain ints.

    ``loop.connect_accepted_socket`` reads them (three times); a ``socket.socket`` turns
    each into an enum member, which cost 18,000 instructions per connection, as much as
    the rest of the accept (docs/performance.md). These are the C socket's own
    attributes, the ints the enums are made from."""

    __slots__ = ()
    family = _socket.socket.family  # type: ignore[assignment]
    type = _socket.socket.type  # type: ignore[assignment]


def accept_now(listener: socket.socket) -> socket.socket:
    """The next connection queued on the non-blocking ``listener``, as a socket (raises
    BlockingIOError when none is). ``_accept`` below ``socket.accept``, as
    ``listener.accept`` on trio does (the wrapper's enums cost a third of an accept)."""
    fd, _ = listener._accept()  # type: ignore[attr-defined]
    plain: Any = super(socket.socket, listener)  # (the listener's family, type as ints)
    return AcceptedSocket(plain.family, plain.type, plain.proto, fileno=fd)


def _run_by_hand(coro: Coroutine[Any, Any, Any]) -> None:
    """Run ``coro`` (``loop.connect_accepted_socket``) to its end without a task of its own.

    ``connect_accepted_socket`` makes the transport and its protocol at once, then waits
    for the loop to call ``connection_made``, and returns. A task per connection for that
    one wait cost more than the rest of the accept; this does what the task would: send
    into the coroutine, and when it waits on a future, go on when the future is done. A
    connection that failed meanwhile (reset by the client before ``connection_made``) has
    been closed by the coroutine itself: nothing is left to do."""

    def step(_: object = None) -> None:
        try:
            waiter = coro.send(None)
        except StopIteration:
            return  # the connection is made; its protocol has it from here
        except Exception:  # noqa: BLE001 - closed by connect_accepted_socket already
            return
        waiter.add_done_callback(step)

    step()


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

    async def start(self, server: Host, protocols: Protocols) -> None:
        self.listener = server.listener
        loop = asyncio.get_running_loop()
        for _ in range(self.size):
            self._spawn(loop.create_task(self._serve_in_a_row(server, protocols)))
        self._spawn(loop.create_task(_door(server, self.accept_lock, self.patience)))

    def _spawn(self, task: asyncio.Task[None]) -> None:
        self.tasks.add(task)  # (the loop keeps only a weak reference to a task)
        task.add_done_callback(self.tasks.discard)

    async def _serve_in_a_row(self, server: Host, protocols: Protocols) -> None:
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
                except OSError as exc:
                    if pauses_accepting(exc):  # out of descriptors (EMFILE): log, pause
                        if server.log is not None:
                            server.log.error(f"accept failed: {exc}", exc=exc)
                        await asyncio.sleep(ACCEPT_PAUSE)
                    continue
                finally:
                    self.accepting = None
            try:
                _, protocol = await loop.connect_accepted_socket(partial(protocols, sock), sock)
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


async def _door(server: Host, accept_lock: asyncio.Lock, patience: float | None) -> None:
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
        stuck = not accept_lock.locked() and backlog(listener)  # (a task at accept holds it)
        if door.turn_away(stuck, slots, loop.time()):
            while backlog(listener):
                try:
                    sock, _ = listener.accept()
                except OSError:  # (a task took it meanwhile, or out of descriptors)
                    break
                await loop.connect_accepted_socket(lambda: _Refused(slots), sock)


class _Refused(asyncio.Protocol):
    """A newcomer the door turns away: the fast 503, then what it sends is dropped until
    it closes or :data:`~pyweb.server.slots.LINGER` passes (slots.refuse says why)."""

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
