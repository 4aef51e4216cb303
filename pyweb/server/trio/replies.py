"""Replies on the trio server: :class:`~pyweb.server.reply.ReplyCore` written to a socket.

What a reply is (framing, the 500 instead of an unframeable reply, files, streams) is in
``reply.py``, shared with the asyncio server; this is only how trio sends it. Every write
goes straight to the non-blocking socket; only when the kernel's buffer is full does the
task wait, at most ``send_timeout`` per wait (a client that does not read is dropped).

* A body in memory is assembled with its head in the connection's reply arena
  (:func:`~pyweb.server.reply.fill_arena`) and written with one ``writev``
  (:meth:`Replies.write_arena`; docs/regions.md has the measurement that chose it). The
  arena is :class:`pyweb_regions.Arena`, the C one or its pure-Python twin (same API).
* A file's head goes with ``MSG_MORE``, so the kernel holds it back until ``sendfile``'s
  bytes join it (a small file leaves in one TCP segment, as a dynamic page does).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from pyweb.events import select, timeout, wrap, writable_evt
from pyweb.protocol import response as framing
from pyweb.protocol.response import FileBody, Response, frame_response
from pyweb_regions import Arena

from ..reply import (
    REPLY_PAGES,
    SIZED,
    ReplyAborted,
    ReplyCore,
    Sent,
    Unframeable,
    closing_reply,
    fill_arena,
)

if TYPE_CHECKING:
    from pyweb.protocol.messages import Request

    from ..config import ServerConfig
    from ..logging import ServerLog

__all__ = ["Replies", "ReplyAborted", "Sent"]

_MSG_MORE = getattr(socket, "MSG_MORE", 0)  # Linux; elsewhere two segments


class Replies(ReplyCore):
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
        """Send ``response`` to ``request`` (see ``reply.py``). A body of known length, the
        common case, is handled here: head and body through the arena, one writev."""
        body = response.body
        if type(body) is not bytes and not isinstance(body, SIZED):
            if isinstance(body, FileBody):
                return await self.send_file(request, response, body, keep_alive)
            return await self.send_stream(request, response, keep_alive)
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
            rest = fill_arena(self.arena, head.data, body, length)
        except (ValueError, Unframeable) as exc:  # nothing has been sent: a 500 instead
            return await self.send_500(request, str(exc), keep_alive)
        if self.write_arena():  # all of it at once, the usual case: no second coroutine
            if head.keep_alive:  # fairness: see send_all (a connection that closes now
                await trio.lowlevel.cancel_shielded_checkpoint()  # ends its task: no need)
        else:
            await self.send_arena()  # the rest, as the client takes it
        if rest is not None:  # larger than the arena: from its own bytes, no copy
            await self.send_all(rest)
        return response.status, length, head.keep_alive

    async def write_file(self, head: bytes, file_fd: int, body: FileBody) -> None:
        """The head with MSG_MORE and without a trip through the scheduler (Hop §4,
        observation 3: static and dynamic at one pace), then ``os.sendfile``."""
        try:
            n = self.sock.send(head, _MSG_MORE)
        except BlockingIOError:
            n = 0
        if n < len(head):
            await self.send_all(head[n:])
        offset, remaining = body.offset, body.length
        while remaining:
            try:
                n = os.sendfile(self.fd, file_fd, offset, remaining)
            except BlockingIOError:
                await self.wait_writable()
                continue
            if n == 0:
                raise self.shrank(body)
            offset += n
            remaining -= n
        await trio.lowlevel.cancel_shielded_checkpoint()  # fairness: see send_all

    async def aclose(self, close: Callable[[], Awaitable[object]]) -> None:
        with trio.CancelScope(shield=True):
            await close()

    async def send_closing(self, page: Response, request: Request | None) -> bool:
        """Send an error page with ``Connection: close``, giving the client at most a
        second (it may be the very client that just timed out). False if it was not sent."""
        head, body = closing_reply(page, request)
        with trio.move_on_after(1.0):
            try:
                view = memoryview(head + body)
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
        """Send what the arena holds and reset it, waiting as :meth:`send_all` does and
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
