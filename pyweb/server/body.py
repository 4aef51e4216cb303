"""The request body: read on demand, and whatever the handler left unread, dealt with.

A request head arrives as one event; its body follows as ``Data`` events from the same
parser (RFC 9112 §6). :class:`RequestBody` is the only code that takes those events, so
everything about a body lives here:

* **on demand**: the handler asks (``ctx.body()``, ``ctx.stream()``) and only then are the
  bytes read, each wait bounded by ``body_timeout`` (a body that stops arriving is a 408);
* **100 Continue** (RFC 9110 §10.1.1): a client that sent ``Expect: 100-continue`` holds its
  body back until told to send it; it is told when the handler first asks for the body, so
  a handler that refuses an upload from its headers alone never makes the client send it;
* **after the reply** (:meth:`settle`, then :meth:`drain`): a body the handler did not read
  is thrown away so the connection can serve its next request, when that is cheap (what is
  already buffered, or a short Content-Length body: :data:`DRAIN_LIMIT`); otherwise the
  reply says ``Connection: close``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import trio

from pyweb.events import readable_evt, select, timeout, wrap
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.messages import NEED_DATA, Data, EndOfMessage, Request
from pyweb.protocol.response import CONTINUE_100

from .recvbuf import receive

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["RequestBody", "DRAIN_LIMIT"]

DRAIN_LIMIT = 64 * 1024
"""A request body the handler did not read is read and thrown away after the reply, so the
connection can stay open, when it is at most this long, framed by Content-Length, and the
client did not ask for ``100 Continue``. Otherwise the reply says ``Connection: close``:
reading an unbounded body just to keep a connection is a waste (and a client waiting for
``100 Continue`` never sends the body at all, so the server must not wait for it)."""


class RequestBody:
    """The body of one request on one connection (empty when the request has none)."""

    __slots__ = ("connection", "request", "done", "continue_sent", "must_drain")

    def __init__(self, connection: Connection, request: Request) -> None:
        self.connection = connection
        self.request = request
        self.done = False
        """True once the body has been read to its end (by the handler or the server)."""
        self.continue_sent = False
        self.must_drain = False
        """Set by :meth:`settle`: the unread rest is read and dropped after the reply."""

    async def read(self) -> bytes:
        """The whole body (de-chunked). Raises :class:`~pyweb.protocol.BodyTooLarge` past
        ``Limits.max_body``, a 408 ProtocolError when it stops arriving."""
        return b"".join([piece async for piece in self.stream()])

    async def stream(self) -> AsyncIterator[bytes]:
        """The body piece by piece, as it arrives (for uploads too large to hold)."""
        parser = self.connection.parser
        while not self.done:
            event = parser.next_event()
            if event is NEED_DATA:
                if self.request.expect_continue and not self.continue_sent:
                    # The client holds its body back until we say so; the handler wants it.
                    self.continue_sent = True
                    await self.connection.replies.send_all(CONTINUE_100)
                await self._receive()
            elif type(event) is Data:
                yield event.data
            elif type(event) is EndOfMessage:
                self.done = True
            else:  # pragma: no cover - the parser emits EndOfMessage before the next Request
                raise RuntimeError(f"unexpected parser event in a request body: {event!r}")

    async def _receive(self) -> None:
        """Wait (at most ``body_timeout``) for more of the body and feed it to the parser."""
        connection = self.connection
        body_timeout = connection.config.body_timeout
        watch = connection.watch
        if watch is not None:
            watch.stop()  # one task at a time may wait on the socket: now it is this one
        while True:
            try:
                receive(connection.fd, connection.parser)
                break
            except BlockingIOError:
                if await select(readable_evt(connection.sock), wrap(timeout(body_timeout), _true)):
                    raise ProtocolError(
                        f"the request body stopped arriving for {body_timeout:g} s", status=408
                    ) from None
        if watch is not None and watch.latch.waiting:
            watch.start()
        # A large upload whose bytes keep arriving would otherwise never let other
        # connections run (receive only yields when it has to wait).
        await trio.lowlevel.checkpoint()

    def settle(self, keep_alive: bool) -> bool:
        """After the handler: drop what is already buffered of an unread body, and decide
        what becomes of the rest. Returns whether the connection may stay open (then
        :attr:`must_drain` says if the rest is to be read after the reply)."""
        parser = self.connection.parser
        try:
            while not self.done:  # usually at once: the EndOfMessage of a bodiless request
                event = parser.next_event()
                if type(event) is EndOfMessage:
                    self.done = True
                elif event is NEED_DATA:
                    break
                elif type(event) is not Data:  # pragma: no cover - parser contract
                    raise RuntimeError(f"unexpected parser event in a request body: {event!r}")
        except ProtocolError:  # a bad body: answer, then close
            return False
        if self.done:
            return keep_alive
        request = self.request
        if (
            request.content_length is not None
            and request.content_length <= DRAIN_LIMIT
            and not request.expect_continue
        ):
            self.must_drain = True
            return keep_alive
        return False

    async def drain(self) -> bool:
        """After the reply, when :meth:`settle` said so: read and drop the unread rest.
        False when that failed (too slow, malformed): the connection closes, no second
        reply."""
        try:
            async for _ in self.stream():
                pass
        except ProtocolError:
            return False
        return True


def _true(_: object) -> bool:
    return True
