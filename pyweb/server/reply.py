"""Replies: what a :class:`~pyweb.protocol.Response` becomes on a connection, on either loop.

Marlow's ``sendResponse`` (§3.2) and Hop's "reply" stage (§2.2), written once. The head is
framed by the sans-IO :func:`~pyweb.protocol.frame_response` (status line, Content-Length
or chunked, ``Connection``, HEAD and 304 without a body); the body goes out in one of the
three kinds of Marlow's ``ResponseBody``:

* **bytes** (and a page's ``Fragments``, the str pieces of a quotation or an HTML node):
  head and body together. On trio they are copied into the connection's reply *arena*
  (:func:`fill_arena`) and written with one ``writev`` (Hop §3.1, SMLserver §5: a reply is
  assembled in a region, not in a new ``bytes`` per request); on asyncio they are handed to
  the transport at once. A reply that cannot be framed as the handler gave it (a CR LF in a
  header value, a ``Fragments`` whose length is wrong, a head larger than
  :data:`HEAD_LIMIT`) is found before anything is sent, so the client gets a 500 instead;
* **a file** (:class:`~pyweb.protocol.FileBody`): opened and framed here, its bytes sent
  by the loop with ``os.sendfile`` (Hop §3.3.1: no copy through user space);
* **an async iterator**: chunked on HTTP/1.1, close-delimited on HTTP/1.0 (Hop §3.2: a
  dynamic reply on a persistent connection without buffering it whole).

:class:`ReplyCore` holds all of that; each loop's writer subclasses it and supplies only
how bytes go out and how it waits: ``replies.py`` (trio: a non-blocking socket, waiting
at most ``send_timeout`` for it to take more) and ``asyncio/replies.py`` (a transport and
its flow control). This module imports no loop.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import pyweb_regions
from pyweb.protocol.response import (
    LAST_CHUNK,
    FileBody,
    Fragments,
    Response,
    encode_chunk,
    frame_response,
)

if TYPE_CHECKING:
    from pyweb.protocol.messages import Request
    from pyweb_regions import Arena

    from .logging import ServerLog

__all__ = [
    "HEAD_LIMIT", "REPLY_PAGES", "ReplyAborted", "ReplyCore", "Sent", "Unframeable",
    "fill_arena", "request_line",
]  # fmt: skip

REPLY_PAGES = 64 * 1024 // pyweb_regions.PAGE_SIZE + 1
"""The reply arena's growth limit: a 64 KiB body and a page for the head. A larger body
is sent straight from its own bytes after the head."""
HEAD_LIMIT = REPLY_PAGES * pyweb_regions.PAGE_SIZE
"""The largest reply head, on both loops: what the reply arena holds. A larger one (a page
setting 80 KiB of header fields) is answered with a 500 before anything is sent."""

SIZED = (bytes, bytearray, memoryview, Fragments)
"""The bodies of known length (a tuple: isinstance checks it faster than a union)."""

Sent = tuple[int, int, bool]
"""What a reply did: (status, body bytes sent, whether the connection stays open)."""


class ReplyAborted(Exception):
    """The reply could not be completed (a stream that raised, a file that shrank): the
    connection must close. ``sent`` is what went out, for the access log (None: logged)."""

    def __init__(self, sent: Sent | None = None) -> None:
        super().__init__()
        self.sent = sent


class Unframeable(Exception):
    """A reply that cannot be sent as the handler gave it (its message says why); nothing
    of it has been sent, so the client gets a 500 instead."""


def fragments_bytes(body: Fragments) -> bytes:
    """A page's str fragments as the UTF-8 bytes they promise. :class:`Unframeable` when
    one is not a str or their length is not the one given (a hand-made ``Fragments``)."""
    try:
        data = bytes(body)
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise Unframeable(f"bad reply body: {exc}") from None
    if len(data) != body.length:
        raise Unframeable(f"bad reply body: {len(data)} bytes, not {body.length}")
    return data


def fill_arena(
    arena: Arena, head: bytes, body: bytes | bytearray | memoryview | Fragments, length: int
) -> bytes | bytearray | memoryview | None:
    """Copy the head into ``arena``, then the body (bytes, or a page's str fragments
    written as UTF-8) when it fits. Returns the body still to send from its own bytes (it
    did not fit), or None. Raises :class:`Unframeable`, the arena left empty, when the head
    does not fit or a hand-made ``Fragments`` is wrong."""
    try:
        arena.write(head)  # all or nothing
    except MemoryError as exc:
        raise Unframeable(f"the reply's header fields do not fit the reply arena ({exc})") from None
    if not length:
        return None
    fits = len(arena) + length <= HEAD_LIMIT
    if type(body) is bytes or not isinstance(body, Fragments):
        if not fits:
            return body
        arena.write(body)
        return None
    if not fits:
        try:
            return fragments_bytes(body)
        except Unframeable:
            arena.reset()  # the head must not go out with the next reply
            raise
    at = len(arena)  # str pieces: each must be a str, their UTF-8 must add up to `length`
    try:
        arena.writev(body.parts)
        written = len(arena) - at
        problem = "" if written == length else f"{written} bytes, not {length}"
    except (TypeError, ValueError) as exc:
        problem = str(exc)
    if problem:
        arena.reset()
        raise Unframeable(f"bad reply body: {problem}")
    return None


class ReplyCore:
    """What a reply is, for the writer of one loop (see the module doc). The writer
    provides :meth:`send` (its fast path for a body in memory, falling back on
    :meth:`send_sized`), :meth:`send_all`, :meth:`write_file` and :meth:`aclose`."""

    __slots__ = ()

    peer: str
    log: ServerLog

    def error_page(self, status: int, **details: Any) -> Response:
        """The connection's page for an error the server answers itself."""
        raise NotImplementedError

    # ---------------------------------------------------------------- what each loop supplies

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Write every byte of ``data``, waiting (at most ``send_timeout`` at a time) while
        the client does not take them."""
        raise NotImplementedError

    async def write_file(self, head: bytes, file_fd: int, body: FileBody) -> None:
        """The head, then ``body.length`` bytes of the open file (see :meth:`shrank`)."""
        raise NotImplementedError

    async def aclose(self, close: Callable[[], Awaitable[object]]) -> None:
        """Await a stream's ``aclose``, even while the connection is being cancelled."""
        await close()

    # ---------------------------------------------------------------- the three kinds of body

    async def send(self, request: Request, response: Response, keep_alive: bool) -> Sent:
        """Send ``response`` to ``request``; ``keep_alive`` is what the connection would
        like (the head may still say close: HTTP/1.0, a close-delimited stream)."""
        body = response.body
        if isinstance(body, SIZED):
            return await self.send_sized(request, response, keep_alive)
        if isinstance(body, FileBody):
            return await self.send_file(request, response, body, keep_alive)
        return await self.send_stream(request, response, keep_alive)

    async def send_sized(self, request: Request, response: Response, keep_alive: bool) -> Sent:
        """A body of known length, head and body handed to :meth:`send_all` together (the
        writers' fast paths do better): a 500 instead when it cannot be framed."""
        body = response.body
        try:
            data: bytes = fragments_bytes(body) if isinstance(body, Fragments) else body  # type: ignore[assignment]
            head = frame_response(
                request, response.status, response.headers, len(data), keep_alive=keep_alive
            )
            if len(head.data) > HEAD_LIMIT:
                raise Unframeable(
                    f"the reply's header fields do not fit the reply arena ({len(head.data)} "
                    f"bytes, more than {HEAD_LIMIT})"
                )
        except (ValueError, Unframeable) as exc:  # nothing has been sent: a 500 instead
            return await self.send_500(request, str(exc), keep_alive)
        if head.send_body and data:
            await self.send_all(head.data + data)
            return response.status, len(data), head.keep_alive
        await self.send_all(head.data)
        return response.status, 0, head.keep_alive

    async def send_500(self, request: Request, message: str, keep_alive: bool) -> Sent:
        """Nothing of the reply has been sent and it cannot be: log why and send a 500
        (the message on the page in development mode) instead."""
        self.log.error(f"500 for {self.peer}: {message}", request_line=request_line(request))
        page = self.error_page(500, detail=message)
        return await self.send(request, page, keep_alive)

    async def send_file(
        self, request: Request, response: Response, body: FileBody, keep_alive: bool
    ) -> Sent:
        """A byte range of a file (Hop §3.3.1: the kernel's page cache is the file cache);
        the loop's :meth:`write_file` sends it."""
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
            await self.write_file(head.data, file_fd, body)
            return response.status, body.length, head.keep_alive
        finally:
            os.close(file_fd)

    def shrank(self, body: FileBody) -> ReplyAborted:
        """The file shrank while it was sent: the promised length cannot be kept. Logged;
        the writer raises what this returns, and the connection closes."""
        self.log.error(f"{body.path!r} shrank while being sent to {self.peer}")
        return ReplyAborted()

    def read_small(self, file_fd: int, body: FileBody) -> bytes:
        """A small file's bytes, read to be sent behind its head (a :meth:`shrank` file:
        :class:`ReplyAborted`)."""
        data = os.pread(file_fd, body.length, body.offset)
        if len(data) != body.length:
            raise self.shrank(body)
        return data

    async def send_stream(self, request: Request, response: Response, keep_alive: bool) -> Sent:
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
                except OSError:  # (a timeout too): the client is gone or reads nothing
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
            aclose = getattr(body, "aclose", None)
            if aclose is not None:
                try:
                    await self.aclose(aclose)
                except Exception as exc:
                    self.log.error("error closing a streamed reply", exc=exc)
        return response.status, sent, head.keep_alive


def closing_reply(page: Response, request: Request | None) -> tuple[bytes, bytes]:
    """An error page the server answers itself, framed with ``Connection: close``: its head
    and body (empty for a HEAD request)."""
    body: bytes = page.body  # type: ignore[assignment]
    head = frame_response(request, page.status, page.headers, len(body), keep_alive=False)
    return head.data, body if head.send_body else b""


def request_line(request: Request) -> str:
    """``GET /path HTTP/1.1``: how the error log names a request."""
    return f"{request.method} {request.target} HTTP/{request.http_version}"
