"""Hop's schedulers (Hop §2.4) on the asyncio server: only the I/O. What each scheduler
decides (who accepts, how many tasks, the door) is ``scheduling.py``, the same on both
loops; this is where an accepted connection goes on asyncio (:class:`AioDriver`).

Each accepted socket becomes an :class:`~pyweb.server.asyncio.HttpProtocol` through
``loop.connect_accepted_socket``, which is given the socket too (the protocol half-closes
it after its last reply: ``HttpProtocol.close_after_reply``); the protocol takes its
connection slot itself (``slots.py``):

* ``spawn`` (one-to-one): the connection is handed to the loop at once, its
  ``connect_accepted_socket`` run by hand (:func:`_run_by_hand`), so a burst of queued
  connections is accepted in one go. Not ``loop.create_server``: libuv, under uvloop,
  accepts one connection per turn of the loop; a server answering one request per
  connection then answers one per turn, each reply alone, and a client waiting for many
  replies is woken for each of them (on the peer benchmark's one-connection-per-request
  run that halved the requests a second: docs/performance.md);
* ``serve`` (pool, nothread): the task waits until the connection has closed and its last
  request is done (``HttpProtocol.finished``), then accepts the next;
* ``refuse``: the door's fast 503, by a protocol that lingers (:class:`_Refused`).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

from ..scheduling import Driver
from ..slots import LINGER
from .slots import refuse

if TYPE_CHECKING:
    from ..host import Host

__all__ = ["Accepted", "AioDriver"]


class Accepted(asyncio.Protocol):
    """A connection's protocol as the schedulers see it: a pool's task serves one, then
    accepts the next once it is :meth:`finished` (``connection.py``'s ``HttpProtocol`` is one)."""

    async def finished(self) -> None:
        """Wait until the connection has closed and its last request is done."""
        raise NotImplementedError


Protocols = Callable[[socket.socket], Accepted]
"""Makes the protocol of a new connection from its socket (the server's ``lambda sock:
HttpProtocol(server, sock)``)."""


class AioDriver(Driver):
    """The schedulers' I/O on asyncio: tasks and transports of the server's loop."""

    def __init__(self, server: Host, protocols: Protocols) -> None:
        self.server = server
        self.protocols = protocols
        self.loop = asyncio.get_running_loop()
        self.tasks: set[asyncio.Task[None]] = set()
        self.listener: socket.socket | None = None
        """The listener :meth:`watch` watches (one-to-one)."""
        self.burst: Callable[[], float | None] | None = None
        self.pause: asyncio.TimerHandle | None = None
        self.stopped = False

    def start(self, fn: Callable[..., Awaitable[None]], /, *args: Any) -> None:
        task: asyncio.Task[None] = self.loop.create_task(fn(*args))  # type: ignore[arg-type]
        self.tasks.add(task)  # (the loop keeps only a weak reference to a task)
        task.add_done_callback(self.tasks.discard)

    def watch(self, listener: socket.socket, burst: Callable[[], float | None]) -> None:
        self.listener, self.burst = listener, burst
        self.loop.add_reader(listener.fileno(), self._readable)

    def _readable(self) -> None:
        assert self.burst is not None and self.listener is not None
        pause = self.burst()
        if pause:  # (None, 0: the reader stays, called again while connections are queued)
            self.loop.remove_reader(self.listener.fileno())
            self.pause = self.loop.call_later(pause, self._resume)

    def _resume(self) -> None:
        if not self.stopped and self.listener is not None:
            self.loop.add_reader(self.listener.fileno(), self._readable)

    def spawn(self, sock: socket.socket, address: Any) -> None:
        connect = self.loop.connect_accepted_socket(partial(self.protocols, sock), sock)
        _run_by_hand(connect)

    async def serve(self, sock: socket.socket, address: Any) -> None:
        try:
            connect = self.loop.connect_accepted_socket(partial(self.protocols, sock), sock)
            _, protocol = await connect
        except OSError:  # (the client has already reset the connection)
            sock.close()
            return
        await protocol.finished()

    def refuse(self, sock: socket.socket) -> None:
        slots = self.server.slots
        _run_by_hand(self.loop.connect_accepted_socket(lambda: _Refused(slots), sock))

    def stop(self) -> None:
        self.stopped = True
        if self.pause is not None:
            self.pause.cancel()
        if self.listener is not None and self.listener.fileno() >= 0:
            self.loop.remove_reader(self.listener.fileno())


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
