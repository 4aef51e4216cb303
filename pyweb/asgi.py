"""A pyweb site as an ASGI 3 application: any ASGI server can run it (Hop §2.4's
pluggable schedulers, taken one step further: the whole server is pluggable).

    PYWEB_SITE=pages uvicorn pyweb.asgi:app          # the example site under uvicorn
    PYWEB_SITE=pages granian --interface asgi pyweb.asgi:app

or, in code, ``app = pyweb.asgi.Site("pages")``. The pages, services, templates, static
files, regions and error pages are the same objects pyweb's own server uses
(:class:`pyweb.app.site.Site`): this module only translates. An ASGI ``http`` scope becomes
the request (:class:`pyweb.protocol.events.Request`) and a context with the handler
contract (the body on demand, the client-gone and shutdown events, the error log); the
:class:`~pyweb.protocol.response.Response` goes back as ``http.response.start`` and
``http.response.body`` messages, framed by :func:`~pyweb.protocol.response.frame_response`
(so HEAD, 204/304 and header validation follow the same rules) with the hop-by-hop fields
left to the ASGI server. ``lifespan`` loads the site at start-up (a site that does not
compile fails the start-up with its errors) and, at shutdown, enables every page's
``conn.shutdown_evt()``.

What runs beside the requests runs here as under ``pyweb serve`` (:mod:`pyweb.background`):

* ``conn.after`` work starts once the reply is out: after the last ``http.response.body``
  message has been sent (dropped when the reply is a 5xx or was never sent);
* the scheduled jobs (``@pyweb.every``..., ``[[schedule]]`` in the site's ``pyweb.toml``)
  start with the lifespan's start-up and stop at its shutdown, after the pending
  ``conn.after`` work has had its ``after_grace``. The same exactly-once rules hold: with a
  Redis cache (``cache`` in ``pyweb.toml`` or ``PYWEB_CACHE``) every process takes part
  and Redis's leases let one run each due job; with the in-memory cache each process
  claims the run in the site's ``data/jobs.json`` under a lock, so two processes on one
  site still run a job once. An ASGI server started without lifespan
  (``uvicorn --lifespan off``) runs no jobs.

The server's loop may be asyncio (uvicorn, granian, hypercorn) or trio (hypercorn's trio
worker): the pages reach it through :mod:`pyweb.runtime` either way. What an ASGI server
does not give pyweb: its access log format, timeouts and limits (those are the ASGI
server's own settings), arenas (replies are bytes), and ``--profile-alloc``.
WebSockets: a ``websocket`` scope runs the site's ``@pyweb.websocket`` handlers
(:mod:`pyweb.asgi_websocket`); pings and frames are the ASGI server's.

The operator pages (every path under ``/_pyweb/``: the site's ``/_pyweb/openapi`` and
``/_pyweb/stats``) answer loopback clients and holders of the status token alone, as under
``pyweb serve``: the same guard (:func:`pyweb.server.status.guard_operator_pages`) stands
in front of the site, for ``http`` and ``websocket`` scopes, with the same spellings of the
path (``/%5Fpyweb/...``). The client is the one the ASGI server names (behind a proxy: its
own ``--proxy-headers`` setting decides); the token is ``status_token`` (an option, else
the site's ``pyweb.toml``), sent as ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote

import anyio

from pyweb import runtime
from pyweb.app.site import Site as _Site
from pyweb.asgi_websocket import refuse, serve_websocket
from pyweb.background import Background
from pyweb.events import Event, Latch, guard
from pyweb.protocol.errorpage import error_response
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.messages import Request
from pyweb.protocol.negotiation import prefers_json
from pyweb.protocol.response import FileBody, Fragments, Response, frame_response
from pyweb.server.status import guard_operator_pages

__all__ = ["Site", "app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

log = logging.getLogger("pyweb.asgi")

_HOP_BY_HOP = (b"connection", b"transfer-encoding", b"date", b"server")
"""Fields the ASGI server writes itself (framing, and its own Date and Server)."""
_FILE_CHUNK = 64 * 1024


class Site:
    """``Site(root, dev=False, **options)``: the site in directory ``root`` as an ASGI 3
    application. ``options`` are those of :class:`pyweb.app.site.Site` (``regions``,
    ``page_timeout``, ...). The site is loaded at once unless ``lazy=True`` (then at the
    lifespan start-up, or at the first request). ``jobs=False``: the lifespan starts no
    scheduled jobs (another process runs them). ``status_token``: who else but loopback
    clients may read the ``/_pyweb/`` pages (default: the site's ``pyweb.toml`` says)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        dev: bool = False,
        lazy: bool = False,
        jobs: bool = True,
        status_token: str | None = None,
        **options: Any,
    ) -> None:
        self.root = os.fspath(root)
        self.dev = dev
        self.jobs = jobs
        self.status_token = status_token
        self.options = options
        self._guarded: Callable[[Any], Awaitable[Response]] | None = None
        self.stopping = Latch()
        """Set when the ASGI server shuts down (lifespan): ``conn.shutdown_evt()``."""
        self.site: _Site | None = None
        self.background: Background | None = None
        """The scheduler and the after-work's drain, from the lifespan start-up on."""
        if not lazy:
            self.load()

    def load(self) -> _Site:
        """Load (compile) the site; :class:`pyweb.app.site.SiteError` lists its problems."""
        if self.site is None:
            self.site = _Site(self.root, dev=self.dev, **self.options)
        return self.site

    def handler(self) -> Callable[[Any], Awaitable[Response]]:
        """The site behind the operator pages' guard (module doc), loaded on first use."""
        if self._guarded is None:
            site = self.load()
            token = self.status_token
            if token is None:
                token = self._settings(("status_token",)).get("status_token")

            def refuse() -> Response:
                return site.error_page(
                    403, detail="the operator pages answer loopback clients and token holders"
                )

            self._guarded = guard_operator_pages(site, token, refuse)
        return self._guarded

    def _settings(self, wanted: tuple[str, ...]) -> dict[str, Any]:
        """The settings ``wanted`` of the site's ``pyweb.toml`` (none without one)."""
        from pyweb.server.configfile import find_config_file, read_config_file

        path = find_config_file(self.root, None)
        settings = read_config_file(path) if path is not None else {}
        return {k: v for k, v in settings.items() if k in wanted}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.http(scope, receive, send)
        elif kind == "lifespan":
            await self.lifespan(receive, send)
        elif kind == "websocket":
            await self.websocket(scope, receive, send)
        else:
            raise ValueError(f"pyweb.asgi cannot serve an ASGI scope of type {kind!r}")

    async def lifespan(self, receive: Receive, send: Send) -> None:
        """Start-up: load the site, start its jobs. Shutdown: ``conn.shutdown_evt()``, the
        pending ``conn.after`` work gets its grace, the jobs stop."""
        message = await receive()
        if message["type"] != "lifespan.startup":  # (ASGI: start-up comes first)
            raise RuntimeError(f"lifespan began with {message['type']!r}, not lifespan.startup")
        try:
            self.load()
            background = self.background = self._background()
        except Exception as exc:  # a site that does not compile, a bad [[schedule]] entry
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        async with anyio.create_task_group() as tasks:
            if self.jobs:
                tasks.start_soon(background.run)
            await send({"type": "lifespan.startup.complete"})
            while message["type"] != "lifespan.shutdown":
                message = await receive()
            self.stopping.set()
            await background.drain()  # conn.after work: its grace, then cancelled
            tasks.cancel_scope.cancel()  # the scheduler (a job running now is cancelled)
        await send({"type": "lifespan.shutdown.complete"})

    def _background(self) -> Background:
        """The site's jobs and after-work settings, from its ``pyweb.toml`` as under
        ``pyweb serve`` (``cache``, ``job_timeout``, ``missed_jobs``, ``after_limit``,
        ``after_grace``; the cache also from ``PYWEB_CACHE``)."""
        from pyweb.server.config import ServerConfig
        from pyweb.server.configfile import find_config_file

        wanted = ("cache", "job_timeout", "missed_jobs", "after_limit", "after_grace")
        config = ServerConfig(**self._settings(wanted))
        return Background(self.root, config, find_config_file(self.root, None))

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.handler()
        ctx = AsgiContext(scope, receive, self)
        request = ctx.request
        try:
            response = await handler(ctx)
        except ProtocolError as err:  # a body too large, a malformed upload
            response = error_response(
                err.status, dev=self.dev, detail=err.message, as_json=_wants_json(request)
            )
        except Exception as exc:  # pyweb's own bug: never leave the client without an answer
            ctx.log_error(f"{request.method} {request.target} failed", exc)
            response = error_response(
                500, dev=self.dev, detail=repr(exc), exc=exc, as_json=_wants_json(request)
            )
        try:
            await send_response(send, request, response)
        finally:
            ctx.finish()
        # The last http.response.body message is sent: the page's work after the reply
        # starts now (conn.after; a reply that was not sent raised above, and its work
        # is dropped with the batch).
        if ctx.after_reply is not None:
            ctx.after_reply(response.status)

    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket handshake: the site answers it as under pyweb's own server (the
        route's checks), then the session runs on ASGI's messages (asgi_websocket.py)."""
        handler = self.handler()
        ctx = AsgiContext(scope, receive, self)
        try:
            response = await handler(ctx)
        except Exception as exc:  # pyweb's own bug: refuse the handshake, log why
            ctx.log_error(f"WebSocket {ctx.request.target} failed", exc)
            response = error_response(500, dev=self.dev, detail=repr(exc), exc=exc)
        extensions = scope.get("extensions") or {}
        try:
            if not await serve_websocket(ctx, self.stopping, response, receive, send):
                await refuse(send, response, extensions)
        finally:
            ctx.finish()


def _wants_json(request: Request) -> bool:
    """Whether this request's errors are JSON (an API client: negotiation.py decides)."""
    return prefers_json(request.header("content-type"), request.header("accept"))


def _request(scope: Scope) -> Request:
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(scope.get("path", "/"), safe="/%:@!$&'()*+,;=")
    query = scope.get("query_string", b"").decode("latin-1")
    headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]
    host = ""
    length: int | None = None
    chunked = False
    for name, value in headers:
        if name == "host" and not host:
            host = value
        elif name == "content-length" and value.isdigit():
            length = int(value)
        elif name == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    version = scope.get("http_version", "1.1")
    return Request(
        method=scope.get("method", "GET"),  # a websocket scope has none: its handshake is a GET
        target=path + ("?" + query if query else ""),
        http_version=version if version in ("1.0", "1.1") else "1.1",
        headers=headers,
        path=path,
        query=query,
        host=host,
        content_length=None if chunked else length,
        chunked=chunked,
    )


class AsgiContext:
    """One ASGI request as a page runner sees it: the same contract as the server's
    ``RequestContext`` (request, peer, dev, body, stream, client-gone and shutdown events,
    error log; ``after_reply``, which the page's ``conn.after`` sets and :meth:`Site.http`
    calls once the reply is sent)."""

    __slots__ = ("request", "peer", "scheme", "_server_port", "dev", "received_at", "alloc", "body_done",
                 "after_reply", "_receive", "_site", "_buffered", "_gone", "_watch")  # fmt: skip

    def __init__(self, scope: Scope, receive: Receive, site: Site) -> None:
        self.request = _request(scope)
        client = scope.get("client")
        self.peer = f"{client[0]}:{client[1]}" if client else "-"
        self.scheme = scope.get("scheme", "http")
        server = scope.get("server")
        self._server_port = int(server[1]) if server and server[1] else 0
        self.dev = site.dev
        self.received_at = time.time()
        self.alloc: tuple[int, int] | None = None
        self.body_done = False
        self.after_reply: Callable[[int], None] | None = None
        """Set by the page's first ``conn.after``: called once the reply is sent."""
        self._receive = receive
        self._site = site
        self._buffered: bytes | None = None
        self._gone: Latch | None = None
        self._watch: Any = None  # the cancel scope of the disconnect watcher

    @property
    def server_port(self) -> int:
        return self._server_port

    async def body(self, copies: int = 1) -> bytes:
        """The whole request body (the ASGI server has de-chunked it)."""
        if self._buffered is None:
            self._buffered = b"".join([piece async for piece in self.stream()])
        return self._buffered

    async def stream(self) -> AsyncIterator[bytes]:
        """The request body piece by piece."""
        if self._buffered is not None:
            if self._buffered:
                yield self._buffered
            return
        while not self.body_done:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._client_gone()
                raise ConnectionResetError("the client went away before sending its body")
            self.body_done = not message.get("more_body", False)
            piece = message.get("body", b"")
            if piece:
                yield piece

    def client_gone_evt(self) -> Event[None]:
        """Enabled once the client has disconnected (ASGI's ``http.disconnect``)."""
        return guard(self._start_watch)

    async def _start_watch(self) -> Event[None]:
        if self._gone is None:
            self._gone = Latch()
            await self.body()  # ASGI has one receive(): the body first, then the disconnect
            rt = runtime.current()
            self._watch = rt.CancelScope()
            rt.spawn_background(self._watch_disconnect, self._watch)
        return self._gone.evt()

    async def _watch_disconnect(self, scope: Any) -> None:
        with scope:
            while True:
                message = await self._receive()
                if message["type"] == "http.disconnect":
                    self._client_gone()
                    return

    def _client_gone(self) -> None:
        if self._gone is None:
            self._gone = Latch()
        self._gone.set()

    def shutdown_evt(self) -> Event[None]:
        """Enabled once the ASGI server has begun shutting down (lifespan)."""
        return self._site.stopping.evt()

    def log_error(self, message: str, exc: BaseException | None = None) -> None:
        r = self.request
        log.error("%s [from %s] %s %s", message, self.peer, r.method, r.target, exc_info=exc)

    def finish(self) -> None:
        """The response has been sent: stop watching for the disconnect."""
        if self._watch is not None:
            self._watch.cancel()


async def send_response(send: Send, request: Request, response: Response) -> None:
    """``response`` as ASGI messages."""
    body = response.body
    if isinstance(body, Fragments):
        body = bytes(body)
    length: int | None
    if isinstance(body, bytes | bytearray | memoryview):
        length = len(body)
    elif isinstance(body, FileBody):
        length = body.length
    else:
        length = None
    head = frame_response(request, response.status, response.headers, length)
    headers = []
    # the status line and the final empty line are not fields
    for line in head.data.split(b"\r\n")[1:-2]:
        name, _, value = line.partition(b": ")
        name = name.lower()
        if name not in _HOP_BY_HOP:
            headers.append((name, value))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    if not head.send_body:
        await send({"type": "http.response.body", "body": b""})
    elif isinstance(body, bytes | bytearray | memoryview):
        await send({"type": "http.response.body", "body": bytes(body)})
    elif isinstance(body, FileBody):
        await _send_file(send, body)
    else:
        async for piece in body:
            if piece:
                await send({"type": "http.response.body", "body": piece, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


async def _send_file(send: Send, body: FileBody) -> None:
    with open(body.path, "rb") as f:
        left = body.length
        position = body.offset
        while left > 0:
            piece = os.pread(f.fileno(), min(left, _FILE_CHUNK), position)
            if not piece:
                raise OSError(f"{body.path} became shorter while it was being sent")
            left -= len(piece)
            position += len(piece)
            await send({"type": "http.response.body", "body": piece, "more_body": left > 0})
    if body.length == 0:
        await send({"type": "http.response.body", "body": b""})


class _SiteFromEnvironment:
    """``pyweb.asgi:app``: the site named by ``PYWEB_SITE`` (and ``PYWEB_DEV=1`` for
    development mode), loaded on first use."""

    def __init__(self) -> None:
        self.site: Site | None = None

    def _load(self) -> Site:
        if self.site is None:
            root = os.environ.get("PYWEB_SITE")
            if not root:
                raise RuntimeError(
                    "pyweb.asgi:app serves the site named by the PYWEB_SITE environment "
                    "variable: PYWEB_SITE=pages uvicorn pyweb.asgi:app"
                )
            self.site = Site(root, dev=os.environ.get("PYWEB_DEV", "") in ("1", "true", "yes"))
        return self.site

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" and self.site is None:
            try:
                self._load()
            except Exception as exc:
                await receive()  # lifespan.startup
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
        await self._load()(scope, receive, send)


app = _SiteFromEnvironment()
"""The ASGI application ``pyweb.asgi:app`` (the site in ``$PYWEB_SITE``)."""
