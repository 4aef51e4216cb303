"""Replies on the asyncio server: :class:`~pyweb.server.reply.ReplyCore` written to a transport.

What a reply is (framing, the 500 instead of an unframeable reply, files, streams) is in
``reply.py``, shared with the trio server; this is only how asyncio sends it. Where the
trio server waits for the socket to be writable, this one waits for the transport's flow
control (``pause_writing``/``resume_writing``), at most ``send_timeout`` per wait: a
client that does not read is dropped.

* A body in memory goes out with :meth:`AioReplies.write_now`, no coroutine: head and body
  joined and written at once when the body is small (uvloop then tries the ``send`` right
  away; two pieces take its ``writev`` path, which costs more than the copy), handed over
  together (``writelines``) when it is large.
* A file: a small one (:data:`SMALL_FILE`) read and written behind its head, in one TCP
  segment as on trio; a larger one with ``os.sendfile`` on the connection's socket
  whenever the transport has nothing queued (Hop §3.3.1: no copy through user space);
  when the client's window is full, the next piece goes through the transport (which
  queues it) and sendfile resumes once the queue has drained. The transport's buffer is
  always empty when the socket is written directly, so bytes never overtake each other.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pyweb.protocol import response as framing
from pyweb.protocol.response import FileBody, Fragments, Response, frame_response

from ..reply import HEAD_LIMIT, ReplyCore, Sent, closing_reply

if TYPE_CHECKING:
    from pyweb.protocol.messages import Request

    from ..logging import ServerLog

__all__ = ["AioReplies", "FILE_PIECE", "HEAD_LIMIT", "JOIN_LIMIT", "SMALL_FILE"]

FILE_PIECE = 256 * 1024
"""Bytes of a file read and queued on the transport when sendfile would block."""

JOIN_LIMIT = 16 * 1024
"""Bodies up to this size are copied behind their head and written in one piece."""

SMALL_FILE = 4096
"""Files up to this size are read and written behind their head in one ``write``; larger
ones go out with ``sendfile``. A transport sends the head at once, so with sendfile a small
file would leave in a second TCP segment (the trio server holds its head back with
``MSG_MORE``, which a transport cannot): the copy costs less than the kernel's extra work
(docs/performance.md, "Small files are copied on asyncio"; ``bench_small_files.py``)."""

_SIZED = (bytes, bytearray, memoryview)


class AioReplies(ReplyCore):
    """The replies of one asyncio connection (see the module doc): a base class of
    :class:`~pyweb.server.asyncio.HttpProtocol`, which provides what is declared here.

    A base class, not an object of its own: replies that held the connection's bound
    methods (its error pages, its drain) made a reference cycle per connection, so every
    closed connection waited for the cyclic garbage collector (docs/performance.md)."""

    transport: Any
    peer: str
    log: ServerLog
    _fd: int | None = None

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
        c_frame = framing.C_FRAME  # the C framer itself (docs/performance.md), or None
        try:  # a small body is joined behind the head: one bytes, one write
            head = c_frame and c_frame(request, status, response.headers, length, keep_alive, join)
            if head is None:  # (C framer off, or a reply it leaves to the Python code)
                head = frame_response(
                    request, status, response.headers, length, keep_alive=keep_alive, join=join
                )
        except ValueError:
            return None
        data = head.data
        if not head.send_body:
            length = 0
            join = None
        size = len(data)
        if size > HEAD_LIMIT and size - (0 if join is None else length) > HEAD_LIMIT:
            return None  # a head too large for trio's arena: send() answers a 500
        if join is not None or not length:
            self.transport.write(data)
        else:
            self.transport.writelines((data, body))
        return status, length, head.keep_alive

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` and wait while the transport holds too much."""
        self.transport.write(data)
        await self.drain()

    def send_closing(self, page: Response, request: Request | None) -> bool:
        """An error page with ``Connection: close``, then the close (after what is queued
        has gone out). False if the connection was already closing."""
        if self.transport.is_closing():
            return False
        self.transport.writelines(closing_reply(page, request))
        self.close_after_reply()
        return True

    async def write_file(self, head: bytes, file_fd: int, body: FileBody) -> None:
        """The head and the file: a small one copied behind the head, a larger one with
        sendfile while the transport's queue is empty, else a piece through the transport
        and a wait for it to drain."""
        if body.length <= SMALL_FILE:
            await self.send_all(head + self.read_small(file_fd, body))
            return
        transport = self.transport
        transport.write(head)
        offset, left = body.offset, body.length
        while left:
            n = 0
            if self.fd >= 0 and not transport.get_write_buffer_size():
                try:
                    n = os.sendfile(self.fd, file_fd, offset, left)
                except BlockingIOError:
                    n = -1  # the client's window is full: queue a piece instead
                if n == 0:
                    raise self.shrank(body)
            if n <= 0:
                piece = os.pread(file_fd, min(left, FILE_PIECE), offset)
                if not piece:
                    raise self.shrank(body)
                transport.write(piece)
                n = len(piece)
            offset += n
            left -= n
            await self.drain()
