"""Connection slots that no slow client, idle crowd or flood can take over.

The server serves at most ``max_connections`` connections at once (Marlow §7.2 caps them
too). The simple policy, "stop accepting at the limit and let the kernel queue the rest",
gives every slot to whoever holds it: 2,000 idle connections, 1,000 long-polls or a
stream of reconnects kept the slots full, and a normal client waited 9-20 s in the listen
backlog. :class:`Slots` decides who gets a slot, as nginx does:

* **idle first out.** A connection waiting for its next request (an idle keep-alive
  connection, or a fresh one that has sent nothing yet) holds its slot only while nobody
  else needs it: when a new connection's request arrives at the limit, the connection that
  has been idle longest is closed to make room (it has no request in progress: nothing is
  lost, a browser simply reconnects next time). A connection that has sent nothing at all
  also gets a short deadline of its own (``first_byte_timeout``), not the header timeout;
* **a crowd does not come back together.** While many connections are idle (or silent),
  their timeouts are spread (up to twice ``keepalive_timeout``, ``first_byte_timeout``):
  those opened together would otherwise close together, and a crowd that reconnects at
  once is a flood;
* **room for the idle.** An idle or silent connection costs a socket and a waiting task,
  not work: up to ``max_connections`` of them more are kept (the Apache event MPM likewise
  keeps idle keep-alive connections apart from its workers). A crowd of 2,000 idle
  keep-alive connections therefore fits beside 1,000 slots and is left alone; a larger one
  makes the server close and the crowd reopen connections as fast as it can, and a normal
  client's wait then grows with the size of the excess;
* **no slot before a request.** A newcomer at the limit waits for its request in a
  waiting room (a socket and a task, no slot), and only then takes a slot: a crowd that
  connects and says nothing, however fast it reconnects, closes nobody, and the accept
  loop never waits for it, so a client that speaks is not queued behind it;
* **long waits in their own budget.** A request whose page waits for an event with
  ``client_gone_evt()`` (a long-poll, server-sent events) or streams its reply moves to a
  budget of its own, ``max_streams``, so a thousand chat clients do not take the slots of
  the requests that answer in a millisecond;
* **a fast 503 when full.** When every slot is busy with a request in progress, a new
  connection gets ``503 Service Unavailable`` with ``Retry-After`` at once instead of
  waiting in the backlog for seconds; a proxy or a browser can retry;
* **per client, optionally.** ``max_connections_per_client`` bounds what one address can
  hold (for a site that runs without a proxy in front; behind one, every client is the
  proxy, so it is off by default).

The default scheduler (one-to-one) uses it; the pool and nothread schedulers have a fixed
number of tasks, which is their own limit (Hop §2.4). The asyncio server (``asyncio/``)
uses the same policy: what it needs of a connection is its ``peer``, ``phase``, ``fresh``,
``in_stream_budget``, ``sock`` (for the peek) and ``evict()`` (the ``ServerConnection``
contract); it waits for a newcomer's request with its own timer, counted in
:attr:`Slots.waiting_to_speak`, and refuses on a transport (``asyncio/slots.py``). The
waits written here (a newcomer's request, a refused connection's linger) go through
:mod:`pyweb.runtime`, so this module imports no loop.
"""

from __future__ import annotations

import random
import socket
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pyweb.runtime import current as current_loop

from .contract import HEAD
from .proxy import peer_host

if TYPE_CHECKING:
    from pyweb.runtime.contract import Scope

    from .config import ServerConfig
    from .contract import Peekable, ServerConnection

__all__ = ["Slots", "BUSY_503", "has_bytes"]

Connection = TypeVar("Connection", bound="ServerConnection")
"""The loop's connection class (the slots ask of it only the ServerConnection contract)."""


class Spawner(Protocol):
    """Where a refused connection lingers: a trio nursery (``start_soon``)."""

    def start_soon(self, fn: Callable[..., Awaitable[Any]], /, *args: Any) -> None: ...


BUSY_503 = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 1\r\n"
    b"Connection: close\r\n"
    b"Content-Length: 51\r\n"
    b"\r\n"
    b"503 Service Unavailable: every connection is busy.\n"
)
"""The whole reply to a connection refused for lack of a slot, written without parsing
anything: it must cost less than serving the request would."""

CROWD = 100
"""Idle connections from which their keep-alive timeouts are spread (:meth:`Slots.keepalive`)."""

LINGER = 1.0
"""Seconds a refused connection is read from (and the bytes dropped) before it is closed:
closing with unread bytes would reset the connection and the client could lose the 503."""
MAX_LINGERING = 256
"""Refused connections lingering at once; past it they are closed at once."""
FRESH_GRACE = 0.5
"""Seconds a new connection that has sent nothing is left alone by the pool's door. A
client sends its request as soon as it connects, but a busy machine, or a client process
whose threads wait for one another, can put tens of milliseconds between the two: the
door looks every 50 ms, and without a grace it closed such a client before its request
came (the client read an empty reply). A crowd that connects and stays silent still gives
way, half a second later."""


class Slots(Generic[Connection]):
    """Who holds the server's connection slots (see the module doc), for the connections of
    one loop: ``Slots[Connection]`` on trio, ``Slots[HttpProtocol]`` on asyncio."""

    def __init__(self, config: ServerConfig) -> None:
        self.limit = config.max_connections
        self.patience = config.first_byte_timeout
        """How long a newcomer at the limit may wait to send its request."""
        self.stream_limit = config.max_streams
        self.per_client = config.max_connections_per_client
        self.busy = 0
        """Connections counted against ``max_connections`` (idle ones included)."""
        self.streams = 0
        """Requests in the long-wait budget (``max_streams``)."""
        # Connections waiting for bytes, oldest wait first (a dict keeps insertion order),
        # in the order they are closed for a newcomer: idle keep-alive connections (no
        # request in progress), half a head (a 408 at worst), new connections that have
        # sent nothing, then a stalled body of a request in progress.
        self.idle: dict[Connection, None] = {}
        self.heads: dict[Connection, None] = {}
        self.fresh: dict[Connection, float] = {}
        """New connections that have sent nothing yet, with when they began to wait."""
        self.bodies: dict[Connection, None] = {}
        self.clients: Counter[str] = Counter()
        """Connections per client address, counted only with ``max_connections_per_client``."""
        self.refused = 0
        """Connections answered with the fast 503 so far (the status page shows it)."""
        self.evicted = 0
        """Idle connections closed to make room so far."""
        self.lingering = 0
        self.waiting_to_speak = 0
        """Newcomers at the limit waiting to send their request (:meth:`wait_to_speak`;
        the asyncio server counts its own here too): at most ``max_connections``."""
        self._speakers: dict[socket.socket, Scope] = {}
        """The waits of :meth:`wait_to_speak`, oldest first."""

    def admit(self, peer: str, speaking: bool = False) -> bool:
        """A new connection from ``peer``: True if it gets a slot; :meth:`release` gives it
        back. At the limit only a newcomer ``speaking`` (its request is here) gets one, by
        closing a connection that is only waiting (:meth:`_evict_one`); a silent newcomer
        waits for its request first (:meth:`wait_to_speak`), so a crowd that connects and
        says nothing closes nobody and cannot keep a client that speaks out."""
        per_client = self.per_client
        if per_client is not None and self.clients[peer_host(peer)] >= per_client:
            return False
        if self.full() and not (speaking and self._evict_one()):
            return False
        self.busy += 1
        if per_client is not None:  # (counted only when limited: a third of an admit)
            self.clients[peer_host(peer)] += 1
        return True

    def keepalive(self, timeout: float) -> float:
        """How long an idle keep-alive connection waits for its next request: ``timeout``,
        or, while a crowd is idle (CROWD connections or more), up to twice as long, at
        random. A crowd that arrived together would otherwise time out together and come
        back together: 2,000 connections reconnecting and sending a request within a
        second kept a normal client waiting 1.5 s (the same cure as max_requests_jitter)."""
        idle = len(self.idle)
        if idle < CROWD:  # (no crowd, the everyday case: no call)
            return timeout
        return _spread(timeout, idle)

    def first_byte(self, timeout: float) -> float:
        """How long a new connection may stay silent (``first_byte_timeout``): spread like
        :meth:`keepalive` while a crowd of them is silent."""
        return _spread(timeout, len(self.fresh) + self.waiting_to_speak)

    def full(self) -> bool:
        """No slot for a newcomer unless a waiting connection is closed: ``max_connections``
        are in a request (or silent, or idle past the extra room), or ``max_connections``
        more are idle or silent (see the module doc)."""
        busy = self.busy
        return busy >= 2 * self.limit or busy - len(self.idle) - len(self.fresh) >= self.limit

    def release(self, connection: Connection) -> None:
        """The connection has ended."""
        self.working(connection)
        if connection.in_stream_budget:
            connection.in_stream_budget = False
            self.streams -= 1
        else:
            self.busy -= 1
        if self.per_client is not None:
            host = peer_host(connection.peer)
            self.clients[host] -= 1
            if self.clients[host] <= 0:
                del self.clients[host]

    def waiting(self, connection: Connection, stalled_body: bool = False) -> dict[Connection, Any]:
        """The connection waits for bytes (of a request body: ``stalled_body``): it may be
        closed for a newcomer. Returns where it is kept: when the wait is over, popping it
        from there is the cheap :meth:`working` (the one place it can be)."""
        if stalled_body:
            room = self.bodies
        elif connection.phase == HEAD:
            room = self.heads
        elif connection.fresh:  # its request may be on its way: see _evict_one
            self.fresh[connection] = current_loop().now()  # (once per connection)
            return self.fresh
        else:  # an idle keep-alive connection: no request in progress
            room = self.idle
        room[connection] = None
        return room

    def working(self, connection: Connection) -> None:
        """The wait is over (bytes arrived, or the connection ends)."""
        self.idle.pop(connection, None)
        self.heads.pop(connection, None)
        self.fresh.pop(connection, None)
        self.bodies.pop(connection, None)

    def to_streams(self, connection: Connection) -> bool:
        """A request starts a long wait: move it to the stream budget (False if that is
        full; it then stays where it is)."""
        if connection.in_stream_budget:
            return True
        if self.streams >= self.stream_limit:
            return False
        connection.in_stream_budget = True
        self.streams += 1
        self.busy -= 1
        return True

    def from_streams(self, connection: Connection) -> None:
        """The long wait is over (its reply is out): back to the ordinary slots. It may
        go over ``max_connections`` for a moment; newcomers then evict idle ones."""
        if connection.in_stream_budget:
            connection.in_stream_budget = False
            self.streams -= 1
            self.busy += 1

    async def wait_to_speak(self, sock: socket.socket) -> bool:
        """A newcomer at the limit, off the accept loop: wait for its request, as long as a
        new connection may stay silent (``first_byte_timeout``). True when its bytes are
        here. Waiting costs a socket, not a slot: at most ``max_connections`` newcomers
        wait at once, and a new one ends the wait of the one that has waited longest."""
        speakers = self._speakers
        if self.waiting_to_speak >= self.limit and speakers:
            speakers.pop(next(iter(speakers))).cancel()
            self.waiting_to_speak -= 1
        loop = current_loop()
        scope = loop.CancelScope(deadline=loop.now() + self.first_byte(self.patience))
        speakers[sock] = scope
        self.waiting_to_speak += 1
        try:
            with scope:
                await loop.wait_readable(sock)
        finally:
            if speakers.pop(sock, None) is not None:
                self.waiting_to_speak -= 1
        return has_bytes(sock)

    def evict_waiting(self) -> bool:
        """Close the connection waiting longest for a newcomer (the pool and nothread
        schedulers' door); False when none waits. The door cannot see whether the
        newcomer has spoken, so a new connection that has sent nothing keeps its
        :data:`FRESH_GRACE`."""
        return self._evict_one(current_loop().now() - FRESH_GRACE)

    def _evict_one(self, fresh_before: float | None = None) -> bool:
        """Close the connection waiting longest, idle ones first; False when none waits.
        With ``fresh_before``, a new connection that has sent nothing is closed only if it
        began to wait before then."""
        for waiting in (self.idle, self.heads):
            for connection in waiting:
                del waiting[connection]
                return self._evict(connection)
        # A new connection that has sent nothing: its request is not here, the newcomer's
        # is. One whose bytes are here is not silent: its task has not read them yet (a
        # busy server), so it is passed over.
        while self.fresh:
            connection, since = next(iter(self.fresh.items()))
            if fresh_before is not None and since > fresh_before:
                break  # the oldest is still in its grace, and so are the others
            del self.fresh[connection]
            if not has_bytes(connection.sock):
                return self._evict(connection)
        for connection in self.bodies:
            del self.bodies[connection]
            return self._evict(connection)
        return False

    def _evict(self, connection: Connection) -> bool:
        connection.evict()
        self.evicted += 1
        return True

    def refusing(self, can_linger: bool = True) -> bool:
        """A connection gets no slot and is answered with :data:`BUSY_503`: counted. True
        if it may linger (closed after :data:`LINGER`, counted in ``lingering`` until the
        loop gives it back), False if it must close at once (too many linger already)."""
        self.refused += 1
        if self.lingering >= MAX_LINGERING or not can_linger:
            return False
        self.lingering += 1
        return True

    def refuse(self, sock: socket.socket, nursery: Spawner) -> None:
        """Answer a connection that gets no slot with :data:`BUSY_503` and close it (the
        one-to-one scheduler's; the asyncio server's is ``asyncio/slots.py``)."""
        try:
            sock.send(BUSY_503)
        except OSError:
            pass
        if not self.refusing():
            _drain_now(sock)
            _close(sock)
            return
        nursery.start_soon(self._linger, sock)

    async def _linger(self, sock: socket.socket) -> None:
        # Half-close, then drop what the client sends until it closes or LINGER passes:
        # its request bytes, unread, would turn our close into a reset that can destroy
        # the 503 before the client reads it.
        try:
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                return
            loop = current_loop()
            with loop.move_on_after(LINGER):
                while True:
                    try:
                        if not sock.recv(65536):
                            return
                    except BlockingIOError:
                        await loop.wait_readable(sock)
                    except OSError:
                        return
        finally:
            self.lingering -= 1
            _close(sock)


def _spread(timeout: float, crowd: int) -> float:
    return timeout if crowd < CROWD else timeout * (1.0 + random.random())


def has_bytes(sock: Peekable | None) -> bool:
    """Has the client sent something we have not read yet? (A peek: nothing is taken.)"""
    if sock is None:  # (an asyncio connection whose transport has no socket)
        return False
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # nothing there (EAGAIN), or the connection is already gone
        return False


def _drain_now(sock: socket.socket) -> None:
    """Read what the client has already sent, without waiting: closing a socket with unread
    bytes resets the connection, and the reset can destroy the 503 before it is read."""
    try:
        while sock.recv(65536, socket.MSG_DONTWAIT):
            pass
    except OSError:
        pass


def _close(sock: socket.socket) -> None:
    from .listener import close_socket

    close_socket(sock)
