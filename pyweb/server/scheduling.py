"""Hop's schedulers (Hop §2.4), written once for both loops: who accepts connections, how
many tasks serve them, when a newcomer is admitted, and what happens while every task is
busy. Each loop supplies only the I/O, a :class:`Driver` (``schedulers.py`` on trio,
``asyncio/schedulers.py`` on asyncio).

Hop's pipeline scheduler is "a class hierarchy whose root is an abstract class named
scheduler. Three methods accept, spawn, and stage implement the pipeline machinery." Its
default ``accept`` is a loop::

    (define-generic (accept S::scheduler serv)
       (let loop ()
          (let ((sock (socket-accept serv)))
             (spawn S stage-request sock 0)
             (loop))))

and each scheduler decides what ``spawn`` means. In pyweb every scheduler is a "row"
scheduler (Hop §2.4.2): one task runs all the stages of a connection in a row, so
``stage`` is a plain call and needs no method here.

* :class:`OneToOneScheduler`: "creates one new thread per connection" (§2.4.4); here the
  driver's :meth:`Driver.spawn`, a task (trio) or a protocol (asyncio) per connection,
  which is cheap, so this is the default. The connection limit is kept by
  :class:`~pyweb.server.slots.Slots`: the accept loop always accepts, and a newcomer at
  the limit takes the slot of a connection that is only waiting, or gets a fast 503.
* :class:`PoolScheduler`: "a pool of early created threads, and ... the accept loop is
  implemented inside each thread loop" (§2.4.5): ``pool_size`` long-lived tasks that each
  accept a connection and serve it to the end before accepting the next.
* :class:`NoThreadScheduler`: "waits for a new connection to be established, it then
  executes in sequence all the stages of the pipeline and it loops back" (§2.4.3): one
  connection at a time. Unrealistic for production, perfect for stepping through a
  request in a debugger.

The pool's waits go through the runtime seam (:mod:`pyweb.runtime`: ``wait_readable``,
``sleep``, ``Lock``, ``CancelScope``), so the same lines run on trio and on asyncio; the
one-to-one accept loop is a burst of accepts here, and the driver says how it waits for
the next (:meth:`Driver.watch`).
"""

from __future__ import annotations

import _socket
import socket
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from pyweb.runtime import current

from .accepting import (
    ACCEPT_PAUSE,
    ACCEPTS_IN_A_ROW,
    DOOR_PATIENCE,
    DOOR_PERIOD,
    Door,
    backlog,
    pauses_accepting,
)
from .slots import has_bytes

if TYPE_CHECKING:
    from pyweb.runtime.contract import Lock, Runtime, Scope

    from .host import Host
    from .slots import Slots

__all__ = [
    "ADMIT_RETRIES",
    "AcceptedSocket",
    "Driver",
    "NoThreadScheduler",
    "OneToOneScheduler",
    "PoolScheduler",
    "Scheduler",
    "accept_now",
    "admit_at_once",
    "admit_when_it_speaks",
    "make_scheduler",
]

ADMIT_RETRIES = 3
"""Scheduling rounds a newcomer at the limit waits for a slot, once its grace to speak is
over, before its fast 503 (connections accepted in the same burst may not have reached
their first wait yet, where they can be told apart: idle, silent, long-poll)."""


class Driver(Protocol):
    """What a loop supplies to the schedulers: where a connection goes once accepted.
    Nothing here decides; ``address`` is what ``accept`` returned."""

    def start(self, fn: Callable[..., Awaitable[None]], /, *args: Any) -> None:
        """Run ``fn(*args)`` as a task of the server."""

    def spawn(self, sock: socket.socket, address: Any) -> None:
        """One-to-one's ``spawn``: serve the connection beside the accept loop, without
        waiting for it (trio: a task; asyncio: a protocol)."""

    async def serve(self, sock: socket.socket, address: Any) -> None:
        """Serve the connection to its end in the calling task (pool, nothread)."""

    def refuse(self, sock: socket.socket) -> None:
        """Answer the fast 503 (``slots.py`` says how) and close."""

    def watch(self, listener: socket.socket, burst: Callable[[], float | None]) -> None:
        """Call ``burst()`` whenever ``listener`` is readable, until :meth:`stop`. What it
        returns says what next: None, wait until the listener is readable again; 0, more
        may be queued (go on once the others have had a turn); else pause that long."""

    def stop(self) -> None:
        """The scheduler stops: stop watching, and let go of whatever waits to serve a
        connection; nothing waits on the listener once this returns."""


class AcceptedSocket(socket.socket):
    """An accepted connection's socket whose ``family`` and ``type`` are plain ints.

    asyncio's ``loop.connect_accepted_socket`` reads them (three times); a
    ``socket.socket`` turns each into an enum member, which cost 18,000 instructions per
    connection, as much as the rest of the accept (docs/performance.md). These are the C
    socket's own attributes, the ints the enums are made from."""

    __slots__ = ()
    family = _socket.socket.family  # type: ignore[assignment]
    type = _socket.socket.type  # type: ignore[assignment]


def accept_now(listener: socket.socket) -> tuple[socket.socket, Any]:
    """The next connection queued on the non-blocking ``listener`` and its address (raises
    BlockingIOError when none is). ``_accept`` below ``socket.accept``: the wrapper's
    enums cost a third of an accept."""
    fd, address = listener._accept()  # type: ignore[attr-defined]
    plain: Any = super(socket.socket, listener)  # (the listener's family, type as ints)
    return AcceptedSocket(plain.family, plain.type, plain.proto, fileno=fd), address


def admit_at_once(slots: Slots, sock: socket.socket, peer: str) -> bool:
    """A newcomer gets a slot now: one is free, or the server is full and the newcomer
    has spoken already, so it may take the slot of a connection that only waits."""
    return slots.admit(peer) or (slots.full() and slots.admit(peer, has_bytes(sock)))


async def admit_when_it_speaks(slots: Slots, sock: socket.socket, peer: str) -> bool | None:
    """A newcomer at the limit, in a task of its own so the accept loop drains the backlog
    at once (a client that speaks must not queue behind a crowd of silent ones): wait for
    its request (``slots.py``), then it may take the slot of a connection that is only
    waiting. True: admitted; False: no slot after :data:`ADMIT_RETRIES` rounds (the fast
    503); None: silent for ``first_byte_timeout`` (closed, as it would be in a slot)."""
    if not await slots.wait_to_speak(sock):
        return None
    rt = current()
    for _ in range(ADMIT_RETRIES):
        if slots.admit(peer, speaking=True):
            return True
        await rt.cancel_shielded_checkpoint()
    return False


class Scheduler:
    """The abstract scheduler: :meth:`accept` starts the accept stage(s); :meth:`stop`
    ends them. A pool's task waiting at ``accept`` does so in :attr:`waiting`, a cancel
    scope that :meth:`stop` cancels; the listener is closed once nobody waits on it
    (asyncio must forget a descriptor before it is closed)."""

    name = "abstract"

    def __init__(self) -> None:
        self.stopped = False
        self.waiting: Scope | None = None
        self.listener: socket.socket | None = None
        self.driver: Driver | None = None

    async def accept(self, server: Host, driver: Driver) -> None:
        """Start accepting connections on ``server.listener``; return once the tasks that
        accept have been started. Hop's ``(accept S serv)``."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop accepting (graceful shutdown): connections being served go on."""
        self.stopped = True
        if self.driver is not None:
            self.driver.stop()
        if self.waiting is not None:
            self.waiting.cancel()  # (its task closes the listener when it has let go)
        else:
            self._close_listener()

    def _close_listener(self) -> None:
        listener = self.listener
        if listener is not None and listener.fileno() >= 0:
            # A task still waiting on it is woken first (the runtime's ClosedResourceError):
            # a loop must not watch a closed descriptor, whose number a new socket may take.
            current().notify_closing(listener)
            listener.close()

    def _begin(self, server: Host, driver: Driver) -> socket.socket:
        assert server.listener is not None, "the schedulers run while the server listens"
        self.listener, self.driver = server.listener, driver
        return server.listener

    def _pause_after(self, server: Host, exc: OSError) -> float:
        """accept() failed: how long to stop accepting. Out of file descriptors (EMFILE):
        log it and pause briefly, so connections can finish and free descriptors, instead
        of spinning or bringing the whole server down. A connection that failed before it
        was accepted (ECONNABORTED), or a shutdown: nothing to wait for."""
        if self.stopped or not pauses_accepting(exc):
            return 0.0
        if server.log is not None:
            server.log.error(f"accept failed: {exc}", exc=exc)
        return ACCEPT_PAUSE


class OneToOneScheduler(Scheduler):
    """One task per connection (Hop §2.4.4)::

    (define-method (spawn S::one-to-one-scheduler p . o)
       (letrec ((th (instantiate::hopthread (body (lambda () (apply p S th o))))))
          (thread-start! th)))

    When the listening socket is readable, :meth:`_burst` accepts every connection queued
    there (up to :data:`~pyweb.server.accepting.ACCEPTS_IN_A_ROW` before the others get a
    turn) and spawns each: a burst of connections is accepted in one go, their requests
    arrive together and their replies go out together (docs/performance.md). How the loop
    waits for the listener is the driver's (:meth:`Driver.watch`): a task on trio, a
    reader callback on asyncio (a task's wait there costs a future and a turn per burst)."""

    name = "one-to-one"

    async def accept(self, server: Host, driver: Driver) -> None:
        listener = self._begin(server, driver)
        driver.watch(listener, partial(self._burst, server, driver.spawn, listener))

    def _burst(
        self, server: Host, spawn: Callable[[socket.socket, Any], None], listener: socket.socket
    ) -> float | None:
        """Accept what is queued, each connection spawned at once; what next (see
        :meth:`Driver.watch`)."""
        for _ in range(ACCEPTS_IN_A_ROW):
            try:
                sock, address = accept_now(listener)
            except BlockingIOError:
                return None  # the queue is empty
            except OSError as exc:
                if pause := self._pause_after(server, exc):
                    return pause
                if self.stopped:
                    return None
                continue  # one connection failed before it was accepted: the next
            spawn(sock, address)
        return 0.0


class PoolScheduler(Scheduler):
    """``size`` long-lived tasks, each running the accept loop itself (Hop §2.4.5)::

        (define-method (accept S::pool-scheduler serv)
          (for (i 0 (pool-scheduler-size S))
             (spawn S stage-accept)))

    A persistent connection stays with the task that accepted it; the pool size is
    therefore also the number of connections served at once (at the limit, the
    :meth:`_door` makes the idle ones give way, or answers a fast 503 after
    :attr:`patience` seconds).

    Only one task may wait on a descriptor at a time (trio says so; on asyncio the loop
    would wake them all), so the tasks take turns at ``accept`` through
    :attr:`accept_lock`: the holder waits for the next connection, releases the lock and
    serves it while another task waits in accept. (Apache's prefork server does the same
    across processes with its "accept mutex".)"""

    name = "pool"
    patience: float | None = DOOR_PATIENCE
    """How long a newcomer waits in the backlog, with nobody to close, before the door's
    fast 503 (None: forever)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.accept_lock: Lock | None = None

    async def accept(self, server: Host, driver: Driver) -> None:
        self._begin(server, driver)
        self.accept_lock = current().Lock()
        for _ in range(self.size):
            driver.start(self._serve_in_a_row, server, driver)
        driver.start(self._door, server, driver)

    async def _serve_in_a_row(self, server: Host, driver: Driver) -> None:
        """Accept a connection, serve it to the end, accept the next (Hop's
        ``stage-accept``), until the scheduler stops."""
        rt = current()
        assert self.accept_lock is not None
        while not self.stopped:
            async with self.accept_lock:
                accepted = await self._accept_one(rt, server)
            if accepted is not None:
                await driver.serve(*accepted)

    async def _accept_one(self, rt: Runtime, server: Host) -> tuple[socket.socket, Any] | None:
        """The next connection (None: the scheduler stopped, or accept failed)."""
        listener = self.listener
        assert listener is not None
        while not self.stopped:
            try:
                return accept_now(listener)
            except BlockingIOError:
                await self._wait_at_accept(rt, listener)
            except OSError as exc:
                if pause := self._pause_after(server, exc):
                    await rt.sleep(pause)
                return None
        return None

    async def _wait_at_accept(self, rt: Runtime, listener: socket.socket) -> None:
        self.waiting = scope = rt.CancelScope()
        try:
            with scope:
                await rt.wait_readable(listener)
        finally:
            self.waiting = None
        if self.stopped:
            self._close_listener()

    async def _door(self, server: Host, driver: Driver) -> None:
        """The pool's and nothread's fixed number of tasks is their connection limit, and
        a newcomer would wait in the listen backlog until one of them was free, for as
        long as idle keep-alive connections held them all. While every task is busy (none
        holds the lock at ``accept``) and a newcomer waits in the backlog, the door
        closes the connection waiting longest (idle first, as
        :class:`~pyweb.server.slots.Slots` does for one-to-one), whose task then accepts
        the newcomer; with nothing to close for :attr:`patience` seconds, it answers the
        newcomers with the fast 503 itself (never for nothread, whose point is one
        request at a time)."""
        rt = current()
        listener, lock = self.listener, self.accept_lock
        assert listener is not None and lock is not None
        door = Door(self.patience)
        while not self.stopped:
            await rt.sleep(DOOR_PERIOD)
            stuck = not lock.locked() and backlog(listener)  # (a task at accept holds it)
            if not door.turn_away(stuck, server.slots, rt.now()):
                continue
            while backlog(listener):
                try:
                    sock, _ = accept_now(listener)
                except OSError:  # (a task took it meanwhile, or out of descriptors)
                    break
                driver.refuse(sock)


class NoThreadScheduler(PoolScheduler):
    """One connection at a time, every stage in sequence, no concurrency (Hop §2.4.3):
    ``spawn`` is a plain call. A pool of one whose door never answers 503 (one request at
    a time is the point)."""

    name = "nothread"
    patience = None

    def __init__(self) -> None:
        super().__init__(1)


def make_scheduler(name: str, *, pool_size: int = 16, max_connections: int = 1000) -> Scheduler:
    """The scheduler called ``name`` (Hop's ``(case (scheduling-strategy) ...)``), the
    same on both loops."""
    if name == "one-to-one":
        return OneToOneScheduler()
    if name == "pool":
        return PoolScheduler(min(pool_size, max_connections))
    if name == "nothread":
        return NoThreadScheduler()
    raise ValueError(f"unknown scheduler {name!r}")
