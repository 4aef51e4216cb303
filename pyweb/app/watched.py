"""The site's code that runs after its page has answered, watched and stopped like a page:
a WebSocket handler and the generator of a streamed body.

The watchdog finds a page that holds the event loop by the runner's frame on the loop's
stack (:mod:`pyweb.app.blocking`), and :mod:`pyweb.app.interrupt` stops it where it runs
past ``page_timeout`` (Marlow §4: a handler gets a time limit, the server goes on). Two
kinds of the site's code run once that frame has returned: a ``@pyweb.websocket``
handler, which runs as long as its socket is open, and the async generator of a streamed
body, which the server runs while it sends the reply. Either can hold the loop as a page
can (``while True: pass``), and then no other client is answered. So each runs inside a
frame of this module that the watchdog knows (:data:`~pyweb.app.blocking.page_codes`),
holding a :class:`Watched` that names it; held past ``page_timeout``, or when a stop
signal comes (Ctrl-C, SIGTERM), it is interrupted where it runs, as a page is, and then:

* a WebSocket handler: its socket is closed with 1011 (internal error; 1001, going away,
  when the server is stopping) and a reason naming the handler and its line; the error
  log says where, once;
* a streamed body: the reply is cut where it was (the chunked body never ends, so the
  client sees a truncated reply, not a complete-looking one) and the error log says
  where, once (the server logs the error that ended the stream:
  :class:`StreamStopped`).

Code that held the loop for a while and went on by itself is named in the error log once
per handler and line when it ends, as a page is (the watchdog guard). Nothing of this runs
per request: a stream is wrapped only when a page answers with one (the runner's
``compress`` line, whose test fails for a stream anyway), a handler once per socket.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any

from pyweb.handler import Context
from pyweb.protocol.response import Response

from . import blocking, interrupt

__all__ = ["StreamStopped", "Watched", "WatchedStream", "run_handler", "stream"]

INTERNAL_ERROR, GOING_AWAY = 1011, 1001
MAX_REASON = 123
"""Bytes a WebSocket Close may give as its reason (RFC 6455 §5.5: 125 with the code)."""


class Watched:
    """What the watchdog and the interrupt read of a running handler or stream: the same
    fields as a page's ``conn`` (:class:`~pyweb.app.blocking.WatchedPage`)."""

    __slots__ = ("page", "site_root", "watchdog", "held")

    def __init__(self, page: str, site_root: str | None) -> None:
        self.page = page
        """Its name in messages (``WebSocket handler echo``)."""
        self.site_root = site_root
        self.watchdog: blocking.Watchdog | None = blocking.current()
        """This loop's watchdog; None once it was interrupted (it is not asked again)."""
        self.held: blocking.PageRun | None = None
        """What the watchdog saw it hold (set by the watchdog's thread)."""

    def display(self, path: str) -> str:
        """``path`` as the site's messages write it (``site/chat.py``, as Site.display)."""
        if not self.site_root:
            return path
        return os.path.relpath(path, os.path.dirname(self.site_root))

    def report(self, ctx: Context) -> None:
        """Name in the error log, once per name and line, where it held the loop and went
        on by itself (a ``time.sleep(1)`` per message)."""
        run, dog = self.held, self.watchdog
        if run is None or dog is None:
            return
        for held in dog.new_reports(run):
            ctx.log_error(f"{self.page}: {blocking.describe(held, self.display)}", None)


# -- WebSocket handlers ----------------------------------------------------------------------


def handler(
    func: Callable[[Any], Awaitable[None]], name: str, ctx: Context, site_root: str | None
) -> Callable[[Any], Awaitable[None]]:
    """``func`` run by :func:`run_handler` (what the route hands the server); ``name``:
    the handler's name in messages."""
    name = f"WebSocket handler {name}"

    async def session(ws: Any) -> None:
        await run_handler(func, ws, name, ctx, site_root)

    return session


async def run_handler(
    func: Callable[[Any], Awaitable[None]],
    ws: Any,
    name: str,
    ctx: Context,
    site_root: str | None,
) -> None:
    """Run ``func(ws)`` where the watchdog finds it (its local ``watched``); interrupted,
    close the socket saying where (module doc)."""
    watched = Watched(name, site_root)
    try:
        await func(ws)
    except interrupt.PageInterrupted as exc:
        watched.watchdog = None  # stopped: the watchdog no longer asks
        ctx.log_error(interrupt.describe(exc, watched.display), None)
        code = GOING_AWAY if isinstance(exc, interrupt.ServerStopping) else INTERNAL_ERROR
        await ws.close(code, close_reason(exc, watched.display))
    finally:
        watched.report(ctx)


def close_reason(exc: interrupt.PageInterrupted, display: Callable[[str], str]) -> str:
    """The reason of the Close frame, cut to the :data:`MAX_REASON` bytes it may hold."""
    page = exc.page.removeprefix("WebSocket handler ")
    text = f"{page} held the server at {display(exc.filename)}, line {exc.line}, and was stopped"
    data = text.encode()
    if len(data) <= MAX_REASON:
        return text
    return data[:MAX_REASON].decode(errors="ignore")


# -- streamed bodies -------------------------------------------------------------------------


class StreamStopped(Exception):
    """A streamed body held the server and was stopped there: the server cuts the reply
    and logs this (its message says where, as a page's 503 does)."""


def stream(ctx: Context, conn: Any, response: Response) -> Response:
    """``response`` with its streamed body watched while the server sends it (another
    body: as it is)."""
    body = response.body
    if not hasattr(body, "__aiter__"):
        return response
    watched = Watched(f"the streamed body of {conn.page}", conn.site_root)
    return Response(response.status, response.headers, WatchedStream(body, watched, ctx))


class WatchedStream:
    """A streamed body whose pieces are made where the watchdog finds them (the local
    ``watched`` of :meth:`__anext__`)."""

    __slots__ = ("_body", "_pieces", "_watched", "_ctx")

    def __init__(self, body: AsyncIterable[bytes], watched: Watched, ctx: Context) -> None:
        self._body = body
        self._pieces: AsyncIterator[bytes] | None = None
        self._watched = watched
        self._ctx = ctx

    def __aiter__(self) -> WatchedStream:
        self._pieces = self._body.__aiter__()
        return self

    async def __anext__(self) -> bytes:
        watched = self._watched
        try:
            return await self._pieces.__anext__()  # type: ignore[union-attr]
        except interrupt.PageInterrupted as exc:
            watched.watchdog = None  # stopped: the watchdog no longer asks
            raise StreamStopped(interrupt.describe(exc, watched.display)) from None

    async def aclose(self) -> None:
        """Close the body (the server does, once the reply is sent or cut); name where it
        held the loop, if it did."""
        body = self._pieces if self._pieces is not None else self._body
        aclose = getattr(body, "aclose", None)
        try:
            if aclose is not None:
                await aclose()
        finally:
            self._watched.report(self._ctx)


# The watchdog finds a running handler or stream by these frames, in their local "watched".
blocking.page_codes[run_handler.__code__] = "watched"
blocking.page_codes[WatchedStream.__anext__.__code__] = "watched"
