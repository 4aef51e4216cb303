"""Replies on the asyncio server: a :class:`~pyweb.protocol.Response` written to a transport.

The asyncio twin of ``reply.py`` (Marlow's ``sendResponse``, Hop's "reply" stage), with the
same API (:meth:`AioReplies.send` returns what the access log needs) and the same three
kinds of body, framed by the same sans-IO :func:`~pyweb.protocol.frame_response`:

* **bytes** (and a page's ``Fragments``): :meth:`AioReplies.write_now`, no coroutine: head
  and body joined and written at once when the body is small (uvloop then tries the
  ``send`` right away; two pieces take its ``writev`` path, which costs more than the
  copy), handed over together (``writelines``) when it is large; a head larger than the
  trio server's reply arena could hold (:data:`HEAD_LIMIT`) is a 500, as on trio;
* **a file** (:class:`~pyweb.protocol.FileBody`): a small one (:data:`SMALL_FILE`) read
  and written behind its head, in one TCP segment as on trio; a larger one with
  ``os.sendfile`` on the connection's socket whenever the transport has nothing queued
  (Hop §3.3.1: no copy through user space); when the client's window is full, the next
  piece goes through the transport (which queues it) and sendfile resumes once the queue
  has drained. The transport's buffer is always empty when the socket is written
  directly, so bytes never overtake each other;
* **an async iterator**: chunked on HTTP/1.1, close-delimited on HTTP/1.0.

Where the trio server waits for the socket to be writable, this one waits for the
transport's flow control (``pause_writing``/``resume_writing``), at most ``send_timeout``
per wait: a client that does not read is dropped.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pyweb_regions
from pyweb.protocol import response as framing
from pyweb.protocol.response import (
    LAST_CHUNK,
    FileBody,
    Fragments,
    Response,
    encode_chunk,
    frame_response,
)

from ..reply import REPLY_PAGES, ReplyAborted, Sent, request_line

if TYPE_CHECKING:
    from pyweb.protocol.messages import Request

    from ..logging import ServerLog

__all__ = ["AioReplies", "FILE_PIECE", "HEAD_LIMIT", "JOIN_LIMIT", "SMALL_FILE"]

FILE_PIECE = 256 * 1024
"""Bytes of a file read and queued on the transport when sendfile would block."""

JOIN_LIMIT = 16 * 1024
"""Bodies up to this size are copied behind their head and written in one piece."""

HEAD_LIMIT = REPLY_PAGES * pyweb_regions.PAGE_SIZE
"""The largest reply head: what the trio server's reply arena can hold (``reply.py``). A
larger one (a page setting 80 KiB of header fields) is answered with a 500, as on trio."""

SMALL_FILE = 4096
"""Files up to this size are read and written behind their head in one ``write``; larger
ones go out with ``sendfile``. A transport sends the head at once, so with sendfile a small
file would leave in a second TCP segment (the trio server holds its head back with
``MSG_MORE``, which a transport cannot): the copy costs less than the kernel's extra work
(docs/performance.md, "Small files are copied on asyncio"; ``bench_small_files.py``)."""

_SIZED = (bytes, bytearray, memoryview)


class AioReplies:
    """The replies of one asyncio connection (see the module doc): a base class of
    :class:`~pyweb.server.asyncio.HttpProtocol`, which provides what is declared here.

    A base class, not an object of its own: replies that held the connection's bound
    methods (its error pages, its drain) made a reference cycle per connection, so every
    closed connection waited for the cyclic garbage collector (docs/performance.md)."""

    transport: Any
    peer: str
    log: ServerLog
    _fd: int | None = None

    def error_page(self, status: int, **details: Any) -> Response:
        """The server's error page for ``status`` (the connection's own)."""
        raise NotImplementedError

    async def drain(self) -> None:
        """Wait while the transport's buffer is over its high mark (``send_timeout``)."""
        raise NotImplementedError

    def close_after_reply(self) -> None:
        """Close the connection, its last reply written (the FIN right behind it)."""
        raise NotImplementedError

    @property
    def fd(self) -> int:
        """The socket's descriptor, for sendfile (-1: not a socket, pieces only); looked up
        at the first file sent."""
        if self._fd is None:
            sock = self.transport.get_extra_info("socket")
            self._fd = sock.fileno() if sock is not None else -1
        return self._fd

    def write_now(self, request: Request, response: Response, keep_alive: bool) -> Sent | None:
        """Write a reply whose body is in memory (bytes, a page's Fragments), head and body
        at once; returns what :meth:`send` returns, or None, with nothing written, when
        :meth:`send` must do it (a file, a stream, a header or Fragments that need the 500
        page). The caller waits for the transport to drain."""
        body = response.body
        if type(body) is not bytes:
            if isinstance(body, Fragments):
                try:
                    data = bytes(body)
                except (TypeError, ValueError):
                    return None
                if len(data) != body.length:
                    return None
                body = data
            elif not isinstance(body, _SIZED):
                return None
        length = len(body)
        join = body if length <= JOIN_LIMIT and type(body) is bytes else None
        status = response.status
        try:  # a small body is joined behind the head: one bytes, one write
            head = None
            if framing.C_FRAME is not None:  # the C framer itself (docs/performance.md)
                head = framing.C_FRAME(request, status, response.headers, length, keep_alive, join)
            if head is None:  # (C framer off, or a reply it leaves to the Python code)
                head = frame_response(
                    request, status, response.headers, length, keep_alive=keep_alive, join=join
                )
        except ValueError:
            return None
        data = head.data
        if not head.send_body:
            length = 0
        joined = join is not None and head.send_body
        # A head too large for the trio server's reply arena: send() answers a 500.
        if len(data) - (length if joined else 0) > HEAD_LIMIT:
            return None
        if joined or not length:
            self.transport.write(data)
        else:
            self.transport.writelines((data, body))
        return status, length, head.keep_alive

    async def send(self, request: Request, response: Response, keep_alive: bool) -> Sent:
        """Send ``response``; returns (status, body bytes sent, whether to keep the
        connection). The head may still say close (HTTP/1.0, a close-delimited stream)."""
        body = response.body
        if isinstance(body, Fragments):
            try:
                data = bytes(body)
                problem = (
                    "" if len(data) == body.length else f"{len(data)} bytes, not {body.length}"
                )
            except (TypeError, ValueError) as exc:  # a piece that is not a str, bad UTF-8
                problem = str(exc)
            if problem:  # (a hand-made Fragments): nothing is sent, a 500 instead
                return await self._send_500(request, f"bad reply body: {problem}", keep_alive)
            body = data
        if not isinstance(body, _SIZED):
            if isinstance(body, FileBody):
                return await self._send_file(request, response, body, keep_alive)
            return await self._send_stream(request, response, keep_alive)
        try:
            head = frame_response(
                request, response.status, response.headers, len(body), keep_alive=keep_alive
            )
        except ValueError as exc:  # a CR LF in a header: nothing sent yet, a 500 instead
            return await self._send_500(request, str(exc), keep_alive)
        data = head.data
        if len(data) > HEAD_LIMIT:  # the trio server's arena has no room for it: a 500
            message = (
                f"the reply's header fields do not fit the reply arena ({len(data)} bytes, "
                f"more than {HEAD_LIMIT})"
            )
            return await self._send_500(request, message, keep_alive)
        if head.send_body and body:
            self.transport.writelines((data, body))
            sent = len(body)
        else:
            self.transport.write(head.data)
            sent = 0
        await self.drain()
        return response.status, sent, head.keep_alive

    async def _send_500(self, request: Request, message: str, keep_alive: bool) -> Sent:
        self.log.error(f"500 for {self.peer}: {message}", request_line=request_line(request))
        return await self.send(request, self.error_page(500, detail=message), keep_alive)

    async def send_all(self, data: bytes) -> None:
        """Write ``data`` and wait while the transport holds too much."""
        self.transport.write(data)
        await self.drain()

    def send_closing(self, page: Response, request: Request | None) -> bool:
        """An error page with ``Connection: close``, then the close (after what is queued
        has gone out). False if the connection was already closing."""
        if self.transport.is_closing():
            return False
        head = frame_response(request, page.status, page.headers, len(page.body), keep_alive=False)  # type: ignore[arg-type]
        if head.send_body:
            self.transport.writelines((head.data, page.body))
        else:
            self.transport.write(head.data)
        self.close_after_reply()
        return True

    # ------------------------------------------------------------------------ files

    async def _send_file(
        self, request: Request, response: Response, body: FileBody, keep_alive: bool
    ) -> Sent:
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
            if body.length <= SMALL_FILE:
                data = os.pread(file_fd, body.length, body.offset)
                if len(data) != body.length:  # the file shrank: the length cannot be kept
                    self.log.error(f"{body.path!r} shrank while being sent to {self.peer}")
                    raise ReplyAborted
                await self.send_all(head.data + data)
            else:
                self.transport.write(head.data)
                await self._sendfile(file_fd, body)
            return response.status, body.length, head.keep_alive
        finally:
            os.close(file_fd)

    async def _sendfile(self, file_fd: int, body: FileBody) -> None:
        """The file's bytes: sendfile while the transport's queue is empty, else a piece
        through the transport and a wait for it to drain."""
        transport = self.transport
        offset, left = body.offset, body.length
        while left:
            n = 0
            if self.fd >= 0 and not transport.get_write_buffer_size():
                try:
                    n = os.sendfile(self.fd, file_fd, offset, left)
                except BlockingIOError:
                    n = -1  # the client's window is full: queue a piece instead
                if n == 0:
                    self.log.error(f"{body.path!r} shrank while being sent to {self.peer}")
                    raise ReplyAborted
            if n <= 0:
                piece = os.pread(file_fd, min(left, FILE_PIECE), offset)
                if not piece:
                    self.log.error(f"{body.path!r} shrank while being sent to {self.peer}")
                    raise ReplyAborted
                transport.write(piece)
                n = len(piece)
            offset += n
            left -= n
            await self.drain()

    # ---------------------------------------------------------------------- streams

    async def _send_stream(self, request: Request, response: Response, keep_alive: bool) -> Sent:
        """An async-iterator body, chunked on HTTP/1.1, close-delimited on HTTP/1.0."""
        body = response.body
        head = frame_response(
            request, response.status, response.headers, None, keep_alive=keep_alive
        )
        sent = 0
        write = self.transport.write
        try:
            write(head.data)
            if head.send_body:
                try:
                    async for piece in body:  # type: ignore[union-attr]
                        if piece:
                            write(encode_chunk(piece) if head.chunked else piece)
                            sent += len(piece)
                            await self.drain()
                except (OSError, TimeoutError):
                    raise
                except Exception as exc:
                    # Too late for a 500: the head is out. Cut the connection, so the
                    # client sees a truncated body rather than a complete-looking one.
                    self.log.error(
                        f"error while streaming a reply to {self.peer}",
                        request_line=request_line(request),
                        exc=exc,
                    )
                    raise ReplyAborted((response.status, sent, False)) from exc
                if head.chunked:
                    write(LAST_CHUNK)
            await self.drain()
        finally:
            await self._close_stream(body)
        return response.status, sent, head.keep_alive

    async def _close_stream(self, body: object) -> None:
        aclose = getattr(body, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception as exc:
                self.log.error("error closing a streamed reply", exc=exc)
