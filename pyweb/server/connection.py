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

:meth:`Connection.talk` is that loop: read bytes, feed the sans-IO parser
(``parseRequest``; a :class:`~pyweb.protocol.ProtocolError` is the ``Left resp`` case),
run the handler (``genResponse``), send the reply (``sendResponse``), log it
(``logAccess``) and go round again while the connection is persistent.

Timeouts and shutdown are first-class events (Marlow §4, "clients which hang ... can be
disconnected"; CML §2, pyweb.events). Where Marlow wraps a read in a ``timeout``
combinator, a connection that must wait for bytes synchronizes on a choice, exactly as a
CML thread would::

    choose(
        readable_evt(sock),                          # bytes (or EOF): go and read them
        wrap(guard(at_deadline), lambda _: TIMED_OUT),   # keep-alive or header timeout
        port.recv_evt(),                             # the server's broadcast: SHUTDOWN...
    )

The cheap formulation, because this is the hot path: the event is built once per
connection (at its first wait) and kept; the ``guard`` reads the deadline the loop keeps
in a plain attribute (``Connection.deadline``, one float store per phase, at its first
wait: ``now + keepalive_timeout`` while idle, ``now + header_timeout`` once part of a head
has arrived) and makes the timer at each sync; and the connection only syncs when ``recv``
said it would block: a request already in the kernel buffer costs no event (and no clock
read) at all. In
the sync, the socket branch is awaited directly and the port branch is an offer that
interrupts it (``pyweb.events._core._wait_alone``), so the whole choice costs one cancel
scope (which carries the timer) and no helper task. A timed-out wait in the middle of a
request head gets a 408, an idle one is just closed; SHUTDOWN closes an idle connection
and is ignored half-way through a head (that request is finished, with
``Connection: close``). The handler phases use the same idiom with ``timeout``:
``select(readable_evt(sock), timeout(body_timeout))`` while the handler waits for its
body (a 408), ``select(writable_evt(fd), timeout(send_timeout))`` while a reply waits for
a client that doesn't read (the connection is dropped). While the handler runs there is
no deadline. One connection waiting never holds up another: each waits in its own task.

Replies (Hop §3.2, §3.3.1): ``bytes`` bodies go out with Content-Length, head and body in
one ``send`` when small; async-iterator bodies are chunked on HTTP/1.1 (and delimited by
closing on HTTP/1.0); :class:`~pyweb.protocol.FileBody` goes out with ``os.sendfile``.

Hot path (one keep-alive request): one ``recv``, one parse, one handler call, one ``send``
(written with ``os.write`` straight to the non-blocking socket, then one yield to the
other tasks; only if the kernel buffer is full does the task wait), one access record. No
task and no closure is created per request; a cancel scope only when the request had not
arrived yet and the connection has to wait for it (the choice above).
"""

from __future__ import annotations

import math
import os
import socket
import time
from typing import TYPE_CHECKING

import trio

import pyweb_regions
from pyweb.events import (
    Event,
    at_time,
    choose,
    guard,
    readable_evt,
    select,
    sync,
    timeout,
    wrap,
    writable_evt,
)
from pyweb.events.library import Port
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.events import NEED_DATA, ConnectionClosed, Data, EndOfMessage, Request
from pyweb.protocol.parser import RequestParser
from pyweb.protocol.response import (
    CONTINUE_100,
    LAST_CHUNK,
    FileBody,
    Fragments,
    Response,
    encode_chunk,
    frame_response,
)

from .budget import BUDGET
from .context import RequestContext
from .control import SHUTDOWN
from .errorpage import error_response
from .gone import ClientWatch
from .listener import close_socket
from .logging import AccessRecord
from .proxy import forwarded, peer_host
from .recvbuf import ARENA, receive

if TYPE_CHECKING:
    from . import Server

__all__ = ["Connection", "DRAIN_LIMIT"]

_INF = math.inf
_MSG_MORE = getattr(socket, "MSG_MORE", 0)  # Linux; elsewhere two segments

# How small a reply must be for head and body to be joined into one send: the copy is
# cheaper than a second system call (and a second TCP segment with Nagle off).
_JOIN_LIMIT = 64 * 1024

_REPLY_PAGES = _JOIN_LIMIT // pyweb_regions.PAGE_SIZE + 1
"""The reply arena's growth limit: a 64 KiB body and a page for the head. A larger body
is sent straight from its own bytes after the head; a head that does not fit (a page
setting 80 KiB of header fields) is answered with a 500 before anything is sent."""
_REPLY_BYTES = _REPLY_PAGES * pyweb_regions.PAGE_SIZE

DRAIN_LIMIT = 64 * 1024
"""A request body the handler did not read is read and thrown away after the reply, so the
connection can stay open, when it is at most this long, framed by Content-Length, and the
client did not ask for ``100 Continue``. Otherwise the reply says ``Connection: close``:
reading an unbounded body just to keep a connection is a waste (and a client waiting for
``100 Continue`` never sends the body at all, so the server must not wait for it)."""

DRAIN_TIME = 1.0
"""Seconds an unread body is drained after its reply at most (then the connection closes)."""

# What the connection is doing, for the timeouts and for graceful shutdown.
IDLE = 0  # waiting for the first byte of a request: close silently on timeout/shutdown
HEAD = 1  # part of a request head has arrived: 408 on timeout
BODY = 2  # waiting for more of a request body: 408 on timeout
HANDLER = 3  # the handler is running: no deadline
SEND = 4  # waiting for the client to accept reply bytes: close on timeout
DRAIN = 5  # reading an unread body after its reply was sent: close on timeout


class _Abort(Exception):
    """The reply cannot be completed (broken stream, vanished file): close the connection."""


class _Unframeable(Exception):
    """A reply that cannot be sent as the handler gave it (its message says why); nothing
    of it has been sent, so the client gets a 500 instead."""


class _TimedOut(Exception):
    """The header or keep-alive deadline passed while waiting for bytes (see ``phase``)."""


_TIMED_OUT = object()  # the value of a wait's timer branch


def _timed_out(_: object) -> object:
    return _TIMED_OUT


class Connection:
    """One client connection and its ``talk`` loop. ``await conn.run()`` serves it to the
    end and closes the socket."""

    __slots__ = (
        "server", "sock", "fd", "peer", "parser", "deadline", "phase", "handler", "log",
        "port", "request_evt", "fresh", "watch", "arena", "via_proxy", "served", "opened_at",
        "evicted", "in_stream_budget", "reserved",
    )  # fmt: skip

    def __init__(self, server: Server, sock: socket.socket, peer: str) -> None:
        self.server = server
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.parser = RequestParser(server.config.limits)
        self.deadline = _INF
        """When a wait for a request stops waiting (trio clock), read by the guard of
        :attr:`request_evt`."""
        self.phase = IDLE
        self.handler = server.handler
        self.log = server.log
        self.port: Port[str] | None = None
        """This connection's port on ``server.broadcast`` (made at the first wait)."""
        self.request_evt: Event[object] | None = None
        """bytes | deadline | broadcast message: what an idle connection waits for."""
        self.fresh = True
        """No request has been read yet (graceful shutdown waits for the first one)."""
        self.served = 0
        """Requests read on this connection (``keepalive_requests``)."""
        self.opened_at = time.time()
        """When the connection was accepted (``keepalive_time``)."""
        self.evicted = False
        """Closed by :class:`~.slots.Slots` to make room for a newcomer (it was waiting)."""
        self.in_stream_budget = False
        """The request is in a long wait, counted against ``max_streams`` (slots.py)."""
        self.reserved = 0
        """Bytes of the process's body budget the current request holds (budget.py)."""
        self.watch: ClientWatch | None = None
        """Watches for the client leaving, once a handler asks (``ctx.client_gone_evt()``)."""
        proxies = server.proxies
        self.via_proxy = (
            proxies.trusts if proxies is not None and proxies.trusts(peer_host(peer)) else None
        )
        """Set when the peer is a trusted reverse proxy (each request names its client,
        proxy.py): the test of the further proxies named in ``X-Forwarded-For``."""
        self.arena = pyweb_regions.Arena(max_pages=_REPLY_PAGES) if ARENA else None
        """Where a reply is assembled and sent from (Hop §3.1, SMLserver §5): it holds
        region pages only while a reply is on its way; an idle connection holds none."""

    # ---------------------------------------------------------------- life of a connection

    async def run(self) -> None:
        """Serve requests until the client leaves, a timeout strikes, or the server shuts
        down; then close. Never raises (except trio's own cancellation): Marlow's
        ``catch (talk ...) logError`` and ``finally hClose``."""
        server = self.server
        server.connections.add(self)
        try:
            try:
                await self.talk()
            except _TimedOut:
                if self.phase == HEAD:
                    # A client stopped half-way through a request: tell it why we hang up.
                    await self._send_last_words(self.error_page(408), None)
        except OSError:
            pass  # the client went away (reset, broken pipe): nothing to answer
        except _Abort:
            pass  # already logged where it happened
        except Exception as exc:  # a bug in the server itself: log it, keep serving others
            self.log.error(f"internal error on connection from {self.peer}", exc=exc)
        finally:
            self.release_body()
            server.connections.discard(self)
            if self.port is not None:
                self.port.close()
            close_socket(self.sock)

    def release_body(self) -> None:
        """The request's body is no longer held: its bytes leave the budget (budget.py)."""
        if self.reserved:
            BUDGET.release(self.reserved)
            self.reserved = 0

    def client_watch(self) -> ClientWatch:
        """The watch behind ``RequestContext.client_gone_evt`` (one per request)."""
        if self.watch is None:
            self.watch = ClientWatch(self.sock)
            # A page that waits for the client to leave is a long-poll or a stream: its
            # own budget, not a request slot (slots.py).
            self.server.slots.to_streams(self)
        return self.watch

    def evict(self) -> None:
        """Close this waiting connection to make room for a newcomer (slots.py): its wait
        ends with ClosedResourceError; the connection loop then closes the socket."""
        self.evicted = True
        trio.lowlevel.notify_closing(self.sock)

    # ------------------------------------------------------------- waiting for a request

    def _deadline_evt(self) -> Event[None]:
        # The guard of request_evt: the deadline of *this* wait, set by the loop.
        return at_time(self.deadline)

    async def wait_for_request(self) -> bool:
        """Wait until the socket has bytes (True), the deadline passes (an idle connection:
        False; half a head: raises :class:`_TimedOut`) or a SHUTDOWN arrives while idle
        (False). Called only after ``recv`` said it would block."""
        # Graceful shutdown: an idle persistent connection stops waiting. A fresh one is not
        # idle: its client has just connected and is about to send its request (closing it
        # would reset a request already on its way), so it gets the header timeout.
        idle = self.phase == IDLE and not self.fresh
        if idle and self.server.closing:
            # Graceful shutdown or a recycle: a keep-alive client may have sent its next
            # request already (it is on the wire). Closing now would reset it; watch the
            # connection a moment longer instead and answer it with Connection: close.
            if not self._grace():
                return False
        evt = self.request_evt
        if evt is None:
            # First wait of this connection: subscribe to the broadcast, then build the
            # event once; every later wait reuses it (the guard re-reads the deadline).
            self.port = port = self.server.broadcast.port()
            evt = self.request_evt = choose(
                readable_evt(self.sock),
                wrap(guard(self._deadline_evt), _timed_out),
                port.recv_evt(),
            )
        slots = self.server.slots
        slots.waiting(self)
        try:
            while True:
                what = await sync(evt)
                if what is None:
                    return True
                if what is _TIMED_OUT:
                    if self.phase == IDLE:
                        return False
                    raise _TimedOut
                if what == SHUTDOWN and idle and not self._grace():
                    return False
                # RELOAD, or SHUTDOWN half-way through a head: finish the request (its
                # reply will say Connection: close, since server.closing is set).
        except trio.ClosedResourceError:
            if self.evicted:
                return False  # another client needed the slot; nothing was in progress
            raise
        finally:
            slots.working(self)

    def _grace(self) -> bool:
        """Shorten an idle wait to the server's ``close_grace`` after its shutdown began;
        False when that is already over (close now)."""
        server = self.server
        end = server.closing_since + server.config.close_grace
        if trio.current_time() >= end:
            return False
        self.deadline = min(self.deadline, end)
        return True

    async def talk(self) -> None:
        """Marlow's ``talk``: read → parse → respond → log → keep-alive (module doc)."""
        server = self.server
        config = server.config
        parser = self.parser
        fd = self.fd
        handler = self.handler
        log_access = server.access_enabled
        dev = config.dev
        peer = self.peer
        first = True

        while True:
            # ---- getRequest + parseRequest: bytes in, one Request out
            try:
                event = parser.next_event()
                if event is NEED_DATA:
                    if parser.buffered:
                        self.phase = HEAD
                        wait = config.header_timeout
                    else:
                        # (When the server is closing, a request already in the kernel
                        # buffer is still served: wait_for_request stops only a real wait.)
                        self.phase = IDLE
                        wait = config.first_byte_timeout if first else config.keepalive_timeout
                    # The deadline (now + wait) is set at the first real wait: a request
                    # that is already in the kernel buffer costs no clock read (Hop §3.1).
                    deadline_set = False
                    while True:
                        try:  # the system call first; wait only if it would block
                            # read into this thread's region page, fed to the parser (Hop
                            # §3.1: no 64 KiB bytes object per read; see recvbuf.py)
                            receive(fd, parser)
                        except BlockingIOError:
                            if not deadline_set:
                                self.deadline = trio.current_time() + wait
                                deadline_set = True
                            if not await self.wait_for_request():
                                return
                            continue
                        event = parser.next_event()
                        if event is not NEED_DATA:
                            break
                        if self.phase == IDLE:
                            # The first bytes of a head: now the header timeout runs.
                            self.phase = HEAD
                            self.deadline = trio.current_time() + config.header_timeout
                            deadline_set = True
            except ProtocolError as err:
                await self.reject(err, None)
                return
            if type(event) is not Request:
                if type(event) is ConnectionClosed:
                    return
                raise RuntimeError(f"parser produced {event!r} where a request head belongs")
            request = event
            first = self.fresh = False

            # ---- genResponse: the handler, in no deadline
            self.phase = HANDLER
            received_at = time.time()
            if self.via_proxy is not None:  # the client behind the proxy, and its scheme
                client, scheme = forwarded(request.headers, peer, self.via_proxy)
                ctx = RequestContext(self, request, client, dev, received_at)
                ctx.scheme = scheme
            else:
                ctx = RequestContext(self, request, peer, dev, received_at)
            try:
                response = await handler(ctx)
                if type(response) is not Response and not isinstance(response, Response):
                    raise TypeError(
                        f"a handler must return a pyweb Response, not {type(response).__name__}"
                    )
            except ProtocolError as err:  # from ctx.body(): a bad or oversized body
                await self.reject(err, request)
                return
            except Exception as exc:
                self.log.error(
                    f"handler error for {peer}",
                    request_line=request_line(request),
                    exc=exc,
                )
                response = error_response(500, dev=dev, detail=str(exc), exc=exc)

            # ---- what happens to a body the handler did not read (see DRAIN_LIMIT)
            keep_alive = request.keep_alive and not server.closing
            self.served += 1
            if keep_alive and (
                self.served >= config.keepalive_requests
                or received_at - self.opened_at >= config.keepalive_time
            ):
                keep_alive = False  # nginx's keepalive_requests / keepalive_time
            drain = False
            if not ctx.body_done:
                try:  # usually the EndOfMessage of a request without a body, at once
                    event = parser.next_event()
                    finished = type(event) is EndOfMessage or self._discard_buffered_body(ctx)
                except ProtocolError:
                    finished, keep_alive = True, False
                if not finished:
                    if (
                        request.content_length is not None
                        and request.content_length <= DRAIN_LIMIT
                        and not request.expect_continue
                    ):
                        drain = True
                    else:
                        keep_alive = False

            # ---- sendResponse
            self.release_body()  # the page is done with its body: out of the budget
            status, sent, keep_alive = await self.respond(request, response, keep_alive)
            if self.watch is not None:  # the reply is out: nobody waits for a hang-up now
                self.watch.stop()
                self.watch = None
            if self.in_stream_budget:  # a long-poll or a stream has ended (slots.py)
                server.slots.from_streams(self)

            # ---- logAccess
            if log_access:
                self.log_access(request, status, sent, received_at, ctx.alloc, ctx.peer)
            if not keep_alive:
                return
            if drain:
                self.phase = DRAIN
                ctx.drain_until = trio.current_time() + DRAIN_TIME
                try:  # receive_body gives each wait body_timeout, then a 408 error
                    async for _ in ctx.stream():
                        pass
                except ProtocolError:
                    return  # no second reply after the first one: just close

    # ----------------------------------------------------------------------- request bodies

    @staticmethod
    def _discard_buffered_body(ctx: RequestContext) -> bool:
        """Consume what is already buffered of an unread body; True if it reached its end."""
        parser = ctx._conn.parser
        while True:
            event = parser.next_event()
            if type(event) is EndOfMessage:
                ctx.body_done = True
                return True
            if event is NEED_DATA:
                return False
            if type(event) is not Data:  # pragma: no cover - parser contract
                raise RuntimeError(f"unexpected parser event in a request body: {event!r}")

    async def receive_body(self, deadline: float = _INF) -> None:
        """Wait (at most ``body_timeout``, and not past the whole body's ``deadline``, trio
        time) for more of the request body; for RequestContext. A body that stops arriving
        or is too slow in all raises a 408 :class:`~pyweb.protocol.ProtocolError`."""
        phase = self.phase
        if phase == HANDLER:
            self.phase = BODY
        body_timeout = self.server.config.body_timeout
        watch = self.watch
        if watch is not None:
            watch.stop()  # one task at a time may wait on the socket: now it is this one
        while True:
            try:
                receive(self.fd, self.parser)  # into the thread's region page, then parsed
                break
            except BlockingIOError:
                left = deadline - trio.current_time()
                if left <= 0:
                    raise ProtocolError(
                        f"the request body was too slow: body_timeout ({body_timeout:g} s) "
                        "plus a second per body_min_rate bytes has passed",
                        status=408,
                    ) from None
                if await self._wait_for_body(min(body_timeout, left)) and left > body_timeout:
                    raise ProtocolError(
                        f"the request body stopped arriving for {body_timeout:g} s", status=408
                    ) from None
        self.phase = phase
        if watch is not None and watch.waiters:
            watch.start()
        # A large upload whose bytes keep arriving would otherwise never let other
        # connections run (recv above only yields when it has to wait).
        await trio.lowlevel.checkpoint()

    async def _wait_for_body(self, wait: float) -> bool:
        """One wait for body bytes, at most ``wait`` seconds: True if it timed out. A 408
        ProtocolError when the slot is taken for a newcomer while the body stalls."""
        slots = self.server.slots
        slots.waiting(self)
        try:
            return bool(await select(readable_evt(self.sock), wrap(timeout(wait), _timed_out)))
        except trio.ClosedResourceError:
            if self.evicted:
                raise ProtocolError(
                    "the request body was too slow while the server was full", status=408
                ) from None
            raise
        finally:
            slots.working(self)

    async def send_continue(self) -> None:
        """Tell a client waiting with ``Expect: 100-continue`` to send its body."""
        await self.send_all(CONTINUE_100)

    # ------------------------------------------------------------------------------ replies

    async def respond(
        self, request: Request, response: Response, keep_alive: bool
    ) -> tuple[int, int, bool]:
        """Send ``response``; return (status, body bytes sent, whether to keep the
        connection). The three body kinds of Marlow's ``ResponseBody`` / Hop §2.2."""
        body = response.body
        status = response.status
        if type(body) is bytes or isinstance(body, (bytes, bytearray, memoryview, Fragments)):
            length = len(body)
            try:
                head = frame_response(
                    request, status, response.headers, length, keep_alive=keep_alive
                )
            except ValueError as exc:  # a header field the handler set: CR, LF, bad name
                return await self._respond_500(request, str(exc), keep_alive)
            if self.arena is not None:
                # Hop §3.1: head and body copied into the connection's arena, one writev.
                if not head.send_body:
                    length = 0
                try:
                    rest = self._fill_arena(head.lines, body, length)
                except _Unframeable as exc:  # nothing has been sent: the client gets a 500
                    return await self._respond_500(request, str(exc), keep_alive)
                await self.send_arena()
                if rest is not None:  # larger than the arena: from its own bytes, no copy
                    await self.send_all(rest)
                return status, length, head.keep_alive
            if type(body) is Fragments:
                try:
                    body = bytes(body)
                except (TypeError, ValueError) as exc:
                    return await self._respond_500(request, f"bad reply body: {exc}", keep_alive)
                if len(body) != length:
                    message = f"bad reply body: {len(body)} bytes, not {length}"
                    return await self._respond_500(request, message, keep_alive)
            if head.send_body and length:
                if length <= _JOIN_LIMIT:
                    await self.send_all(head.data + body)
                else:
                    await self.send_all(head.data)
                    await self.send_all(body)
                return status, length, head.keep_alive
            await self.send_all(head.data)
            return status, 0, head.keep_alive
        if isinstance(body, FileBody):
            return await self._respond_file(request, response, body, keep_alive)
        return await self._respond_stream(request, response, keep_alive)

    def _fill_arena(
        self,
        lines: list[bytes],
        body: bytes | bytearray | memoryview | Fragments,
        length: int,
    ) -> bytes | bytearray | memoryview | None:
        """Copy a reply of known length into the connection's arena: the head lines, then
        the body (bytes, or the str fragments of a quotation or HTML node, written as
        UTF-8) when it fits. Returns the body still to send from its own bytes (it did not
        fit), or None. Raises :class:`_Unframeable`, the arena left empty, when the head
        does not fit or a hand-made ``Fragments`` is wrong. Not a coroutine: this is the
        hot path, and a coroutine per step costs more than the copies save."""
        arena = self.arena
        assert arena is not None
        try:
            arena.writev(lines)  # all or nothing
        except MemoryError as exc:
            raise _Unframeable(
                f"the reply's header fields do not fit the reply arena ({exc})"
            ) from None
        if not length:
            return None
        fits = len(arena) + length <= _REPLY_BYTES
        if type(body) is not Fragments:
            if not fits:
                return body
            arena.write(body)  # bytes-like: exactly `length` bytes, and they fit
            return None
        # str pieces: each must be a str, and their UTF-8 must add up to `length`
        at = len(arena)
        try:
            if fits:
                arena.writev(body.parts)
                written = len(arena) - at
            else:
                data = bytes(body)
                written = len(data)
            problem = "" if written == length else f"{written} bytes, not {length}"
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            problem = str(exc)
        if problem:
            arena.reset()  # the head must not go out with the next reply
            raise _Unframeable(f"bad reply body: {problem}")
        return None if fits else data

    async def _respond_500(
        self, request: Request, message: str, keep_alive: bool
    ) -> tuple[int, int, bool]:
        """Nothing of the reply has been sent and it cannot be: log why and send a 500
        (the message on the page in development mode) instead."""
        self.log.error(f"500 for {self.peer}: {message}", request_line=request_line(request))
        page = error_response(500, dev=self.server.config.dev, detail=message)
        return await self.respond(request, page, keep_alive)

    async def _respond_file(
        self, request: Request, response: Response, body: FileBody, keep_alive: bool
    ) -> tuple[int, int, bool]:
        """A byte range of a file, sent with ``os.sendfile`` (Hop §3.3.1: no copy through
        user space; the kernel's page cache is the file cache)."""
        try:
            file_fd = os.open(body.path, os.O_RDONLY)
        except OSError as exc:  # the file vanished between the handler's stat and now
            self.log.error(f"cannot open {body.path!r} for {self.peer}", exc=exc)
            page = self.error_page(404 if isinstance(exc, FileNotFoundError) else 500)
            return await self.respond(request, page, keep_alive)
        try:
            head = frame_response(
                request, response.status, response.headers, body.length, keep_alive=keep_alive
            )
            data = head.data
            if not head.send_body or not body.length:
                await self.send_all(data)
                return response.status, 0, head.keep_alive
            # The head goes out with MSG_MORE and without a trip through the scheduler: the
            # kernel holds it back until sendfile's bytes join it, so a small file leaves in
            # one TCP segment, as a dynamic page does (Hop §4, observation 3: static and
            # dynamic content at the same pace). The fairness checkpoint comes at the end.
            try:
                n = self.sock.send(data, _MSG_MORE)
            except BlockingIOError:
                n = 0
            if n < len(data):
                await self.send_all(data[n:])
            offset, remaining = body.offset, body.length
            while remaining:
                try:
                    n = os.sendfile(self.fd, file_fd, offset, remaining)
                except BlockingIOError:
                    await self._wait_writable()
                    continue
                if n == 0:  # the file shrank under us: the promised length cannot be kept
                    self.log.error(f"{body.path!r} shrank while being sent to {self.peer}")
                    raise _Abort
                offset += n
                remaining -= n
            await trio.lowlevel.cancel_shielded_checkpoint()
            return response.status, body.length, head.keep_alive
        finally:
            os.close(file_fd)

    async def _respond_stream(
        self, request: Request, response: Response, keep_alive: bool
    ) -> tuple[int, int, bool]:
        """An async-iterator body: chunked on HTTP/1.1 (Hop §3.2: a dynamic reply on a
        persistent connection without buffering it whole), close-delimited on HTTP/1.0."""
        body = response.body
        self.server.slots.to_streams(self)  # a stream has its own budget (slots.py)
        head = frame_response(
            request, response.status, response.headers, None, keep_alive=keep_alive
        )
        sent = 0
        try:
            await self.send_all(head.data)
            if head.send_body:
                chunked = head.chunked
                try:
                    async for piece in body:  # type: ignore[union-attr]
                        if piece:
                            await self.send_all(encode_chunk(piece) if chunked else piece)
                            sent += len(piece)
                except (OSError, trio.Cancelled):
                    raise
                except Exception as exc:
                    # Too late for a 500: the head is out. Log it and cut the connection,
                    # so the client sees a truncated body rather than a complete-looking one.
                    self.log.error(
                        f"error while streaming a reply to {self.peer}",
                        request_line=request_line(request),
                        exc=exc,
                    )
                    if self.server.access_enabled:
                        self.log_access(request, response.status, sent, time.time())
                    raise _Abort from exc
                if chunked:
                    await self.send_all(LAST_CHUNK)
        finally:
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                with trio.CancelScope(shield=True):
                    try:
                        await aclose()
                    except Exception as exc:
                        self.log.error("error closing a streamed reply", exc=exc)
        return response.status, sent, head.keep_alive

    async def send_arena(self) -> None:
        """Send what the connection's arena holds and reset it. Fast path: one writev of
        every page, no task switch; when the kernel buffer is full, the same waits as
        :meth:`send_all`, resuming from the byte count (a partial write is never lost or
        repeated)."""
        arena = self.arena
        assert arena is not None
        fd = self.fd
        try:
            total = len(arena)
            try:
                sent = arena.send(fd)
            except BlockingIOError:
                sent = 0
            waited = sent < total
            while sent < total:
                await self._wait_writable()
                try:
                    sent += arena.send(fd, sent)
                except BlockingIOError:
                    pass
        finally:
            arena.reset()  # also after an error: the pages go back, the connection closes
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()  # fairness: see send_all

    async def send_all(self, data: bytes) -> None:
        """Send every byte of ``data``. Fast path: one ``os.write`` on the non-blocking
        socket, no task switch. Only when the kernel buffer is full does the task wait,
        for at most ``send_timeout`` per wait (a client that doesn't read is dropped)."""
        try:
            n = os.write(self.fd, data)
        except BlockingIOError:
            n = 0
        if n == len(data):
            # Let the other connections run before this one goes on. Without it a reply
            # streamed from ready data would never yield; with it, by the time this task
            # reads again the client's next request has often arrived, which saves a
            # failed recv and an epoll registration (measured: ~10% less CPU per request).
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        view = memoryview(data)[n:]
        while view:
            await self._wait_writable()
            try:
                n = os.write(self.fd, view)
            except BlockingIOError:
                continue
            view = view[n:]

    async def _wait_writable(self) -> None:
        """Wait until the client accepts more bytes, at most ``send_timeout``: a client that
        doesn't read is dropped (a TimeoutError, an OSError: the connection just closes)."""
        phase = self.phase
        self.phase = SEND
        send_timeout = self.server.config.send_timeout
        if await select(writable_evt(self.fd), wrap(timeout(send_timeout), _timed_out)):
            raise TimeoutError(f"{self.peer} did not read its reply for {send_timeout:g} s")
        self.phase = phase

    # ------------------------------------------------------------------------------- errors

    def error_page(self, status: int, err: ProtocolError | None = None) -> Response:
        if err is None:
            return error_response(status, dev=self.server.config.dev)
        return error_response(
            status, dev=self.server.config.dev, detail=err.message, offending=err.offending
        )

    async def reject(self, err: ProtocolError, request: Request | None) -> None:
        """Marlow's ``Left resp``: answer a protocol error with its status, then close
        (after a framing error the rest of the byte stream cannot be trusted)."""
        self.log.error(
            f"{err.status} for {self.peer}: {err.message}",
            request_line=(request_line(request) if request else ""),
        )
        await self._send_last_words(self.error_page(err.status, err), request)

    async def _send_last_words(self, page: Response, request: Request | None) -> None:
        """Send an error page with ``Connection: close``, giving the client at most a
        second (it may be the very client that just timed out), then log it."""
        started = time.time()
        head = frame_response(request, page.status, page.headers, len(page.body), keep_alive=False)
        data = head.data + page.body if head.send_body else head.data  # type: ignore[operator]
        with trio.move_on_after(1.0):
            try:
                view = memoryview(data)
                while view:
                    try:
                        view = view[self.sock.send(view) :]
                    except BlockingIOError:
                        await trio.lowlevel.wait_writable(self.sock)
            except OSError:
                return
        if self.server.access_enabled:
            self.log_access(request, page.status, len(page.body), started)  # type: ignore[arg-type]

    # ---------------------------------------------------------------------------------- log

    def log_access(
        self,
        request: Request | None,
        status: int,
        sent: int,
        received_at: float,
        alloc: tuple[int, int] | None = None,
        peer: str | None = None,
    ) -> None:
        """Send one access record to the logging task (Marlow's ``logAccess``); ``request``
        is ``None`` when none could be parsed. ``alloc``: what the request's page allocated
        (``ctx.alloc``), ``None`` when nothing was counted (the log then says ``alloc=-``)."""
        referer = user_agent = ""
        if request is not None:
            # One pass over the fields for both (Request.header would scan twice).
            for name, value in request.headers:
                if name == "referer":
                    referer = value
                elif name == "user-agent":
                    user_agent = value
            method, target, version = request.method, request.target, request.http_version
        else:
            method = target = version = "-"
        self.log.access(
            AccessRecord(  # positional: the field order of AccessRecord
                peer or self.peer,
                received_at,
                method,
                target,
                version,
                status,
                sent,
                referer,
                user_agent,
                time.time() - received_at,
                alloc,
            )  # fmt: skip
        )


def request_line(request: Request) -> str:
    """``GET /path HTTP/1.1``: how the error log names a request."""
    return f"{request.method} {request.target} HTTP/{request.http_version}"
