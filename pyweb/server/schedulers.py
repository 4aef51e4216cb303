"""Schedulers: who accepts connections and which task serves them (Hop §2.4).

Hop's pipeline scheduler is "a class hierarchy whose root is an abstract class named
scheduler. Three methods accept, spawn, and stage implement the pipeline machinery." Its
default ``accept`` is a loop::

    (define-generic (accept S::scheduler serv)
       (let loop ()
          (let ((sock (socket-accept serv)))
             (spawn S stage-request sock 0)
             (loop))))

and each scheduler decides what ``spawn`` means. pyweb keeps the vocabulary with trio
tasks in place of threads. In pyweb every scheduler is a "row" scheduler (Hop §2.4.2): one
task runs all the stages of a connection in a row (:meth:`Connection.run`), so ``stage``
is a plain call and needs no method here.

* :class:`OneToOneScheduler`: "creates one new thread per connection" (§2.4.4); here a
  trio task per connection, which is cheap, so this is the default.
* :class:`PoolScheduler`: "a pool of early created threads, and ... the accept loop is
  implemented inside each thread loop" (§2.4.5): ``pool_size`` long-lived tasks that each
  accept a connection and serve it to the end before accepting the next.
* :class:`NoThreadScheduler`: "waits for a new connection to be established, it then
  executes in sequence all the stages of the pipeline and it loops back" (§2.4.3): one
  connection at a time. Unrealistic for production, perfect for stepping through a request
  in a debugger.

The connection limit (Marlow's server caps its connections too) is kept by
:class:`~pyweb.server.slots.Slots`: the one-to-one scheduler always accepts, and a newcomer
at the limit takes the slot of a connection that is only waiting, or gets a fast 503. (It
used to stop accepting at the limit and leave newcomers in the kernel's listen backlog,
where idle and slow connections could keep them for as long as they liked.)
"""

from __future__ import annotations

import contextvars
import socket
from typing import TYPE_CHECKING

import trio
from outcome import Value
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from .accepting import (
    ACCEPT_PAUSE,
    ACCEPTS_IN_A_ROW,
    DOOR_PATIENCE,
    DOOR_PERIOD,
    Door,
    backlog,
    pauses_accepting,
)
from .connection import Connection
from .listener import accept as socket_accept
from .listener import close_socket
from .slots import has_bytes

if TYPE_CHECKING:
    from .host import Host

ADMIT_RETRIES = 3
"""Scheduling rounds a newcomer at the limit waits for a slot, once its grace to speak is
over, before its fast 503 (connections accepted in the same burst may not have reached
their first wait yet, where they can be told apart: idle, silent, long-poll)."""
SPARE_TASKS = 64
"""Tasks of finished connections kept to serve the next ones (:class:`OneToOneScheduler`)."""

__all__ = ["Scheduler", "OneToOneScheduler", "PoolScheduler", "NoThreadScheduler", "make_scheduler"]


async def _accept_failed(server: Host, exc: BaseException) -> None:
    """accept() failed without a shutdown. Out of file descriptors (EMFILE): log it and
    pause briefly, so connections can finish and free descriptors, instead of spinning or
    bringing the whole server down. A connection that failed before it was accepted
    (ECONNABORTED): nothing to wait for, the next one is accepted at once."""
    if not pauses_accepting(exc):
        return
    if server.log is not None:
        server.log.error(f"accept failed: {exc}", exc=exc)
    await trio.sleep(ACCEPT_PAUSE)


class Scheduler:
    """The abstract scheduler: :meth:`accept` runs the accept stage(s) in ``nursery``."""

    name = "abstract"

    async def accept(self, server: Host, nursery: trio.Nursery) -> None:
        """Start accepting connections on ``server.listener``; return once the tasks that
        accept have been started. Hop's ``(accept S serv)``."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop accepting (graceful shutdown): the tasks that accept end."""
        raise NotImplementedError

    @staticmethod
    async def serve_connections_in_a_row(server: Host, accept_lock: trio.Lock) -> None:
        """Accept a connection, serve it to the end, accept the next: the loop that the pool
        and nothread schedulers run in each of their tasks (Hop's ``stage-accept``).

        trio lets only one task wait on a file descriptor at a time, so the tasks of a pool
        take turns at ``accept`` through ``accept_lock``: the holder waits for the next
        connection, releases the lock and serves it while another task waits in accept.
        (Apache's prefork server does the same across processes with its "accept mutex".)
        """
        listener = server.listener
        assert listener is not None, "the schedulers run while the server listens"
        while not server.closing:  # (shutdown closes the listener: accept raises)
            try:
                async with accept_lock:
                    if server.closing:
                        return
                    accepted = await socket_accept(listener)
            except (trio.ClosedResourceError, OSError) as exc:
                if server.closing:
                    return  # shutdown closed the listener under us
                await _accept_failed(server, exc)
                continue
            await Connection(server, *accepted).run()


class OneToOneScheduler(Scheduler):
    """One task per connection (Hop §2.4.4)::

    (define-method (spawn S::one-to-one-scheduler p . o)
       (letrec ((th (instantiate::hopthread (body (lambda () (apply p S th o))))))
          (thread-start! th)))

    A task whose connection has ended is not thrown away at once: up to
    :data:`SPARE_TASKS` of them wait as *spares*, and ``spawn`` hands the next connection
    to one (Hop's pool of threads, §2.4.5, as a cache in front of ``thread-start!``).
    Starting a trio task and ending it cost about 20,000 instructions more than waking a
    spare (docs/performance.md): a server that gets a connection per request pays that for
    each. A spare serves its connection in a fresh copy of the accept loop's context, as a
    new task would: nothing a page put in a ``ContextVar`` is seen by the next connection.
    """

    name = "one-to-one"

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections  # (the server's Slots keep the count)
        self.cancel_scope = trio.CancelScope()
        self.spares: list[Task] = []
        """Tasks waiting for a connection to serve, the one that ended last at the end."""
        self.stopped = False

    async def accept(self, server: Host, nursery: trio.Nursery) -> None:
        nursery.start_soon(self._accept_loop, server, nursery)

    async def _accept_loop(self, server: Host, nursery: trio.Nursery) -> None:
        listener = server.listener
        assert listener is not None, "the schedulers run while the server listens"
        slots = server.slots
        in_a_row = 0
        with self.cancel_scope:
            while True:
                try:
                    sock, peer = await socket_accept(listener)
                except (trio.ClosedResourceError, OSError) as exc:
                    if server.closing:
                        return  # shutdown closed the listener (and cancels this scope)
                    await _accept_failed(server, exc)
                    continue
                if slots.admit(peer) or (slots.full() and slots.admit(peer, has_bytes(sock))):
                    self.spawn(nursery, Connection(server, sock, peer))
                else:
                    # Full of connections that may not be told apart yet: the newcomer
                    # waits for a slot in a task of its own, so the accept loop drains
                    # the backlog at once (a client that speaks must not queue behind a
                    # crowd of silent ones).
                    nursery.start_soon(self._admit_when_it_speaks, server, nursery, sock, peer)
                in_a_row += 1
                if in_a_row >= ACCEPTS_IN_A_ROW:
                    in_a_row = 0
                    await trio.lowlevel.checkpoint()

    async def _admit_when_it_speaks(
        self, server: Host, nursery: trio.Nursery, sock: socket.socket, peer: str
    ) -> None:
        """A newcomer at the limit waits for its request (slots.py), then may take the
        slot of a connection that is only waiting; none after a few scheduling rounds:
        the fast 503. Silent for ``first_byte_timeout``: closed, as it would be in a slot."""
        slots = server.slots
        try:
            if not await slots.wait_to_speak(sock):
                close_socket(sock)
                return
            for _ in range(ADMIT_RETRIES):
                if slots.admit(peer, speaking=True):
                    break
                await trio.lowlevel.checkpoint()
            else:
                slots.refuse(sock, nursery)
                return
        except BaseException:  # the server is stopping
            close_socket(sock)
            raise
        await self._serve(Connection(server, sock, peer))

    def spawn(self, nursery: trio.Nursery, connection: Connection) -> None:
        if self.spares:  # the task that was serving a connection last (its frames are warm)
            task = self.spares.pop()
            # The context a new task would have (trio runs each step of a task in its
            # context: set while the task waits, it holds from the step that wakes it).
            task.context = contextvars.copy_context()
            reschedule(task, Value(connection))
        else:
            nursery.start_soon(self._serve, connection)

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
        self.cancel_scope.cancel()
        self.stopped = True
        spares, self.spares = self.spares, []
        for task in spares:
            reschedule(task, Value(None))


async def _door(
    server: Host, nursery: trio.Nursery, accept_lock: trio.Lock, patience: float | None
) -> None:
    """The pool's and nothread's fixed number of tasks is their connection limit, and a
    newcomer used to wait in the listen backlog until one of them was free, for as long as
    idle keep-alive connections held them all. While every task is busy (none waits at
    ``accept``) and a newcomer waits in the backlog, the door closes the connection waiting
    longest (idle first, as :class:`~pyweb.server.slots.Slots` does for one-to-one), whose
    task then accepts the newcomer; with nothing to close for ``patience`` seconds, it
    answers the newcomers with the fast 503 itself (``None``: never, for nothread, whose
    point is one request at a time)."""
    listener = server.listener
    assert listener is not None, "the schedulers run while the server listens"
    slots = server.slots
    door = Door(patience)
    while not server.closing:
        await trio.sleep(DOOR_PERIOD)
        stuck = not accept_lock.locked() and backlog(listener)  # (a task at accept holds it)
        if door.turn_away(stuck, slots, trio.current_time()):
            while backlog(listener):
                try:
                    sock, _ = listener.accept()
                except OSError:  # (a task took it meanwhile, or out of descriptors)
                    break
                sock.setblocking(False)
                slots.refuse(sock, nursery)


class PoolScheduler(Scheduler):
    """``size`` long-lived tasks, each running the accept loop itself (Hop §2.4.5)::

        (define-method (accept S::pool-scheduler serv)
          (for (i 0 (pool-scheduler-size S))
             (spawn S stage-accept)))

    A persistent connection stays with the task that accepted it; the pool size is
    therefore also the number of connections served at once (at the limit, the
    :func:`_door` makes the idle ones give way, or answers a fast 503 after a second).
    """

    name = "pool"

    def __init__(self, size: int) -> None:
        self.size = size
        self.accept_lock = trio.Lock()

    async def accept(self, server: Host, nursery: trio.Nursery) -> None:
        for _ in range(self.size):
            self.spawn(nursery, server)
        nursery.start_soon(_door, server, nursery, self.accept_lock, DOOR_PATIENCE)

    def spawn(self, nursery: trio.Nursery, server: Host) -> None:
        nursery.start_soon(self.serve_connections_in_a_row, server, self.accept_lock)

    def stop(self) -> None:
        pass  # closing the listener wakes every accepting task


class NoThreadScheduler(Scheduler):
    """One connection at a time, every stage in sequence, no concurrency (Hop §2.4.3):
    ``spawn`` is a plain call."""

    name = "nothread"

    async def accept(self, server: Host, nursery: trio.Nursery) -> None:
        accept_lock = trio.Lock()
        nursery.start_soon(self.serve_connections_in_a_row, server, accept_lock)
        nursery.start_soon(_door, server, nursery, accept_lock, None)

    def stop(self) -> None:
        pass  # closing the listener wakes the accepting task


def make_scheduler(name: str, *, pool_size: int = 16, max_connections: int = 1000) -> Scheduler:
    """The scheduler called ``name`` (Hop's ``(case (scheduling-strategy) ...)``)."""
    if name == "one-to-one":
        return OneToOneScheduler(max_connections)
    if name == "pool":
        return PoolScheduler(min(pool_size, max_connections))
    if name == "nothread":
        return NoThreadScheduler()
    raise ValueError(f"unknown scheduler {name!r}")
