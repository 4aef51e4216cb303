"""``/_pyweb/status``: what the server is doing, for the operator.

Marlow's server (§5) answers "what happened?" with its logs; an operator also asks "what is
happening now?": how many connections are open, how many requests were served, which pages
are slow, which workers run. :class:`StatusHandler` wraps the site's handler, counts every
request it passes on (per page: count, errors, total and worst time) and answers
``/_pyweb/status`` itself with JSON.

It is off unless ``--status`` is given, and then it answers only clients on the loopback
interface, or anyone presenting the token (``--status-token``, as ``Authorization: Bearer
TOKEN``), because page names and counts tell an attacker what to aim at.

The per-page table keeps at most :data:`MAX_PAGES` paths; requests for further paths (a
scanner trying thousands of URLs) are counted together under ``"(other)"`` so the table,
and the server's memory, stay bounded (Marlow's constant memory).
"""

from __future__ import annotations

import copy
import hmac
import ipaddress
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from pyweb.handler import Context
from pyweb.protocol.response import Response
from pyweb.runtime import current

if TYPE_CHECKING:
    from .host import Host

__all__ = [
    "StatusHandler", "PageStats", "STATUS_PATH", "OPERATOR_PREFIX", "MAX_PAGES",
    "operator_allowed", "guard_operator_pages",
]  # fmt: skip

STATUS_PATH = "/_pyweb/status"
OPERATOR_PREFIX = "/_pyweb/"
"""Every path under it is for the operator (status, ``/_pyweb/stats``...): the same guard."""
MAX_PAGES = 1000

STATUS_SECTIONS: dict[str, Callable[[], Any]] = {}
"""More sections of the status page, by name, filled by what runs beside the server (the
scheduled jobs and the work after replies: ``pyweb.background``); the server imports none."""


@dataclass
class PageStats:
    """What one path has cost so far."""

    requests: int = 0
    errors: int = 0
    """Responses with a 5xx status, or handlers that raised."""
    total_seconds: float = 0.0
    max_seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        mean = self.total_seconds / self.requests if self.requests else 0.0
        return {
            "requests": self.requests,
            "errors": self.errors,
            "mean_ms": round(mean * 1000, 3),
            "max_ms": round(self.max_seconds * 1000, 3),
        }


def _is_loopback(peer: str) -> bool:
    host = peer.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "" or peer.startswith("/")  # a Unix socket is local


def operator_allowed(ctx: Context, token: str | None) -> bool:
    """A loopback client (behind a trusted proxy: the client it names), or one presenting
    ``Authorization: Bearer TOKEN``."""
    if token is not None:
        for name, value in ctx.request.headers:
            if name == "authorization" and value.startswith("Bearer "):
                return hmac.compare_digest(value[7:].encode(), token.encode())
    return _is_loopback(ctx.peer)


def _operator_path(path: str) -> bool:
    if path.startswith(OPERATOR_PREFIX):
        return True
    # "/%5Fpyweb/stats" is the same page to the site, which decodes before routing
    return "%" in path and unquote(path).startswith(OPERATOR_PREFIX)


def guard_operator_pages(
    handler: Callable[[Context], Awaitable[Response]],
    token: str | None,
    refuse: Callable[[], Response],
    own: dict[str, Callable[[Context], Awaitable[Response]]] | None = None,
) -> Callable[[Context], Awaitable[Response]]:
    """``handler`` with every ``/_pyweb/`` page (the site's ``/_pyweb/stats`` with
    ``--profile-alloc`` too) answering only :func:`operator_allowed` clients (``token``:
    the ``status_token`` of the settings it was made with), else ``refuse()``'s 403.
    ``own``: pages the server answers itself, by path (``/_pyweb/metrics``), behind the
    same guard."""
    own = own or {}

    async def refused() -> Response:
        return refuse()

    def guarded(ctx: Context) -> Awaitable[Response]:
        # Not a coroutine itself: it hands back the handler's own awaitable, so the guard
        # costs every request one call, not a second coroutine (docs/request-path.md).
        path = ctx.request.path
        if (path.startswith(OPERATOR_PREFIX) or "%" in path) and _operator_path(path):
            if not operator_allowed(ctx, token):
                return refused()
            page = own.get(path)
            if page is not None:
                return page(ctx)
        return handler(ctx)

    return guarded


class StatusHandler:
    """The site's handler, counted, plus the status page."""

    def __init__(
        self,
        inner: Callable[[Context], Awaitable[Response]],
        server: Host,
        token: str | None = None,
    ) -> None:
        self.inner = inner
        self.server = server
        self.token = token
        self.started = time.time()
        self.pages: dict[str, PageStats] = {}

    def renewed(
        self, inner: Callable[[Context], Awaitable[Response]], token: str | None
    ) -> StatusHandler:
        """The handler for the connections after a reload: the new site and token, the same
        counts (the connections opened before keep the handler they started with)."""
        new = copy.copy(self)  # shares ``pages`` and ``started``
        new.inner, new.token = inner, token
        return new

    @property
    def requests(self) -> int:
        """Requests passed on so far (each is counted under its page, or ``(other)``)."""
        return sum(stats.requests for stats in self.pages.values())

    def _stats_for(self, path: str) -> PageStats:
        stats = self.pages.get(path)
        if stats is None:
            if len(self.pages) >= MAX_PAGES:
                path = "(other)"
                stats = self.pages.get(path)
            if stats is None:
                stats = self.pages[path] = PageStats()
        return stats

    async def __call__(self, ctx: Context) -> Response:
        request = ctx.request
        if request.path == STATUS_PATH:
            return self.answer(ctx)
        stats = self._stats_for(request.path)
        stats.requests += 1
        start = time.perf_counter()
        try:
            response = await self.inner(ctx)
        except BaseException:
            stats.errors += 1
            raise
        finally:
            elapsed = time.perf_counter() - start
            stats.total_seconds += elapsed
            if elapsed > stats.max_seconds:
                stats.max_seconds = elapsed
        if response.status >= 500:
            stats.errors += 1
        return response

    def allowed(self, ctx: Context) -> bool:
        return operator_allowed(ctx, self.token)

    def answer(self, ctx: Context) -> Response:
        if not self.allowed(ctx):
            return self.server.error_page(
                403, detail="the status page answers loopback clients and token holders"
            )
        body = json.dumps(self.snapshot(), indent=1).encode() + b"\n"
        return Response(
            200,
            [("content-type", "application/json"), ("cache-control", "no-store")],
            body,
        )

    def snapshot(self) -> dict[str, Any]:
        from .supervised import worker_table

        server = self.server
        config = server.config
        return {
            "pid": os.getpid(),
            "worker": os.environ.get("PYWEB_WORKER_ID"),
            "workers": worker_table(),
            "loop": current().name,  # the loop serving (trio, asyncio)
            "scheduler": config.scheduler,
            "uptime_s": round(time.time() - self.started, 3),
            "connections_open": len(server.connections),
            "requests_served": self.requests,
            "pages": {path: s.as_json() for path, s in sorted(self.pages.items())},
            **{name: section() for name, section in STATUS_SECTIONS.items()},
        }
