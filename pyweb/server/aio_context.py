"""One request on the asyncio server: the same :class:`RequestContext` a trio handler gets.

A handler cannot tell the two servers apart: ``ctx.body()``, ``ctx.stream()``,
``ctx.client_gone_evt()``, ``ctx.shutdown_evt()`` and ``ctx.log_error()`` are
:class:`~pyweb.server.context.RequestContext`'s own methods. Only the making differs: the
body is an :class:`~pyweb.server.aio_body.AioBody` (fed by the loop's callbacks), and the
peer is the one a trusted proxy names, as on trio (:mod:`pyweb.server.proxy`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from pyweb.protocol.messages import Request

from .aio_body import AioBody
from .body import RequestBody
from .context import RequestContext, no_work_after
from .proxy import forwarded

if TYPE_CHECKING:
    from .aio import HttpProtocol

__all__ = ["AioContext"]


class AioContext(RequestContext):
    """A :class:`RequestContext` on an asyncio connection."""

    __slots__ = ()

    def __init__(self, connection: HttpProtocol, request: Request) -> None:
        self.request = request
        self.peer = connection.peer
        self.scheme = "http"
        if request.forwarded and connection.via_proxy is not None:
            # the client behind the proxy, and its scheme (the parser noted the fields)
            self.peer, self.scheme = forwarded(request.headers, self.peer, connection.via_proxy)
        connection.client = self.peer  # (the access log names it)
        self.dev = connection.config.dev
        self.received_at = time.time()
        self.alloc = None
        # None for a request without a body until a handler asks (as RequestContext)
        self.request_body = (
            AioBody(connection, request)  # type: ignore[arg-type]
            if request.content_length or request.chunked
            else None
        )
        self._connection = connection  # type: ignore[assignment]
        self.after_reply = no_work_after  # conn.after's work: called once the reply is sent

    def _body(self) -> RequestBody:
        if self.request_body is None:  # asked of a request without a body: an empty one
            self.request_body = AioBody(self._connection, self.request)  # type: ignore[arg-type]
        return self.request_body
