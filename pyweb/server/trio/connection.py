"""The connection loop: Marlow's ``talk`` (§3.2), with timeouts (§4) and logging (§5).

Marlow's worker thread serves one connection with a five-step pipeline::

    talk :: Config -> Handle -> HostAddress -> IO ()
    talk conf handle haddr
      = do strs <- getRequest handle
          case parseRequest strs of
            Left resp -> sendResponse conf handle resp
            Right req  -> do
              resp <- genResponse conf req
              sendResponse conf handle resp
              logAccess req resp haddr
              if (isKeepAlive req)
                then talk conf handle haddr
                else return ()

:meth:`Connection.talk` is that loop, step for step: :meth:`~Connection.read_request`
(``getRequest`` + ``parseRequest``: bytes fed to the sans-IO parser; a
:class:`~pyweb.protocol.ProtocolError` is the ``Left resp`` case, answered by
:meth:`~Connection.reject`), :meth:`~Connection.run_handler` (``genResponse``),
``replies.send`` (``sendResponse``, in ``replies.py`` on ``reply.py``), :meth:`~Connection.log_access`
(``logAccess``), and round again while the connection is persistent. The request body is
read on demand by the handler through ``body.py``'s :class:`RequestBody`, which also deals
with what the handler left unread. Everything the connection does uses the settings it
started with (``self.config``): a reload (SIGHUP) changes them for new connections only
(Marlow §6).

Timeouts and shutdown are first-class events (Marlow §4, "clients which hang ... can be
disconnected"; CML §2, pyweb.events). Where Marlow wraps a read in a ``timeout``
combinator, a connection that must wait for bytes waits on a choice, as a CML thread would::

    choose(
        readable_evt(sock),                          # bytes (or EOF): go and read them
        wrap(at_time(deadline), lambda _: TIMED_OUT),    # keep-alive or header timeout
        shutdown,                                    # the server stops: an idle wait ends
    )

Because this is the hot path, :meth:`~Connection.wait_for_request` writes that one choice
out by hand instead of building it for ``sync``: the socket is awaited in a trio cancel
scope whose deadline is the timer branch, and the shutdown branch is the server shortening
that deadline for each connection that waits idle (:meth:`~Connection.close_when_idle`).
The deadline is a plain attribute (``Connection.deadline``, one float store per phase, at
its first wait: ``now + keepalive_timeout`` while idle, ``now + header_timeout`` once part
of a head has arrived), and the connection only waits when ``recv`` said it would block: a
request already in the kernel buffer costs no wait (and no clock read) at all. A timed-out
wait in the middle of a request head gets a 408, an idle one is just closed; shutdown
closes an idle connection (after ``close_grace``: its next request may be on the wire) and
leaves one half-way through a head alone (that request is finished, with
``Connection: close``). The handler phases use the events of :mod:`pyweb.events` as they
are: ``select(readable_evt(sock), timeout(body_timeout))`` while the handler waits for its
body (a 408), ``select(writable_evt(fd), timeout(send_timeout))`` while a reply waits for
a client that doesn't read (the connection is dropped). While the handler runs there is
no deadline. One connection waiting never holds up another: each waits in its own task.

Hot path (one keep-alive request): one read, one parse, one handler call, one ``writev``
(straight to the non-blocking socket, then one yield to the other tasks; only if the kernel
buffer is full does the task wait), one access record. No task and no closure is created
per request; a cancel scope only when the request had not arrived yet and the connection
has to wait for it (the wait above).
"""

from __future__ import annotations

import math
import os
import socket
import time
from typing import TYPE_CHECKING

import trio
from trio.lowlevel import wait_readable

from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.messages import NEED_DATA, ConnectionClosed, Request
from pyweb.protocol.response import Response
from pyweb.protocol.websocket import WebSocketUpgrade

from ..body import DRAIN_LIMIT
from ..context import RequestContext
from ..contract import HANDLER, HEAD, IDLE, Evicted
from ..core import ConnectionCore
from ..reply import ReplyAborted, Sent, request_line
from .gone import ClientWatch
from .recvbuf import receive
from .replies import Replies

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..host import Host

__all__ = ["Connection", "DRAIN_LIMIT", "request_line"]

_INF = math.inf


class _TimedOut(Exception):
    """The header timeout passed half-way through a request head (then a 408)."""


class Connection(ConnectionCore):
    """One client connection and its ``talk`` loop. ``await connection.run()`` serves it to the
    end and closes the socket. A :class:`~pyweb.server.contract.ServerConnection` on trio."""

    __slots__ = (
        "server", "config", "sock", "fd", "peer", "parser", "deadline", "phase", "handler", "site",
        "log", "wait_scope", "fresh", "watch", "replies", "proxies", "via_proxy", "served",
        "opened_at", "evicted", "in_stream_budget", "reserved", "client",
    )  # fmt: skip

    def __init__(self, server: Host, sock: socket.socket, peer: str) -> None:
        self.open(server)  # its settings, handler, site, log, parser (core.py)
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.replies = Replies(sock, peer, self.config, self.log, server.error_page, self.site)
        self.phase = IDLE
        self.deadline = _INF
        """When the current wait for a request stops waiting (trio clock)."""
        self.wait_scope: trio.CancelScope | None = None
        """The cancel scope of the current wait for a request (its deadline is the
        timeout), for :meth:`close_when_idle`."""
        self.fresh = True
        """No request has been read yet (graceful shutdown waits for the first one)."""
        self.watch: ClientWatch | None = None
        """Watches for the client leaving, once a handler asks (``ctx.client_gone_evt()``)."""
        self.proxies = server.proxies
        """The trusted reverse proxies this connection started with, until
        :meth:`proxy_test` has looked the peer up among them (then None)."""
        self.via_proxy: Callable[[str], bool] | None = None
        """Set by :meth:`proxy_test` when the peer is a trusted reverse proxy."""
        self.client = peer
        """The current request's client: the peer, or who a trusted proxy says it is
        (set by RequestContext; the access log shows it)."""
        self.served = 0
        """Requests read on this connection (``keepalive_requests``)."""
        self.evicted = False
        """Closed by :class:`~.slots.Slots` to make room for a newcomer (it was waiting)."""
        self.in_stream_budget = False
        """The request is in a long wait, counted against ``max_streams`` (slots.py)."""
        self.reserved = 0
        """Bytes of the process's body budget the current request holds (budget.py)."""

    # ---------------------------------------------------------------- life of a connection

    async def run(self) -> None:
        """Serve requests until the client leaves, a timeout strikes, or the server shuts
        down; then close. Never raises (except trio's own cancellation): Marlow's
        ``catch (talk ...) logError`` and ``finally hClose``."""
        server = self.server
        server.connections.add(self)
        try:
            await self.talk()
        except _TimedOut:  # a client stopped half-way through a request: say why we hang up
            await self.send_last_words(self.error_page(408), None)
        except ReplyAborted:
            pass  # logged where it happened
        except OSError:
            pass  # the client went away (reset, broken pipe): nothing to answer
        except Exception as exc:  # a bug in the server itself: log it, keep serving others
            self.log.error(f"internal error on connection from {self.peer}", exc=exc)
        finally:
            self.release_body()
            server.connections.discard(self)
            if self.watch is not None:
                self.watch.stop()
            # No other task waits on the socket now (the watch was the only one; this task
            # is here), so it closes without close_socket's notify_closing, which costs
            # more than the rest of the close (docs/performance.md).
            self.sock.close()

    async def talk(self) -> None:
        """Marlow's ``talk``: read a request, run the handler, reply, log, and loop while
        the connection is persistent."""
        log_access = self.server.access_enabled
        parser = self.parser
        while True:
            try:  # a pipelined request may be in the parser already; else read one
                request = parser.next_event()
                if type(request) is not Request:
                    request = await self.read_request(request)
            except ProtocolError as err:  # Marlow's ``Left resp``: a page saying why, close
                return await self.reject(err, None)
            if request is None:  # the client left, or idled out, or the server is stopping
                return
            ctx = RequestContext(self, request)
            try:
                response = await self.run_handler(ctx)
            except ProtocolError as err:  # from ctx.body(): a bad or oversized body
                return await self.reject(err, request)
            if type(response) is WebSocketUpgrade:  # RFC 6455: the connection leaves HTTP
                self.stop_watching()
                return await self.upgrade(request, response, ctx.received_at)
            body = ctx.request_body  # None: no body, and the handler asked for none
            keep_alive = self.may_keep_alive(ctx)
            try:
                status, sent, keep_alive = await self.replies.send(request, response, keep_alive)
            except ReplyAborted as abort:  # a stream that broke: the client sees it cut
                if abort.sent is not None and log_access:
                    self.log_access(request, abort.sent[0], abort.sent[1], ctx.received_at)
                raise
            if ctx.after_reply is not None or self.watch is not None:
                self.replied(ctx, status)  # the page's work after the reply, the watch's end
            if log_access:
                self.log_access(request, status, sent, ctx.received_at, ctx.alloc)
            if not keep_alive or (body is not None and body.must_drain and not await body.drain()):
                return

    def evict(self) -> None:
        """Close this waiting connection to make room for a newcomer (slots.py): its wait
        ends with ClosedResourceError; the connection loop then closes the socket."""
        self.evicted = True
        trio.lowlevel.notify_closing(self.sock)

    # ------------------------------------------- the I/O the shared code asks for (contract.py)

    async def receive_now(self) -> bool:
        """Read what has arrived into the parser, without waiting; True when there was
        something (then the other tasks get a turn: a large upload whose bytes keep
        arriving would otherwise never let them run, as ``receive`` only yields when it
        has to wait)."""
        try:
            receive(self.fd, self.parser)  # into this thread's region page (recvbuf.py)
        except BlockingIOError:
            return False
        await trio.lowlevel.checkpoint()
        return True

    async def wait_for_bytes(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for body bytes, and read them: True when the socket
        became readable. Closed for a newcomer meanwhile (slots.py): :class:`Evicted`."""
        watch = self.watch
        if watch is not None:
            watch.stop()  # one task at a time may wait on the socket: now it is this one
        room = self.server.slots.waiting(self, stalled_body=True)
        try:
            # (trio's own wait: a trickled body wakes this once per byte, a thousand
            # of them hundreds of times a second)
            with trio.move_on_after(seconds) as waited:
                await wait_readable(self.sock)
        except trio.ClosedResourceError:
            if self.evicted:
                raise Evicted from None
            raise
        finally:
            room.pop(self, None)  # (slots.working, for the one place it can be)
            if watch is not None and watch.latch.waiting:
                watch.start()
        if waited.cancelled_caught:
            return False
        try:
            receive(self.fd, self.parser)
        except BlockingIOError:
            pass  # woken without bytes: the body asks again
        return True

    async def turn(self) -> None:
        await trio.lowlevel.checkpoint()

    async def receive_frames(self) -> bytes:
        """A WebSocket session's next bytes (``b""``: the peer closed its side): the only
        read of a session, straight from the socket."""
        while True:
            try:
                return os.read(self.fd, 65536)
            except BlockingIOError:
                await wait_readable(self.fd)

    async def send_all(self, data: bytes) -> None:
        await self.replies.send_all(data)

    async def send(self, request: Request, response: Response, keep_alive: bool) -> Sent:
        return await self.replies.send(request, response, keep_alive)

    # ------------------------------------------------------------- reading a request head

    async def read_request(self, event: object) -> Request | None:
        """``getRequest`` + ``parseRequest`` when the parser's ``event`` is not a request
        yet: read until it has one. None when the connection is to close quietly. Raises
        ProtocolError for a bad request, and :class:`_TimedOut` when a head stops arriving
        half-way. The deadline is set at the first real wait: a request already in the
        kernel buffer costs no clock read (Hop §3.1)."""
        if event is NEED_DATA:
            parser = self.parser
            self.deadline = _INF
            while event is NEED_DATA:
                try:  # the system call first; wait only if it would block
                    receive(self.fd, parser)  # into this thread's region page (recvbuf.py)
                except BlockingIOError:
                    if self.deadline == _INF:  # the first wait: for what, and how long
                        self.phase = HEAD if parser.buffered else IDLE
                        self.deadline = trio.current_time() + self.patience()
                    if not await self.wait_for_request():
                        return None
                    continue
                event = parser.next_event()
                if event is NEED_DATA and self.phase == IDLE:
                    # The first bytes of a head: now the header timeout runs.
                    self.phase = HEAD
                    self.deadline = trio.current_time() + self.config.header_timeout
        if type(event) is ConnectionClosed:
            return None
        if type(event) is not Request:
            raise RuntimeError(f"parser produced {event!r} where a request head belongs")
        self.fresh = False  # (a request already in the parser is never a connection's first)
        return event

    async def wait_for_request(self) -> bool:
        """Wait until the socket has bytes (True), the deadline passes (an idle connection:
        False; half a head: raises :class:`_TimedOut`) or, while idle, the server's
        shutdown and its ``close_grace`` are over (False). Called only after ``recv`` said
        it would block.

        The wait is the choice of the module doc, written out for its one case: the socket
        is awaited in a cancel scope whose deadline is the timer branch, and the shutdown
        branch is :meth:`Server.shutdown` shortening that deadline for the connections
        that wait idle (:meth:`close_when_idle`). The general ``sync`` cost three times as
        much here (docs/performance.md)."""
        room = self.server.slots.waiting(self)  # (the idle room: what shutdown wakes)
        try:
            with trio.CancelScope(deadline=self.deadline) as scope:
                self.wait_scope = scope
                await wait_readable(self.sock)
        except trio.ClosedResourceError:
            if self.evicted:
                return False  # another client needed the slot; nothing was in progress
            raise
        finally:
            self.wait_scope = None
            room.pop(self, None)  # (slots.working, for the one place it can be)
        if not scope.cancelled_caught:
            return True  # bytes (or EOF): go and read them
        if self.phase == IDLE:
            return False  # idle too long, or the server is stopping: close quietly
        raise _TimedOut

    def close_when_idle(self) -> None:
        """The server is shutting down and this connection waits idle (``Slots.idle``):
        its wait ends once ``close_grace`` is over (at once when that is zero), called by
        :meth:`Server.shutdown` for each such connection."""
        scope = self.wait_scope
        if scope is not None:
            end = self.server.closing_since + self.config.close_grace
            self.deadline = scope.deadline = min(self.deadline, end)

    # --------------------------------------------------------------------- the handler

    async def run_handler(self, ctx: RequestContext) -> Response:
        """``genResponse``: the handler's response, or a 500 page when it raised or gave
        something that is not a Response. A ProtocolError (a bad body) goes up."""
        self.phase = HANDLER
        try:
            response = await self.handler(ctx)
            if type(response) is not Response or type(response.body) is not bytes:
                response = self.checked(response)  # (a page's usual answer needs no check)
            return response
        except ProtocolError:
            raise
        except Exception as exc:
            return self.failure_page(ctx.request, exc)
        finally:
            if self.reserved:  # the page is done with its body: out of the budget
                self.release_body()

    def client_watch(self) -> ClientWatch:
        """The watch behind ``RequestContext.client_gone_evt`` (one per request)."""
        if self.watch is None:
            self.watch = ClientWatch(self.sock)
            # A page that waits for the client to leave is a long-poll or a stream: its
            # own budget, not a request slot (slots.py).
            self.server.slots.to_streams(self)
        return self.watch

    def replied(self, ctx: RequestContext, status: int) -> None:
        """The reply is out: the page's work after it starts (``conn.after``), and nobody
        watches for the client to hang up any more."""
        if ctx.after_reply is not None:
            ctx.after_reply(status)
        if self.watch is not None:
            self.stop_watching()

    def stop_watching(self) -> None:
        """The reply is out: nobody waits for this request's client to hang up any more,
        and a long-poll or a stream is back among the ordinary slots (slots.py)."""
        if self.watch is not None:
            self.watch.stop()
            self.watch = None
        if self.in_stream_budget:
            self.server.slots.from_streams(self)

    # ------------------------------------------------------------------------------- errors

    async def reject(self, err: ProtocolError, request: Request | None) -> None:
        """Marlow's ``Left resp``: answer a protocol error with its status, then close
        (after a framing error the rest of the byte stream cannot be trusted)."""
        await self.send_last_words(self.reject_page(err, request), request)

    async def send_last_words(self, page: Response, request: Request | None) -> None:
        """An error page with ``Connection: close`` (at most a second for the client to
        take it), then its access record."""
        started = time.time()
        if await self.replies.send_closing(page, request) and self.server.access_enabled:
            self.log_access(request, page.status, len(page.body), started)  # type: ignore[arg-type]
