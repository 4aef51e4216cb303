"""``pyweb serve --loop asyncio``: the same pages on an asyncio Protocol server (Hop §2.4,
pluggable schedulers), on uvloop when it is installed.

trio is pyweb's default loop and its teaching model; this module is the second scheduler.
It is an ``asyncio.Protocol``: the loop calls :meth:`HttpProtocol.data_received` with the
bytes of a connection, and the protocol feeds them to the same sans-IO parser the trio
server uses (:class:`~pyweb.protocol.parser.RequestParser`), runs the same handler (a
:class:`~pyweb.app.site.Site`, through the :class:`~pyweb.handler.Context` contract) in a
task, and writes the reply framed by the same :func:`~pyweb.protocol.response.frame_response`
straight to the transport: no stream wrappers on the hot path. Marlow's ``talk`` is here
too, turned inside out by callbacks: a request arrives → the handler runs → the reply is
written → the next request (already buffered, or the next ``data_received``).

What it keeps from the trio server: the parser's limits (413/414/431...), the header,
keep-alive and body timeouts, HEAD/304/chunked framing, ``Expect: 100-continue``, client
gone (``connection_lost``) and shutdown events for long polls, graceful shutdown on
SIGINT/SIGTERM (stop accepting, close idle connections, let requests in flight finish).
What it does not have yet: the access log, SIGHUP reload, ``--workers``, reply arenas and
sendfile (files are read and written in pieces), the status page.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from pyweb.events import Event, Latch
from pyweb.handler import Handler
from pyweb.protocol.errorpage import error_response
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.messages import NEED_DATA, ConnectionClosed, Data, EndOfMessage, Request
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

from .config import ServerConfig

__all__ = ["AsyncioServer", "HttpProtocol", "new_loop", "serve_asyncio"]

_FILE_CHUNK = 256 * 1024


def new_loop() -> tuple[asyncio.AbstractEventLoop, str]:
    """A new event loop, uvloop's when installed; and its name for the banner."""
    try:
        import uvloop
    except ImportError:
        return asyncio.SelectorEventLoop(), "asyncio"
    return uvloop.new_event_loop(), "uvloop"


class AsyncioServer:
    """The listening side: settings, the handler, the open connections, shutdown."""

    def __init__(self, config: ServerConfig, handler: Handler) -> None:
        self.config = config
        self.handler = handler
        self.stopping = Latch()
        self.connections: set[HttpProtocol] = set()
        self.server: asyncio.base_events.Server | None = None
        self.port = config.port

    async def start(self, sock: socket.socket | None = None) -> None:
        loop = asyncio.get_running_loop()
        if sock is None:
            sock = socket.create_server((self.config.host, self.config.port), backlog=1024)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        self.server = await loop.create_server(lambda: HttpProtocol(self), sock=sock)

    @property
    def url(self) -> str:
        host = self.config.host
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}/"

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting; idle connections close now, busy ones after their reply."""
        self.stopping.set()
        if self.server is not None:
            self.server.close()
        for conn in list(self.connections):
            conn.close_when_idle()
        deadline = time.monotonic() + grace
        while self.connections and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        for conn in list(self.connections):
            conn.abort()


class AioContext:
    """One request on the asyncio server: the handler contract (:class:`pyweb.handler.Context`)."""

    __slots__ = ("request", "peer", "scheme", "dev", "received_at", "alloc", "_conn",
                 "_continue_sent", "body_done")  # fmt: skip

    def __init__(self, conn: HttpProtocol, request: Request) -> None:
        self.request = request
        self.peer = conn.peer
        self.scheme = "http"  # (no proxy headers on this server yet)
        self.dev = conn.config.dev
        self.received_at = time.time()
        self.alloc: tuple[int, int] | None = None
        self._conn = conn
        self._continue_sent = False
        self.body_done = False

    @property
    def server_port(self) -> int:
        return self._conn.server.port

    async def body(self, copies: int = 1) -> bytes:
        # (no body budget on this server yet: ``copies`` is accepted for the contract)
        return b"".join([piece async for piece in self.stream()])

    async def stream(self) -> AsyncIterator[bytes]:
        conn = self._conn
        while not self.body_done:
            event = conn.parser.next_event()
            if event is NEED_DATA:
                if not self._continue_sent and self.request.expect_continue:
                    self._continue_sent = True
                    conn.transport.write(CONTINUE_100)
                await conn.more_body()
            elif type(event) is Data:
                yield event.data
            elif type(event) is EndOfMessage:
                self.body_done = True

    def client_gone_evt(self) -> Event[None]:
        return self._conn.gone.evt()

    def shutdown_evt(self) -> Event[None]:
        return self._conn.server.stopping.evt()

    def log_error(self, message: str, exc: BaseException | None = None) -> None:
        r = self.request
        print(f"pyweb: {message} [from {self.peer}] {r.method} {r.target}", file=sys.stderr)
        if exc is not None and self.dev:
            import traceback

            traceback.print_exception(exc, file=sys.stderr)


class HttpProtocol(asyncio.Protocol):
    """One connection: bytes in through the parser, one handler task per request, replies
    written to the transport."""

    def __init__(self, server: AsyncioServer) -> None:
        self.server = server
        self.config = server.config  # frozen for this connection (Marlow §6)
        self.parser = RequestParser(self.config.limits)
        self.transport: Any = None
        self.peer = "-"
        self.gone = Latch()
        self.busy = False  # a handler runs: the next request waits in the parser
        self.closing = False
        self._waiter: asyncio.Future[None] | None = None  # a body read or a drain
        self._timer: asyncio.TimerHandle | None = None
        self._writable = True

    # -- the loop's callbacks

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "-"
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.connections.add(self)
        self._arm(self.config.keepalive_timeout)

    def data_received(self, data: bytes) -> None:
        self.parser.feed(data)
        if self.busy:
            self._wake()  # the handler waits for its body
        else:
            self._next_request()

    def eof_received(self) -> bool | None:
        self.parser.feed(b"")
        if self.busy:
            self._wake()
        else:
            self._next_request()
        return True  # keep our side open until the reply is written

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.gone.set()
        self.server.connections.discard(self)
        self._disarm()
        self._wake(ConnectionResetError("the client closed the connection"))

    def pause_writing(self) -> None:
        self._writable = False

    def resume_writing(self) -> None:
        self._writable = True
        self._wake()

    # -- waiting (the body, a full send buffer)

    def _wake(self, exc: BaseException | None = None) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            if exc is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(exc)

    async def _wait(self, timeout: float, what: str) -> None:
        if self.closing:
            raise ConnectionResetError("the connection is closed")
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            raise TimeoutError(f"{what} timed out after {timeout:g} s") from None

    async def more_body(self) -> None:
        """Wait for more of the request body (``body_timeout``: then 408 and close)."""
        await self._wait(self.config.body_timeout, "reading the request body")

    async def drain(self) -> None:
        while not self._writable:
            await self._wait(self.config.send_timeout, "sending the reply")

    # -- timeouts

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = asyncio.get_running_loop().call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.busy:
            return
        if self.parser.buffered:  # half a request head: tell the client why
            self._reject(ProtocolError("the request head took too long", status=408))
        else:
            self.transport.close()

    # -- Marlow's talk, one request at a time

    def _next_request(self) -> None:
        if self.closing:
            return
        try:
            event = self.parser.next_event()
        except ProtocolError as err:
            self._reject(err)
            return
        if event is NEED_DATA:
            if self.parser.buffered:
                self._arm(self.config.header_timeout)
            return
        if type(event) is ConnectionClosed:
            self.transport.close()
            return
        assert type(event) is Request
        self._disarm()
        self.busy = True
        asyncio.get_running_loop().create_task(self._respond(event))

    async def _respond(self, request: Request) -> None:
        ctx = AioContext(self, request)
        try:
            response = await self.server.handler(ctx)
        except ProtocolError as err:
            self._reject(err)
            return
        except (TimeoutError, ConnectionError) as err:
            if not self.closing:
                self._reject(ProtocolError(str(err), status=408))
            return
        except Exception as exc:
            ctx.log_error(f"the handler raised {type(exc).__name__}: {exc}", exc)
            response = error_response(500, dev=self.config.dev, detail=repr(exc), exc=exc)
        keep = not self.closing and not self.server.stopping.is_set
        try:
            if keep and not ctx.body_done:
                keep = await self._discard_body(ctx)
            keep = await self._send(request, response, keep)
        except (TimeoutError, ConnectionError, OSError):
            self.abort()
            return
        self.busy = False
        if not keep:
            self.transport.close()
            self.closing = True
            return
        self._arm(self.config.keepalive_timeout)
        self._next_request()  # a pipelined request may already be in the parser

    async def _discard_body(self, ctx: AioContext) -> bool:
        """Read and drop a body the handler did not want, if it is small and coming."""
        if ctx.request.expect_continue and not ctx._continue_sent:
            return False  # the client has not sent it: close rather than ask for it
        try:
            async for _ in ctx.stream():
                pass
        except (ProtocolError, TimeoutError, ConnectionError):
            return False
        return True

    async def _send(self, request: Request, response: Response, keep: bool) -> bool:
        body = response.body
        if isinstance(body, Fragments):
            body = bytes(body)
        if isinstance(body, bytes | bytearray | memoryview):
            length: int | None = len(body)
        elif isinstance(body, FileBody):
            length = body.length
        else:
            length = None
        try:
            head = frame_response(request, response.status, response.headers, length, keep_alive=keep)
        except ValueError as exc:  # a header with a newline: the page's bug, not the client's
            response = error_response(500, dev=self.config.dev, detail=str(exc), exc=exc)
            return await self._send(request, response, keep)
        write = self.transport.write
        if not head.send_body:
            write(head.data)
        elif isinstance(body, bytes | bytearray | memoryview):
            self.transport.writelines((head.data, body))
        elif isinstance(body, FileBody):
            write(head.data)
            await self._send_file(body)
        else:
            write(head.data)
            async for piece in body:  # type: ignore[union-attr]
                if piece:
                    write(encode_chunk(piece) if head.chunked else piece)
                    await self.drain()
            if head.chunked:
                write(LAST_CHUNK)
        await self.drain()
        return head.keep_alive

    async def _send_file(self, body: FileBody) -> None:
        fd = os.open(body.path, os.O_RDONLY)
        try:
            left, position = body.length, body.offset
            while left > 0:
                piece = os.pread(fd, min(left, _FILE_CHUNK), position)
                if not piece:
                    raise OSError(f"{body.path} became shorter while it was being sent")
                self.transport.write(piece)
                left -= len(piece)
                position += len(piece)
                await self.drain()
        finally:
            os.close(fd)

    def _reject(self, err: ProtocolError) -> None:
        """A request that cannot be served: its error page, then close (RFC 9112 §2.2)."""
        page = error_response(err.status, dev=self.config.dev, detail=err.message,
                              offending=err.offending)  # fmt: skip
        head = frame_response(None, page.status, page.headers, len(page.body), keep_alive=False)  # type: ignore[arg-type]
        if not self.closing:
            self.transport.writelines((head.data, page.body))
            self.transport.close()
        self.closing = True
        self.busy = False

    def close_when_idle(self) -> None:
        if not self.busy:
            self.closing = True
            self.transport.close()

    def abort(self) -> None:
        self.closing = True
        if self.transport is not None:
            self.transport.abort()


def serve_asyncio(config: ServerConfig, handler: Handler, site_dir: str) -> int:
    """Run the server until SIGINT/SIGTERM (graceful; a second signal stops at once)."""
    loop, name = new_loop()
    asyncio.set_event_loop(loop)
    server = AsyncioServer(config, handler)
    sock = None
    if config.listen_fd is not None:
        sock = socket.socket(fileno=config.listen_fd)
    try:
        loop.run_until_complete(server.start(sock))
    except OSError as exc:
        print(f"pyweb: error: cannot listen on {config.host}:{config.port}: {exc}", file=sys.stderr)
        return 1
    print(
        f"pyweb serving {site_dir} on {server.url} (loop asyncio on {name}, "
        f"dev mode {'on' if config.dev else 'off'})",
        flush=True,
    )
    done = loop.create_future()
    signals = 0

    def on_signal(signum: int) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            print(f"pyweb: {signal.Signals(signum).name}, shutting down", file=sys.stderr)
            task = loop.create_task(server.shutdown())

            def finished(_task: asyncio.Task[None]) -> None:
                if not done.done():
                    done.set_result(0)

            task.add_done_callback(finished)
        elif not done.done():
            print("pyweb: second signal, stopping now", file=sys.stderr)
            done.set_result(1)

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        return int(loop.run_until_complete(done))
    finally:
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
