"""WebSocket URLs: ``@pyweb.websocket("/path")`` binds an async function to a WebSocket.

Hop pushes to the browser (Hop §2: the "diffuse web"); today's browsers do it with
WebSockets (RFC 6455): one connection, messages both ways. A WebSocket URL is declared in a
service module (a file of the site that defines services: imported once when the site
loads) like a service::

    import pyweb
    from pyweb.events import select, timeout, wrap

    @pyweb.websocket("/echo")
    async def echo(ws):
        while True:
            text = await select(ws.recv_evt(), wrap(timeout(60), lambda _: None))
            if text is None:
                await ws.close(1000, "idle")
                return
            await ws.send(text)

The function receives a :class:`~pyweb.server.websocket.WebSocket` whose ``recv_evt()`` is a
CML event and ``send``/``close`` are calls (see there). The opening handshake is checked
here (:mod:`pyweb.protocol.websocket`): a plain GET gets 426, a malformed handshake 400, a
page of another site 403 unless its origin is allowed with ``origins=[...]`` (``"*"``:
any). ``max_message`` (bytes, 1 MiB), ``max_fragments`` (1024), ``ping_interval`` (20 s),
``close_timeout`` (5 s) and the permessage-deflate ones (``compression``, on;
``compression_window_bits``, 12; ``compression_no_context_takeover``, off:
:class:`~pyweb.protocol.websocket.WebSocketOptions`) are per URL; ``headers`` are added to the
``101`` answer.

The handshake is a request like any other (Channels' ``AuthMiddlewareStack``): the site's
traps run before it, so under a ``/members/*`` login trap a stranger is sent to the login
page and never gets a socket; and the handler sees who opened it: ``ws.session`` is the
browser's session as it was at the handshake (read it; what the handler writes there is not
stored) and ``ws.user`` the logged-in user's name (``pyweb.auth.current_user()``), or None.

A handler that holds the server (a CPU loop, a blocking call) is stopped where it runs past
``page_timeout``, as a page is: its socket is closed with 1011 and a reason naming its line
(:mod:`pyweb.app.watched`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from pyweb.protocol.errorpage import error_response
from pyweb.protocol.response import Response
from pyweb.protocol.websocket import (
    HandshakeError,
    WebSocketOptions,
    WebSocketUpgrade,
    check_handshake,
)

from . import watched

__all__ = ["WebSocketRoute", "websocket"]


class WebSocketRoute:
    """An async function bound to a WebSocket URL."""

    def __init__(
        self,
        func: Callable[[Any], Awaitable[None]],
        path: str,
        options: WebSocketOptions,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError(f"a WebSocket path starts with '/', got {path!r} for {func!r}")
        if not inspect.iscoroutinefunction(func):
            raise TypeError(f"a @websocket handler is an async function, got {func!r}")
        self.func = func
        self.path = path
        self.options = options
        self.headers = list(headers or [])
        """Extra header fields of the ``101 Switching Protocols`` answer."""
        self.__doc__ = func.__doc__
        self.__name__ = func.__name__
        self.__wrapped__ = func

    def upgrade(self, request: Any, dev: bool = False, conn: Any = None) -> Response:
        """The answer to a request for this URL: the upgrade, or the error page saying why
        not (426, 400, 403, 405). ``conn``: the handshake's, whose session and user the
        handler gets (``ws.session``, ``ws.user``)."""
        try:
            accept = check_handshake(request, self.options.origins)
        except HandshakeError as err:
            page = error_response(err.status, dev=dev, detail=err.message)
            page.headers.extend(err.headers)
            return page
        handler: Callable[[Any], Awaitable[None]] = self.func
        if conn is not None:  # (served by a site: watched as a page is, pyweb.app.watched)
            name = getattr(self.func, "__qualname__", self.path)
            handler = watched.handler(_with_user(self.func, conn), name, conn.ctx, conn.site_root)
        return WebSocketUpgrade(
            headers=list(self.headers), accept=accept, session=handler, options=self.options
        )

    def __repr__(self) -> str:
        return f"<websocket {self.path} -> {self.func.__module__}.{self.func.__qualname__}>"


def _with_user(
    func: Callable[[Any], Awaitable[None]], conn: Any
) -> Callable[[Any], Awaitable[None]]:
    """``func`` with the handshake's session and user put on its socket first."""
    from pyweb.auth import current_user  # (auth imports the app: imported when used)

    session = conn.session
    user = current_user()  # (the conn is the current one: the site runs this as a page)

    async def handler(ws: Any) -> None:
        ws.session = session
        ws.user = user
        await func(ws)

    return handler


def websocket(
    path: str,
    *,
    origins: Iterable[str] | str = (),
    max_message: int = 1 << 20,
    ping_interval: float = 20.0,
    close_timeout: float = 5.0,
    max_fragments: int = 1024,
    compression: bool = True,
    compression_window_bits: int = 12,
    compression_no_context_takeover: bool = False,
    headers: list[tuple[str, str]] | None = None,
) -> Callable[[Callable[[Any], Awaitable[None]]], WebSocketRoute]:
    """Bind an async function ``f(ws)`` to the WebSocket URL ``path`` (module doc)."""
    if not isinstance(path, str):
        raise TypeError(f"@websocket takes the URL path first, got {path!r}")
    allowed = origins if origins == "*" else tuple(origins)
    options = WebSocketOptions(
        allowed,
        max_message,
        ping_interval,
        close_timeout,
        max_fragments,
        compression,
        compression_window_bits,
        compression_no_context_takeover,
    )

    def bind(func: Callable[[Any], Awaitable[None]]) -> WebSocketRoute:
        return WebSocketRoute(func, path, options, headers)

    return bind
