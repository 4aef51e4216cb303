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
  already buffered, or a short Content-Length body: :data:`DRAIN_LIMIT`, for at most
  :data:`DRAIN_TIME`); otherwise the reply says ``Connection: close``;
* **under a budget**: the whole body has a deadline, ``body_timeout`` from the first wait
  plus a second per ``body_min_rate`` bytes received, so a body trickled in (a byte every
  few seconds, a chunked body that never ends) is a 408 however steadily each byte comes;
  and :meth:`read` holds the bytes once (in a ``BytesIO`` whose buffer becomes the result)
  and counts them against the process's ``max_body_memory`` (``budget.py``: 503 when they
  do not fit, before anything is read when ``Content-Length`` says so). A handler that
  takes the body with :meth:`stream` holds what it keeps, and counts it with :meth:`hold`
  (a multipart form's text fields and small files: ``pyweb/app/formdata.py``).
"""

from __future__ import annotations

import io
import math
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, NoReturn

from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.messages import NEED_DATA, Data, EndOfMessage, Request
from pyweb.protocol.response import CONTINUE_100
from pyweb.runtime import now

from .budget import BUDGET
from .contract import Evicted

if TYPE_CHECKING:
    from .contract import ServerConnection

__all__ = ["RequestBody", "DRAIN_LIMIT", "DRAIN_TIME"]

DRAIN_TIME = 1.0
"""Seconds an unread body is drained after its reply at most (then the connection closes)."""

DRAIN_LIMIT = 64 * 1024
"""A request body the handler did not read is read and thrown away after the reply, so the
connection can stay open, when it is at most this long, framed by Content-Length, and the
client did not ask for ``100 Continue``. Otherwise the reply says ``Connection: close``:
reading an unbounded body just to keep a connection is a waste (and a client waiting for
``100 Continue`` never sends the body at all, so the server must not wait for it)."""


class RequestBody:
    """The body of one request on one connection (empty when the request has none)."""

    __slots__ = (
        "connection", "request", "done", "continue_sent", "must_drain", "started", "received",
        "until", "streamed",
    )  # fmt: skip

    def __init__(self, connection: ServerConnection, request: Request) -> None:
        self.connection = connection
        self.request = request
        self.started = -1.0
        """The loop's time of the first wait for body bytes (the deadline counts from it)."""
        self.received = 0
        self.until = math.inf
        """A cap on the deadline (the brief drain after the reply)."""
        self.done = False
        """True once the body has been read to its end (by the handler or the server)."""
        self.continue_sent = False
        self.must_drain = False
        """Set by :meth:`settle`: the unread rest is read and dropped after the reply."""
        self.streamed = False
        """The handler took the body piece by piece (:meth:`stream`): it is not held."""

    async def read(self, copies: int = 1) -> bytes:
        """The whole body (de-chunked). Raises :class:`~pyweb.protocol.BodyTooLarge` past
        ``Limits.max_body``, a 408 ProtocolError when it stops arriving or is too slow, a
        503 one when it does not fit ``max_body_memory`` (``copies`` times: how often the
        caller holds it)."""
        if self.streamed:
            raise RuntimeError(
                "the request body was already taken piece by piece (ctx.stream(); a "
                "multipart form is parsed so: see conn.form and conn.files)"
            )
        declared = self.request.content_length
        if declared is not None and not BUDGET.fits(declared * copies):
            self._refuse()  # before a byte of it is read
        out = io.BytesIO()  # getvalue() hands its buffer over: the bytes are held once
        async for piece in self._pieces():
            # Counted as they arrive, not as declared: a thousand bodies trickled in a byte
            # at a time hold nothing, and must not fill the budget (each newcomer then got
            # a 503, reconnected and got another, as fast as the server could answer).
            if not self.hold(len(piece) * copies):
                self._refuse()
            out.write(piece)
        return out.getvalue()

    def _refuse(self) -> NoReturn:
        raise ProtocolError(
            f"the server holds as many request bodies as max_body_memory allows "
            f"({BUDGET.limit} bytes); try again soon",
            status=503,
        )

    def hold(self, n: int) -> bool:
        """Count ``n`` more bytes of this request as held in memory (a negative ``n`` gives
        them back); False, nothing counted, when they do not fit ``max_body_memory``. What
        is held is given back when the handler is done (Connection.release_body)."""
        connection = self.connection
        if n < 0:
            n = max(n, -connection.reserved)
            BUDGET.release(-n)
        elif not BUDGET.reserve(n):
            return False
        connection.reserved += n
        return True

    def deadline(self) -> float:
        """When the whole body must have arrived (the loop's time)."""
        config = self.connection.config
        if self.started < 0:
            self.started = now()  # the loop's clock (trio's or asyncio's: pyweb.runtime)
        deadline = self.started + config.body_timeout + self.received / config.body_min_rate
        return min(deadline, self.until)

    def stream(self) -> AsyncIterator[bytes]:
        """The body piece by piece, as it arrives (for uploads too large to hold)."""
        self.streamed = True
        return self._pieces()

    async def _pieces(self) -> AsyncIterator[bytes]:
        parser = self.connection.parser
        while not self.done:
            event = parser.next_event()
            if event is NEED_DATA:
                if self.request.expect_continue and not self.continue_sent:
                    # The client holds its body back until we say so; the handler wants it.
                    self.continue_sent = True
                    await self.connection.send_all(CONTINUE_100)
                await self._receive()
            elif type(event) is Data:
                self.received += len(event.data)
                yield event.data
                if parser.buffered:  # the next piece is here already: others go first
                    await self.connection.turn()
            elif type(event) is EndOfMessage:
                self.done = True
            else:  # pragma: no cover - the parser emits EndOfMessage before the next Request
                raise RuntimeError(f"unexpected parser event in a request body: {event!r}")

    async def _receive(self) -> None:
        """Wait for more of the body in the parser: each wait at most ``body_timeout``, and
        never past the whole body's :meth:`deadline` (408). Bytes already here cost no wait
        and no clock read (Hop §3.1). How bytes arrive is the loop's (contract.py)."""
        connection = self.connection
        if await connection.receive_now():
            return
        body_timeout = connection.config.body_timeout
        while True:
            left = self.deadline() - now()
            if left <= 0:
                raise ProtocolError(
                    f"the request body was too slow: body_timeout ({body_timeout:g} s) "
                    "plus a second per body_min_rate bytes has passed",
                    status=408,
                )
            try:
                if await connection.wait_for_bytes(min(body_timeout, left)):
                    return
            except Evicted:
                raise ProtocolError(
                    "the request body was too slow while the server was full", status=408
                ) from None
            if left > body_timeout:
                raise ProtocolError(
                    f"the request body stopped arriving for {body_timeout:g} s", status=408
                )

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
        if not self.must_drain:
            return True
        self.until = now() + DRAIN_TIME  # briefly: then the connection closes
        try:
            async for _ in self._pieces():
                pass
        except ProtocolError:
            return False
        return True
