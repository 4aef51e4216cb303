"""Replies: a :class:`~pyweb.protocol.Response` framed and sent on one connection.

Marlow's ``sendResponse`` (§3.2) and Hop's "reply" stage (§2.2): the head is framed by the
sans-IO :func:`~pyweb.protocol.frame_response` (status line, Content-Length or chunked,
``Connection``, HEAD and 304 without a body), then the body goes out in one of three ways,
the three kinds of Marlow's ``ResponseBody``:

* **bytes** (and a page's ``Fragments``, the str pieces of a quotation or an HTML node):
  head and body are copied into the connection's reply *arena* and written with one
  ``writev`` (Hop §3.1, SMLserver §5: a reply is assembled in a region, not in a new
  ``bytes`` per request). A body larger than the arena goes after the head from its own
  bytes. The arena is :class:`pyweb_regions.Arena`, the C one or its pure-Python twin
  (same API), so there is one reply path; docs/regions.md has the measurement that chose it.
* **a file** (:class:`~pyweb.protocol.FileBody`): ``os.sendfile``, no copy through user
  space (Hop §3.3.1).
* **an async iterator**: chunked on HTTP/1.1, close-delimited on HTTP/1.0 (Hop §3.2: a
  dynamic reply on a persistent connection without buffering it whole).

A reply that cannot be framed as the handler gave it (a CR LF in a header value, a
``Fragments`` whose length is wrong, a head larger than the arena) is found before anything
is sent, so the client gets a 500 instead. Every write goes straight to the non-blocking
socket; only when the kernel's buffer is full does the task wait, at most ``send_timeout``
per wait (a client that does not read is dropped).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

import pyweb_regions
from pyweb.events import select, timeout, wrap, writable_evt
from pyweb.protocol import response as framing
from pyweb.protocol.response import (
    LAST_CHUNK,
    FileBody,
    Fragments,
    Response,
    encode_chunk,
    frame_response,
)
from pyweb_regions import Arena

if TYPE_CHECKING:
    from pyweb.protocol.messages import Request

    from .config import ServerConfig
    from .logging import ServerLog

__all__ = ["Replies", "ReplyAborted", "Sent", "REPLY_PAGES"]

_MSG_MORE = getattr(socket, "MSG_MORE", 0)  # Linux; elsewhere two segments

REPLY_PAGES = 64 * 1024 // pyweb_regions.PAGE_SIZE + 1
"""The reply arena's growth limit: a 64 KiB body and a page for the head. A larger body
is sent straight from its own bytes after the head; a head that does not fit (a page
setting 80 KiB of header fields) is answered with a 500 before anything is sent."""
_REPLY_BYTES = REPLY_PAGES * pyweb_regions.PAGE_SIZE

_SIZED = (bytes, bytearray, memoryview, Fragments)
"""The bodies of known length (a tuple: isinstance checks it faster than a union)."""

Sent = tuple[int, int, bool]
"""What a reply did: (status, body bytes sent, whether the connection stays open)."""


class ReplyAborted(Exception):
    """The reply could not be completed (a stream that raised, a file that shrank): the
    connection must close. ``sent`` is what went out, for the access log (None: logged)."""

    def __init__(self, sent: Sent | None = None) -> None:
        super().__init__()
        self.sent = sent


class _Unframeable(Exception):
    """A reply that cannot be sent as the handler gave it (its message says why); nothing
    of it has been sent, so the client gets a 500 instead."""


class Replies:
    """The replies of one connection: ``await replies.send(request, response, keep_alive)``."""

    __slots__ = (
        "sock", "fd", "peer", "log", "draw", "dev", "site", "send_timeout", "arena", "sent",
    )  # fmt: skip

    def __init__(
        self,
        sock: socket.socket,
        peer: str,
        config: ServerConfig,
        log: ServerLog,
        draw: Callable[..., Response],
        site: object,
    ) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.peer = peer
        self.log = log
        # The connection's error pages (Connection.error_page), drawn without holding the
        # connection: its bound method here would be a reference cycle, leaving every
        # connection (its parser, its socket object) to the cyclic collector.
        self.draw = draw
        """``Server.error_page``, called with the connection's ``dev`` flag and ``site``."""
        self.dev = config.dev
        self.site = site
        self.send_timeout = config.send_timeout
        self.arena = Arena(max_pages=REPLY_PAGES)
        """Where a reply is assembled and sent from: it holds region pages only while a
        reply is on its way; an idle connection holds none."""
        self.sent = 0
        """Bytes of the arena a :meth:`write_arena` sent before the kernel buffer filled."""

    def error_page(self, status: int, **details: object) -> Response:
        """The connection's page for an error the server answers itself."""
        return self.draw(status, dev=self.dev, site=self.site, **details)

    async def send(self, request: Request, response: Response, keep_alive: bool) -> Sent:
        """Send ``response`` to ``request``; ``keep_alive`` is what the connection would
        like (the head may still say close: HTTP/1.0, a close-delimited stream). A body of
        known length, the common case, is handled here: head and body through the arena,
        one writev."""
        body = response.body
        if type(body) is not bytes and not isinstance(body, _SIZED):
            if isinstance(body, FileBody):
                return await self._send_file(request, response, body, keep_alive)
            return await self._send_stream(request, response, keep_alive)
        length = len(body)
        try:
            head = None
            if framing.C_FRAME is not None:  # the C framer itself (docs/performance.md)
                head = framing.C_FRAME(
                    request, response.status, response.headers, length, keep_alive, None
                )
            if head is None:  # (C framer off, or a reply it leaves to the Python code)
                head = frame_response(
                    request, response.status, response.headers, length, keep_alive=keep_alive
                )
            if not head.send_body:
                length = 0
            rest = self._fill(head.data, body, length)
        except (ValueError, _Unframeable) as exc:  # nothing has been sent: a 500 instead
            return await self._send_500(request, str(exc), keep_alive)
        if self.write_arena():  # all of it at once, the usual case: no second coroutine
            if head.keep_alive:  # fairness: see send_all (a connection that closes now
                await trio.lowlevel.cancel_shielded_checkpoint()  # ends its task: no need)
        else:
            await self.send_arena()  # the rest, as the client takes it
        if rest is not None:  # larger than the arena: from its own bytes, no copy
            await self.send_all(rest)
        return response.status, length, head.keep_alive

    def _fill(
        self, head: bytes, body: bytes | bytearray | memoryview | Fragments, length: int
    ) -> bytes | bytearray | memoryview | None:
        """Copy the head into the arena, then the body (bytes, or a page's str
        fragments written as UTF-8) when it fits. Returns the body still to send from its
        own bytes (it did not fit), or None. Raises :class:`_Unframeable`, the arena left
        empty, when the head does not fit or a hand-made ``Fragments`` is wrong."""
        arena = self.arena
        try:
            arena.write(head)  # all or nothing
        except MemoryError as exc:
            raise _Unframeable(
                f"the reply's header fields do not fit the reply arena ({exc})"
            ) from None
        if not length:
            return None
        fits = len(arena) + length <= _REPLY_BYTES
        if type(body) is bytes or not isinstance(body, Fragments):
            if not fits:
                return body
            arena.write(body)
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

    async def _send_500(self, request: Request, message: str, keep_alive: bool) -> Sent:
        """Nothing of the reply has been sent and it cannot be: log why and send a 500
        (the message on the page in development mode) instead."""
        self.log.error(f"500 for {self.peer}: {message}", request_line=request_line(request))
        page = self.error_page(500, detail=message)
        return await self.send(request, page, keep_alive)

    async def _send_file(
        self, request: Request, response: Response, body: FileBody, keep_alive: bool
    ) -> Sent:
        """A byte range of a file, sent with ``os.sendfile`` (Hop §3.3.1: the kernel's
        page cache is the file cache)."""
        try:
            file_fd = os.open(body.path, os.O_RDONLY)
        except OSError as exc:  # the file vanished between the handler's stat and now
            self.log.error(f"cannot open {body.path!r} for {self.peer}", exc=exc)
            page = self.error_page(404 if isinstance(exc, FileNotFoundError) else 500)
            return await self.send(request, page, keep_alive)
        try:
            head = frame_response(
                request, response.status, response.headers, body.length, keep_alive=keep_alive
            )
            if not head.send_body or not body.length:
                await self.send_all(head.data)
                return response.status, 0, head.keep_alive
            await self._send_head_more(head.data)
            await self._sendfile(file_fd, body)
            return response.status, body.length, head.keep_alive
        finally:
            os.close(file_fd)

    async def _send_head_more(self, data: bytes) -> None:
        """The head with MSG_MORE and without a trip through the scheduler: the kernel holds
        it back until sendfile's bytes join it, so a small file leaves in one TCP segment,
        as a dynamic page does (Hop §4, observation 3: static and dynamic at one pace)."""
        try:
            n = self.sock.send(data, _MSG_MORE)
        except BlockingIOError:
            n = 0
        if n < len(data):
            await self.send_all(data[n:])

    async def _sendfile(self, file_fd: int, body: FileBody) -> None:
        offset, remaining = body.offset, body.length
        while remaining:
            try:
                n = os.sendfile(self.fd, file_fd, offset, remaining)
            except BlockingIOError:
                await self.wait_writable()
                continue
            if n == 0:  # the file shrank under us: the promised length cannot be kept
                self.log.error(f"{body.path!r} shrank while being sent to {self.peer}")
                raise ReplyAborted
            offset += n
            remaining -= n
        await trio.lowlevel.cancel_shielded_checkpoint()  # fairness: see send_all

    async def _send_stream(self, request: Request, response: Response, keep_alive: bool) -> Sent:
        """An async-iterator body, chunked on HTTP/1.1, close-delimited on HTTP/1.0."""
        body = response.body
        head = frame_response(
            request, response.status, response.headers, None, keep_alive=keep_alive
        )
        sent = 0
        try:
            await self.send_all(head.data)
            if head.send_body:
                try:
                    async for piece in body:  # type: ignore[union-attr]
                        if piece:
                            await self.send_all(encode_chunk(piece) if head.chunked else piece)
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
                    raise ReplyAborted((response.status, sent, False)) from exc
                if head.chunked:
                    await self.send_all(LAST_CHUNK)
        finally:
            await self._close_stream(body)
        return response.status, sent, head.keep_alive

    async def _close_stream(self, body: object) -> None:
        aclose = getattr(body, "aclose", None)
        if aclose is not None:
            with trio.CancelScope(shield=True):
                try:
                    await aclose()
                except Exception as exc:
                    self.log.error("error closing a streamed reply", exc=exc)

    async def send_closing(self, page: Response, request: Request | None) -> bool:
        """Send an error page with ``Connection: close``, giving the client at most a
        second (it may be the very client that just timed out). False if it was not sent."""
        head = frame_response(request, page.status, page.headers, len(page.body), keep_alive=False)  # type: ignore[arg-type]
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
                return False
        return True

    def write_arena(self) -> bool:
        """One writev of what the arena holds, without waiting: True when it all went
        (the arena is then reset); False leaves the arena for :meth:`send_arena`, which
        sends the rest. (A plain method: the common case costs no coroutine.)"""
        arena = self.arena
        try:
            sent = arena.send(self.fd)
        except BlockingIOError:
            return False
        except BaseException:
            arena.reset()  # the pages go back; the connection closes
            raise
        if sent < len(arena):
            self.sent = sent
            return False
        arena.reset()
        return True

    async def send_arena(self) -> None:
        """Send what the arena holds and reset it. Fast path: one writev of every page, no
        task switch; when the kernel buffer is full, the same waits as :meth:`send_all`,
        resuming from the byte count (a partial write is never lost or repeated). After a
        :meth:`write_arena` that could not send it all, it goes on from where that ended."""
        arena = self.arena
        fd = self.fd
        try:
            total = len(arena)
            sent, self.sent = self.sent, 0
            try:
                if not sent:
                    sent = arena.send(fd)
            except BlockingIOError:
                sent = 0
            waited = sent < total
            while sent < total:
                await self.wait_writable()
                try:
                    sent += arena.send(fd, sent)
                except BlockingIOError:
                    pass
        finally:
            arena.reset()  # also after an error: the pages go back, the connection closes
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()  # fairness: see send_all

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Send every byte of ``data``. Fast path: one ``os.write`` on the non-blocking
        socket, no task switch; only when the kernel buffer is full does the task wait."""
        try:
            n = os.write(self.fd, data)
        except BlockingIOError:
            n = 0
        if n == len(data):
            # Let the other connections run before this one goes on: without it a reply
            # streamed from ready data would never yield; with it, by the time this task
            # reads again the client's next request has often arrived (docs/server.md).
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        view = memoryview(data)[n:]
        while view:
            await self.wait_writable()
            try:
                n = os.write(self.fd, view)
            except BlockingIOError:
                continue
            view = view[n:]

    async def wait_writable(self) -> None:
        """Wait until the client accepts more bytes, at most ``send_timeout``: a client that
        doesn't read is dropped (a TimeoutError, an OSError: the connection just closes)."""
        if await select(writable_evt(self.fd), wrap(timeout(self.send_timeout), _true)):
            raise TimeoutError(f"{self.peer} did not read its reply for {self.send_timeout:g} s")


def _true(_: object) -> bool:
    return True


def request_line(request: Request) -> str:
    """``GET /path HTTP/1.1``: how the error log names a request."""
    return f"{request.method} {request.target} HTTP/{request.http_version}"
