"""One connection of ``pyweb serve --loop asyncio``: Marlow's ``talk`` (§3.2) on an
``asyncio.Protocol`` (Hop §2.4, pluggable schedulers), on uvloop when it is installed.

:class:`HttpProtocol` is the asyncio driver of a connection: the loop calls
:meth:`~HttpProtocol.data_received` with the bytes of a connection, and the protocol feeds
them to the same sans-IO parser the trio server uses, runs the handler in the connection's
task with the same :class:`~pyweb.server.context.RequestContext`, and writes the reply
framed by the same :func:`~pyweb.protocol.frame_response` straight to the transport
(``replies.py``): no stream wrappers on the hot path. Marlow's ``talk`` is here too, in
the connection's one task (:meth:`HttpProtocol._serve`, started by the first request): a
request arrives → the handler runs → the reply is written → the access record is queued →
the next request (already buffered, or handed over by the next ``data_received``).

What a request does on its connection is not here but in the shared modules, which ask
the protocol only what the ``ServerConnection`` contract promises (``contract.py``): the
body (``body.py``: on demand, ``100 Continue``, the whole-body deadline, the
``max_body_memory`` budget, draining an unread body; this protocol only feeds it and
says when bytes arrive), the handler's view (``context.py``), the WebSocket session
(``websocket.py``, fed by :meth:`HttpProtocol.receive_frames`), the connection slots
(``slots.py``: idle connections closed first for a newcomer, ``first_byte_timeout``, the
``max_streams`` budget, ``max_connections_per_client``, the fast 503; ``slots.py`` of this
folder answers it on a transport). Also shared: the parser's limits (413/414/431), proxy
headers (``proxy.py``), the logs (``logging.py``), the keep-alive limits
(``keepalive_requests``, ``keepalive_time``) and the timeouts' settings
(``first_byte_timeout``, ``header_timeout`` (408), ``keepalive_timeout``,
``body_timeout``, ``send_timeout``, ``close_grace`` on shutdown), kept under one timer
(``deadlines.py``).

What it does not do: assemble replies in a reply arena (a small body is joined to its head
and written at once, a large one handed to the transport beside it).
"""
from __future__ import annotations

import asyncio
import math
import socket
import time
from typing import Any, Protocol

from pyweb.events import Latch
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.messages import NEED_DATA, ConnectionClosed, Request
from pyweb.protocol.parser import MAX_PIECE
from pyweb.protocol.response import Fragments, Response
from pyweb.protocol.websocket import WebSocketUpgrade

from ..context import RequestContext
from ..contract import HANDLER, HEAD, IDLE, Evicted
from ..core import ConnectionCore
from ..host import Host
from ..reply import ReplyAborted, Sent
from ..slots import LINGER
from .deadlines import RESOLUTION, Deadlines
from .replies import AioReplies
from .schedulers import Accepted
from .slots import PeekSocket, refuse

__all__ = ["AioHost", "HttpProtocol"]

_INF = math.inf
_IN_MEMORY = (bytes, Fragments)  # bodies a handler's Response needs no check for

READ_AHEAD = 256 * 1024
"""Bytes buffered in the parser while a handler runs before the loop stops reading the
connection (``pause_reading``): a client sending faster than the page reads is held back
by TCP, not by the server's memory."""


class AioHost(Host, Protocol):
    """What a connection asks of the asyncio server (:class:`~.server.AsyncioServer`),
    besides what every server has (``host.py``)."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop the server runs on: asked of it, not ``asyncio.get_running_loop()``,
        which on Python 3.11 makes a ``getpid`` system call each time."""

    @property
    def deadlines(self) -> Deadlines:
        """The connections' waits for a request, under one timer (deadlines.py)."""

    @property
    def set_nodelay(self) -> bool:
        """Whether connections switch Nagle off themselves (not on uvloop: it does)."""

    def connection_ended(self) -> None:
        """A connection has closed (the last one during shutdown ends the wait for it)."""


class HttpProtocol(ConnectionCore, AioReplies, Accepted):
    """One connection: bytes in through the parser, one task answering its requests, replies
    written to the transport (:class:`~pyweb.server.asyncio.replies.AioReplies`; see the module
    doc)."""

    server: AioHost

    # What a new connection starts with, as class attributes: an instance gets its own
    # only when one changes (most never do). CPython's instances share one table of
    # attribute names per class, 30 names at most; a class that sets more in __init__
    # makes a dictionary of its own per instance, and its __init__ costs twice as much
    # (docs/performance.md). The connection's own, set in __init__, are below.
    transport: Any = None
    _sock: PeekSocket | None = None
    proxies: Any = None
    via_proxy: Any = None
    """The trusted proxy's check, when the peer is one (proxy.py, ``proxy_test``)."""
    phase = IDLE
    fresh = True
    """No request has been read yet (first_byte_timeout; slots.py)."""
    busy = False
    """A handler runs (or its reply is being sent): the next request waits in the parser."""
    closing = False
    admitted = False
    """Holds a connection slot (slots.py)."""
    refused = False
    """Got the fast 503 and lingers (its bytes are dropped)."""
    evicted = False
    in_stream_budget = False
    reserved = 0
    served = 0
    gone: Latch | None = None
    """Set when the client hangs up (``ctx.client_gone_evt()``), made on first use."""
    _body_waiter: asyncio.Future[bool] | None = None
    _drain_waiter: asyncio.Future[bool] | None = None
    bucket: int | None = None  # where its deadline is kept (deadlines.py)
    _deadline = _INF  # when this wait ends (loop time); inf: no wait
    _writable = True
    _reading = True
    _speaking = False  # a newcomer in its grace to speak (counted in the slots)
    eof = False
    ws_chunks: list[bytes] | None = None
    """Bytes for the WebSocket session, once the connection is one (:meth:`receive_frames`)."""
    _lingering = False  # refused, and counted among the lingering (slots.py)
    _listed: dict[Any, Any] | None = None
    """The slots' list this connection waits in (idle, heads or fresh), if any."""
    _task: asyncio.Task[None] | None = None
    """The connection's one task, which answers its requests one after the other."""
    _arrival: asyncio.Future[Request | None] | None = None
    """What that task waits on between two requests: the next one, or None (closed)."""
    _ended: asyncio.Future[None] | None = None
    """Set by :meth:`finished` (pool and nothread only)."""

    def __init__(self, server: AioHost, sock: socket.socket | None = None) -> None:
        self.open(server)  # its settings, handler, site, log, parser (core.py)
        self.socket = sock
        """The connection's socket, as accepted (its transport owns it): for the early
        half-close of :meth:`close_after_reply` (None: not known, no early half-close)."""
        self.peer = self.client = "-"

    @property
    def sock(self) -> PeekSocket | None:
        """The connection's socket, to peek at (slots.py); looked up on first use, since
        few connections are ever asked."""
        if self._sock is None:
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                self._sock = PeekSocket(sock.fileno())
        return self._sock

    # ------------------------------------------------------------------ the loop's callbacks

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = self.client = f"{peer[0]}:{peer[1]}" if peer else "-"
        server = self.server
        if server.set_nodelay:
            # Nagle off (listener.py says why); uvloop does it for every TCP connection
            # itself, and a setsockopt through its socket wrapper costs microseconds.
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if server.proxies is not None:  # looked up by the first forwarded request (core.py)
            self.proxies = server.proxies
        server.connections.add(self)
        if server.slots.admit(self.peer):
            self._admitted()
        elif server.slots.waiting_to_speak < server.slots.limit:
            server.slots.waiting_to_speak += 1  # it waits for its request (slots.py)
            self._speaking = True
            self._arm(server.slots.patience)
        else:
            self._refuse()

    def data_received(self, data: bytes) -> None:
        if self.busy:
            self._data_while_busy(data)
            return
        if self.refused:
            return  # a refused connection's bytes are dropped while it lingers
        self.parser.feed(data)
        if self.admitted:
            self._next_request()
        else:
            self._decide(speaking=True)

    def _data_while_busy(self, data: bytes) -> None:
        """Bytes for the handler (its body, or its WebSocket), or a pipelined request:
        kept, and the reading paused when too much is waiting (READ_AHEAD), or when they
        answer the handler's wait with more than a body piece (one read per wait, as on
        trio: the loop would otherwise read a fast upload up to READ_AHEAD in every turn,
        and 40 of them filled each turn with 20 MB for the pages to handle; a small body
        is left alone, its connection is not paused and resumed)."""
        chunks = self.ws_chunks
        if chunks is None:
            self.parser.feed(data)
            held = self.parser.buffered
        else:
            chunks.append(data)
            held = len(chunks) * len(data)  # (an estimate: the pieces are alike)
        answered = self._body_waiter is not None  # (its wait resumes the reading)
        self._wake_body(True)
        if (held > READ_AHEAD or answered and held > MAX_PIECE) and self._reading:
            self._reading = False
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        if self.refused:
            return True
        self.eof = True
        self._client_left()  # a half-close counts as gone (gone.py)
        self.parser.feed(b"")
        if self.busy:
            self._wake_body(True)
        elif self.admitted:
            self._next_request()
        else:
            self.transport.close()
        return True  # keep our side open until the reply is written

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self._deadline = _INF
        if self.gone is not None:
            self._client_left()
        if self.bucket is not None:
            self.server.deadlines.remove(self)
        if self._arrival is not None:
            self._hand_over(None)  # the connection's task, waiting for a request, ends
        if self._body_waiter is not None or self._drain_waiter is not None:
            reset = ConnectionResetError("the client closed the connection")
            self._wake_body(reset)
            self._wake_drain(reset)
        server = self.server
        slots = server.slots
        if self._speaking:
            self._stop_speaking()
        if self.admitted:
            slots.release(self)
        if self._lingering:
            slots.lingering -= 1
        if self.reserved:
            self.release_body()
        server.connections.discard(self)
        if server.closing:
            server.connection_ended()
        ended = self._ended
        if ended is not None and not ended.done():  # a pool's or nothread's task waits
            ended.set_result(None)

    async def finished(self) -> None:
        """Wait until this connection has closed and its last request is done: then the
        pool's or nothread's task accepts the next one (schedulers.py)."""
        if self in self.server.connections:  # (connection_lost takes it out)
            self._ended = self.server.loop.create_future()
            await self._ended
        if self._task is not None:  # a page may still run for a client that left
            await asyncio.wait((self._task,))

    def pause_writing(self) -> None:
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True
        self._wake_drain(True)

    # ------------------------------------------------------------------- slots (slots.py)

    def _admitted(self) -> None:
        self.admitted = True
        if self.parser.buffered:  # a newcomer admitted because it spoke: its request is here
            self._next_request()
        else:
            self._wait_for_request()

    def _stop_speaking(self) -> None:
        if self._speaking:
            self._speaking = False
            self.server.slots.waiting_to_speak -= 1

    def _decide(self, speaking: bool) -> None:
        """The end of a newcomer's grace to speak: a slot, or the fast 503."""
        self._stop_speaking()
        self._disarm()
        if self.server.slots.admit(self.peer, speaking=speaking):
            self._admitted()
        else:
            self._refuse()

    def _refuse(self) -> None:
        self.refused = True  # from now on its bytes are dropped
        self._lingering = refuse(self.server.slots, self.transport)
        if self._lingering:
            self._arm(LINGER)  # then timed_out closes it

    def evict(self) -> None:
        """Close this waiting connection to make room for a newcomer (slots.py). One
        waiting for its next request closes quietly; a stalled body ends in a 408."""
        self.evicted = True
        if self._body_waiter is not None:
            self._wake_body(Evicted())
        else:
            self.transport.close()

    # ------------------------------------------------------------------------- waiting

    def _wake_body(self, result: bool | BaseException) -> None:
        _wake(self._body_waiter, result)

    def _wake_drain(self, result: bool | BaseException) -> None:
        _wake(self._drain_waiter, result)

    # The I/O the shared code asks for (contract.py): body.py, websocket.py.

    async def receive_now(self) -> bool:
        """Nothing to read: the loop feeds the parser itself (:meth:`data_received`)."""
        return False

    async def wait_for_bytes(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for body bytes: True when the loop fed some to the
        parser. Meanwhile the connection may be closed for a newcomer (slots.py):
        :class:`Evicted`."""
        slots = self.server.slots
        slots.waiting(self, stalled_body=True)
        try:
            return await self._bytes_arrived(seconds)
        finally:
            slots.working(self)

    async def turn(self) -> None:
        """Let the other connections run before the next piece: the rest of the loop's
        turn, then this task again (a 256 KiB read holds sixteen pieces)."""
        await asyncio.sleep(0)

    async def _bytes_arrived(self, seconds: float) -> bool:
        """Wait until the loop feeds more bytes to the parser: True; False after
        ``seconds``. Raises ConnectionResetError if the client left, :class:`Evicted` if
        the connection was closed for a newcomer."""
        if self.closing:
            raise ConnectionResetError("the connection is closed")
        if not self._reading:
            self._reading = True
            self.transport.resume_reading()
        loop = self.server.loop
        waiter = self._body_waiter = loop.create_future()
        timer = loop.call_later(seconds, _wake, waiter, False)
        try:
            return await waiter
        finally:
            timer.cancel()
            self._body_waiter = None

    async def drain(self) -> None:
        """Wait while the transport holds more than its high mark; a client that reads
        nothing for ``send_timeout`` is dropped (TimeoutError)."""
        if self._writable:
            return
        loop = self.server.loop
        send_timeout = self.config.send_timeout
        while not self._writable:
            if self.closing:
                raise ConnectionResetError("the connection is closed")
            waiter = self._drain_waiter = loop.create_future()
            timer = loop.call_later(send_timeout, _wake, waiter, False)
            try:
                if not await waiter:
                    raise TimeoutError(f"{self.peer} did not read its reply for {send_timeout:g} s")
            finally:
                timer.cancel()
                self._drain_waiter = None

    # ------------------------------------------------------------------------ timeouts

    # The deadlines of all connections are kept under one timer (deadlines.py), lazily:
    # a keep-alive connection moves its deadline for every request, but it changes buckets
    # only when the new deadline comes *sooner*; one whose bucket comes due before its
    # deadline is put in a later bucket then. So a busy connection costs a float store per
    # request, and a new one a dictionary store, not a timer made and cancelled.

    def _arm(self, seconds: float) -> None:
        self._deadline = deadline = self.server.loop.time() + seconds
        bucket = self.bucket
        if bucket is None or bucket * RESOLUTION > deadline:  # (else it stays where it is)
            self.server.deadlines.arm(self, deadline)

    def _disarm(self) -> None:
        self._deadline = _INF  # (when its bucket comes due, it does nothing)

    def timed_out(self) -> None:
        """Its bucket is due (deadlines.py): close it if its deadline has passed."""
        deadline = self._deadline
        if deadline == _INF or self.busy or self.closing:
            return
        if self.server.loop.time() < deadline:  # (moved on since it was put in its bucket)
            self.server.deadlines.arm(self, deadline)
            return
        self._deadline = _INF
        if not self.admitted and not self.refused:
            self._decide(speaking=False)  # its grace to speak is over
        elif self.phase == HEAD and not self.refused:  # half a head: tell the client why
            self._send_last_words(self.error_page(408), None)
        else:
            self.transport.close()  # idle, silent, or a refused one done lingering

    def server_closing(self) -> None:
        """The server began a graceful shutdown: an idle keep-alive connection gets
        ``close_grace`` (its next request may be on the wire), then closes."""
        if self.admitted and not self.busy and self.phase == IDLE and not self.fresh:
            if self.config.close_grace <= 0:
                self.transport.close()
            else:
                self._arm(min(self.config.close_grace, self._deadline - self.server.loop.time()))

    # ------------------------------------------------------ Marlow's talk, one request at a time

    def _wait_for_request(self) -> None:
        """No complete request head is buffered: wait (the timer of this phase; the slots
        may close this connection for a newcomer meanwhile)."""
        if not self._reading:
            self._reading = True
            self.transport.resume_reading()
        phase = HEAD if self.parser.buffered else IDLE
        if phase != self.phase or self._deadline == _INF:
            self.phase = phase
            patience = self.patience()
            if patience <= 0:  # an idle one whose close_grace is over
                self.transport.close()
                return
            self._arm(patience)
        # Listed where slots.waiting() would put it, at the end (the longest waits are
        # first), remembering the list: a request's start is one pop, not four.
        slots = self.server.slots
        if self._listed is not None:  # (a head half here: it moves from idle to the heads)
            self._listed.pop(self, None)
        if phase != HEAD and self.fresh:  # (with the time it began: the door's grace)
            self._listed = slots.waiting(self)
            return
        listed = slots.heads if phase == HEAD else slots.idle
        listed[self] = None
        self._listed = listed

    def _next_request(self) -> None:
        """Bytes arrived while no request is being answered: if a whole head is here, the
        connection's task answers it (started with the first request; later ones are
        handed to it), else the wait goes on."""
        request = self._take_request()
        if request is None:
            return
        arrival = self._arrival
        if arrival is not None:  # (the task waits for it)
            self._arrival = None
            arrival.set_result(request)
        elif self._task is None:
            self._task = self.server.loop.create_task(self._talk(request))

    def _hand_over(self, request: Request | None) -> None:
        """Wake the connection's task waiting between two requests (None: to end)."""
        arrival = self._arrival
        if arrival is not None:
            self._arrival = None
            arrival.set_result(request)

    def _take_request(self) -> Request | None:
        """The next request head from the parser, now being answered; None when there is
        none (a wait for it is set up), or when the connection closes (a bad request
        gets its error page on the way)."""
        if self.closing:
            return None
        try:
            event = self.parser.next_event()
        except ProtocolError as err:  # Marlow's ``Left resp``: a page saying why, close
            self._reject(err, None)
            return None
        if event is NEED_DATA:
            self._wait_for_request()
            return None
        if type(event) is ConnectionClosed:
            self.closing = True
            self.transport.close()
            return None
        if type(event) is not Request:
            raise RuntimeError(f"parser produced {event!r} where a request head belongs")
        self._deadline = _INF  # (disarmed: the timer, when it fires, does nothing)
        if self._listed is not None:  # no longer waiting (slots.working)
            self._listed.pop(self, None)
            self._listed = None
        self.phase = HANDLER
        self.fresh = False
        self.busy = True
        return event

    async def _talk(self, request: Request) -> None:
        """The connection's one task: :meth:`_serve` its requests, and abort when the
        client leaves, reads nothing, or a stream breaks; a bug is logged."""
        try:
            await self._serve(request)
        except (ReplyAborted, TimeoutError, OSError):
            self.abort()  # a client that left or reads nothing, or a broken stream
        except Exception as exc:  # a bug in the server itself: log it, keep serving others
            self.log.error(f"internal error on connection from {self.peer}", exc=exc)
            self.abort()

    async def _serve(self, request: Request | None) -> None:
        """Marlow's ``talk``, as trio's ``Connection.talk``: run the handler, reply, log,
        and answer the next request (already in the parser, or handed over by
        :meth:`_next_request` when it arrives) while the connection lasts. One task per
        connection, and no coroutine per request: a keep-alive request costs a future
        (docs/performance.md)."""
        while request is not None:
            ctx = RequestContext(self, request)
            try:
                response = await self.handler(ctx)
                if type(response) is not Response or type(response.body) not in _IN_MEMORY:
                    response = self.checked(response)  # (a page's body needs no check)
            except ProtocolError as err:  # from ctx.body(): a bad, slow or oversized body
                self.release_body()
                self._reject(err, request)
                return
            except Exception as exc:  # (a client that left while its page ran: no error)
                response = self.failure_page(request, exc, quiet=self.closing)
            if self.reserved:  # the page is done with its body: out of the budget
                self.release_body()
            if self.closing or type(response) is WebSocketUpgrade:  # no more HTTP here
                await self._leave_http(request, response, ctx.received_at)
                return
            keep_alive = self.may_keep_alive(ctx)
            # Sent at once when the body is in memory (bytes, a page's Fragments).
            sent = self.write_now(request, response, keep_alive)
            if sent is None or not self._writable or self.in_stream_budget:
                sent = await self._reply_later(request, response, keep_alive, ctx, sent)
            elif self.server.access_enabled:
                self.log_access(request, sent[0], sent[1], ctx.received_at, ctx.alloc)
            if ctx.after_reply is not None:  # the page's work after the reply (conn.after)
                ctx.after_reply(sent[0])
            body = ctx.request_body  # None: no body, and the handler asked for none
            keep_alive = sent[2]
            if keep_alive and body is not None and body.must_drain:
                keep_alive = await body.drain()
            request = self._replied(keep_alive)
            if request is None and not self.closing:  # the task waits for the next one
                arrival = self._arrival = self.server.loop.create_future()
                request = await arrival

    def _replied(self, keep_alive: bool) -> Request | None:
        """The reply is out: the next request if it is here already, else None (the
        connection waits for it, or closes)."""
        self.busy = False
        if not keep_alive or self.closing:
            self.closing = True
            self.close_after_reply()
            return None
        return self._take_request()

    async def _leave_http(
        self, request: Request, response: Response | WebSocketUpgrade, received_at: float
    ) -> None:
        """No more HTTP on this connection: the client left while its page ran (nobody to
        answer), or the page accepted a WebSocket, whose session has the connection to
        its end (core.py's ``upgrade``)."""
        if self.closing or type(response) is not WebSocketUpgrade:
            return
        self.ws_chunks = []  # from now on the bytes are the session's (receive_frames)
        try:
            await self.upgrade(request, response, received_at)
        finally:
            self.closing = True
            self.transport.close()

    def close_after_reply(self) -> None:
        """Close the connection after its last reply, the FIN right behind the reply.

        ``transport.close()`` closes the socket in the loop's next turn (uvloop and asyncio
        schedule ``connection_lost``, then close), after the bytes of every other connection
        that turn brings have been handled: under load, a client that has read its reply
        has often closed its side by then, and the server's close is then the one that
        tears the connection down on both sides (over loopback, the client's share of it
        too). So when the reply is all sent, nothing queued in the transport, the socket's
        sending side is shut at once (``shutdown(SHUT_WR)``: the FIN goes out now, as on
        trio, whose close follows its last ``send`` in the same step); the transport still
        closes it in its next turn. With bytes still queued, the transport sends them and
        closes as before."""
        transport = self.transport
        sock = self.socket
        if sock is not None and not transport.get_write_buffer_size():
            try:
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the client reset the connection: the close is all that is left
        transport.close()

    async def _reply_later(
        self,
        request: Request,
        response: Response,
        keep_alive: bool,
        ctx: RequestContext,
        sent: Sent | None,
    ) -> Sent:
        """The reply, and its log, when it waits: a file, a stream (``sent`` is None: not
        written yet), a client that reads slower than the page is written, or a request
        in the stream budget."""
        try:
            if sent is None:
                sent = await self.send(request, response, keep_alive)
            else:
                await self.drain()
        except ReplyAborted as abort:  # a stream that broke: the client sees it cut
            if abort.sent is not None and self.server.access_enabled:
                self.log_access(request, abort.sent[0], abort.sent[1], ctx.received_at)
            raise
        finally:
            if self.in_stream_budget:
                self.server.slots.from_streams(self)
        if self.server.access_enabled:
            self.log_access(request, sent[0], sent[1], ctx.received_at, ctx.alloc)
        return sent

    async def receive_frames(self) -> bytes:
        """The WebSocket's next bytes (``b""``: the peer closed its side)."""
        chunks = self.ws_chunks
        assert chunks is not None
        while not chunks:
            if self.eof:
                return b""
            await self._bytes_arrived(3600.0)  # (the session's keeper watches for silence)
        data = b"".join(chunks)
        chunks.clear()
        return data

    def client_watch(self) -> Latch:
        """What ``ctx.client_gone_evt()`` waits on: a long wait, so the request moves to
        the stream budget (slots.py) until its reply is out."""
        if self.gone is None:
            self.gone = Latch()
            if self.closing:
                self.gone.set()
        self.server.slots.to_streams(self)
        return self.gone

    def _client_left(self) -> None:
        if self.gone is not None and not self.gone.is_set:
            self.gone.set()

    # -------------------------------------------------------------------------- errors

    def _reject(self, err: ProtocolError, request: Request | None) -> None:
        """A request that cannot be served: log it, its error page, then close (after a
        framing error the rest of the byte stream cannot be trusted)."""
        self._send_last_words(self.reject_page(err, request), request)

    def _send_last_words(self, page: Response, request: Request | None) -> None:
        if not self.admitted:  # pragma: no cover - only admitted connections get here
            self.transport.close()
        elif self.send_closing(page, request) and self.server.access_enabled:
            self.log_access(request, page.status, len(page.body), time.time())  # type: ignore[arg-type]
        self.closing = True
        self.busy = False

    def abort(self) -> None:
        self.closing = True
        self.busy = False
        if self.transport is not None:
            self.transport.abort()


def _wake(waiter: asyncio.Future[bool] | None, result: bool | BaseException) -> None:
    if waiter is not None and not waiter.done():
        if isinstance(result, BaseException):
            waiter.set_exception(result)
        else:
            waiter.set_result(result)
