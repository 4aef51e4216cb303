"""The handler contract: what a request handler may ask of the server, and nothing more.

A handler is ``async def handler(ctx) -> Response`` (Hop §2.4's "Response" stage: request in,
response out). :class:`Context` is everything ``ctx`` offers: the parsed request, who sent it
and when, whether errors may be shown in detail, the body on demand, the two events a long
wait should watch (the client hanging up, the server shutting down) and the error log.

``pyweb.server`` implements it (``pyweb.server.context.RequestContext``); ``pyweb.app`` (the
site, its pages and services) and :mod:`pyweb.regions` are written against this protocol
only, so they never import the server, and anything with these attributes can drive a site:
a test's stand-in, or a server on another event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from pyweb.events import Event
from pyweb.protocol.messages import Request
from pyweb.protocol.response import Response

__all__ = ["Context", "Handler"]


class Context(Protocol):
    """One request as a handler sees it."""

    request: Request
    """The parsed request head (method, target, headers, framing)."""
    peer: str
    """The client's address, ``"host:port"`` (behind a trusted reverse proxy, the client it
    names in ``X-Forwarded-For``)."""
    scheme: str
    """``"http"``, or ``"https"`` when a trusted proxy's ``X-Forwarded-Proto`` says so."""
    dev: bool
    """Development mode: error pages may show tracebacks and the offending input."""
    received_at: float
    """``time.time()`` when the request head had arrived."""
    alloc: tuple[int, int] | None
    """Bytes and calls the request's page allocated (set by :mod:`pyweb.regions` with
    ``--profile-alloc``), for the access log's ``alloc`` format; ``None`` when not counted."""

    @property
    def server_port(self) -> int:
        """The port the server listens on (to reach the site itself: never take it from the
        client's ``Host`` header)."""
        ...

    async def body(self, copies: int = 1) -> bytes:
        """The whole request body, de-chunked (``100 Continue`` is sent first if the client
        waits for it). ``copies``: how many times the caller will hold its bytes (counted
        against the server's memory budget for bodies)."""
        ...

    def stream(self) -> AsyncIterator[bytes]:
        """The request body piece by piece, as it arrives."""
        ...

    def client_gone_evt(self) -> Event[None]:
        """An event enabled once the client has closed or reset its connection."""
        ...

    def shutdown_evt(self) -> Event[None]:
        """An event enabled once the server has begun a graceful shutdown."""
        ...

    def log_error(self, message: str, exc: BaseException | None = None) -> None:
        """Write ``message`` (and ``exc``'s traceback) to the error log, naming the request."""
        ...


Handler = Callable[[Context], Awaitable[Response]]
"""``await handler(ctx) -> Response``: a site, a service table, or a plain function."""
