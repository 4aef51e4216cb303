"""Routing: which script, service, template, file or WebSocket answers a URL (SMLserver
§2.1, Hop §2.1; docs/pages.md and docs/routing.md have the full story).

First match wins, in this order (:meth:`Routing._route`), after the operator pages
(``/_pyweb/stats``, ``/_pyweb/openapi``: :mod:`pyweb.app.stats`, :mod:`pyweb.app.openapi`):

1. a **WebSocket** URL (``@pyweb.websocket``), its handshake run as a page;
2. a **service** bound to exactly this path (``@service("/mul")``);
3. a **script**: ``/NAME`` runs ``NAME.py`` (``/`` and ``/dir/`` run an ``index.py``);
   ``/NAME.py`` is redirected there (one URL per page);
4. a **template page**: ``/NAME`` renders ``templates/NAME.html``;
5. the site's source (``.py`` files, ``_library`` names, ``templates/``, ``data/``): 404;
6. a route with **path parameters** (``@service("/todo/{id}")``, ``pages/todo/[id].py``:
   :mod:`pyweb.app.routes`), the most specific first;
7. an existing **static file** (:mod:`pyweb.app.static`); else 404.

Whatever answers, the same guards run around it (:data:`pyweb.app.guards.GUARDS`): the
traps whose pattern covers the path (matched on its canonical spelling), the session, the
CSRF check, the headers.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, unquote

from pyweb.handler import Context
from pyweb.protocol.response import Response

from . import openapi, pages
from .apierrors import wants_json
from .conn import Conn
from .loader import Problem
from .openapi_page import openapi_json, openapi_page
from .routes import Pattern
from .runner import Runner, _Page, _ready, _script_page, _service_page
from .services import Service
from .static import StaticFiles
from .stats import stats_json, stats_page
from .traps import Trap, canonical
from .websockets import WebSocketRoute

__all__ = ["Routing"]

_KNOWN_PATHS = 1024  # paths whose script or service is remembered (Routing._remember)


def _hidden(decoded: str) -> bool:
    """Source files of the site, never served as static files: a segment that starts
    with ``_``, a last one that ends in ``.py``, ``.pyc`` or ``.sql``, and what is under
    ``templates/`` (source) and ``data/`` (the site's SQLite database, pyweb.db's default).
    Tested on the whole string where it can be: this runs for every static file."""
    if decoded.startswith("_") or "/_" in decoded or decoded.endswith((".py", ".pyc", ".sql")):
        return True
    segments = decoded.split("/", 2)
    return len(segments) > 1 and segments[1] in ("templates", "data")


def _for_request(svc: Service, request: Any) -> Service:
    """The service of ``svc``'s path that answers the request's method, else ``svc``. A
    CORS preflight (``OPTIONS`` naming ``Access-Control-Request-Method``) is answered by
    the policy of the service that the method it names would reach."""
    method = request.method
    if method == "OPTIONS" and method not in svc.by_method:
        method = request.header("access-control-request-method") or method
    return svc.for_method(method) or svc


def _one_service(svc: Service) -> bool:
    """Whether one service answers every method of ``svc``'s path: then its page answers
    every request for the path (another method: the methods guard's 405), and ``__call__``
    may send the next request there without looking at its method."""
    return len({id(other) for other in svc.by_method.values()}) <= 1


def _wins(first: Pattern, second: Pattern) -> bool:
    """Whether ``first`` is more specific than ``second`` (literals before parameters)."""
    return first.rank <= second.rank


async def _no_page(conn: Conn) -> None:
    raise AssertionError("_FILE is a mark, never run")


_FILE = _Page(_no_page, "static file", None, False, methods=("GET", "HEAD"))
"""``Site._known``'s mark for a path a static file answered."""


class _Target:
    """The request's path as the routes look at it, worked out once."""

    __slots__ = ("path", "decoded", "name", "alias", "traps")

    def __init__(self, path: str) -> None:
        self.path = path
        """As sent (``Site._known``'s key)."""
        self.decoded = unquote(path) if "%" in path else path
        name = self.decoded[1:]
        self.alias = name.endswith(".py")
        """``/NAME.py``: the ``.py`` alias of the page ``/NAME``."""
        if self.alias:
            name = name[:-3]
        elif name == "" or name.endswith("/"):
            name += "index"
        self.name = name
        """The script's URL name (``guess``, ``dir/index``)."""
        self.traps: list[Trap] = []
        """The traps that cover the path (any spelling of it)."""


class Routing(Runner):
    """Routes each request of a loaded site to what answers it (see the module doc)."""

    static: StaticFiles
    no_script_cache: bool

    ROUTES = (
        "_server_route",  # "OPTIONS *": the server itself, no page
        "_stats_route",  # /_pyweb/stats (development mode, --profile-alloc)
        "_openapi_route",  # /_pyweb/openapi.json and its page (development mode, --openapi)
        "_websocket_route",  # @pyweb.websocket("/path"): the handshake
        "_service_route",  # @service("/path")
        "_script_route",  # /NAME runs NAME.py; /NAME.py is redirected to /NAME
        "_template_route",  # /NAME renders templates/NAME.html
        "_source_route",  # the site's source (.py, _library, templates/, data/): 404
        "_pattern_route",  # /todo/{id}, pages/todo/[id].py: the most specific first
        "_file_route",  # a static file, else the 404 page
    )
    """The routing order, as one table: each entry is a method that answers the request
    (an awaitable of its response) or passes it on (None); the first answer wins."""

    async def _route(self, ctx: Context) -> Response:
        if self.dev and self.refresh() and self.regions is not None:
            self.regions.reload()
        target = _Target(ctx.request.path)
        if self.traps and target.decoded.startswith("/"):
            target.traps = self._traps_for(target.decoded)
        for kind in self.ROUTES:
            answer = getattr(self, kind)(ctx, target)
            if answer is not None:
                return await answer
        raise AssertionError("the file route answers every request")  # (unreachable)

    def _server_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        if target.decoded.startswith("/"):
            return None
        return self._answer(ctx, self._static, "the server", [])

    def _stats_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        regions = self.regions
        if regions is None or target.decoded not in ("/_pyweb/stats", "/_pyweb/stats.json"):
            return None
        if not (self.dev or regions.profile_alloc or regions.alloc_message):
            return None
        page = stats_page if target.decoded == "/_pyweb/stats" else stats_json
        return self._answer(ctx, lambda _ctx: page(regions), target.decoded, [])

    def _openapi_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        if target.decoded not in ("/_pyweb/openapi.json", "/_pyweb/openapi"):
            return None
        if not (self.dev or self.openapi):
            return None
        show = openapi_json if target.decoded.endswith(".json") else openapi_page
        return self._answer(ctx, lambda _ctx: show(openapi.document(self)), target.decoded, [])

    def _websocket_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        route = self.websockets.get(target.decoded)
        return None if route is None else self._upgrade(ctx, route, target.traps)

    def _service_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        svc = self.services.get(target.decoded)
        if svc is None:
            return None
        if self.dev and target.decoded in self._clashes:  # two services, one method: 500
            return self._answer(ctx, self._clash_page(target.decoded), target.decoded, target.traps)
        # One service per (path, method); none for this method: the first one's page,
        # which the methods guard answers 405 with every method of the path in Allow.
        page = _service_page(_for_request(svc, ctx.request), target.traps, self.cors)
        if _one_service(svc):  # (else the next request's method may pick another one)
            self._remember(target.path, page)
        return self._run_service(ctx, page)

    def _script_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        name = target.name
        script = self._dev_script(name) if self.dev else self.scripts.get(name)
        if isinstance(script, Problem):
            return self._answer(ctx, self._broken_page(name, script), script.path, target.traps)
        if script is None or "[" in name:  # a [param] file is reached through its pattern only
            return None
        if target.alias:  # (no trap: the page's one URL has its own)
            return self._answer(ctx, self._canonical_redirect(name), target.decoded, [])
        if not self.no_script_cache:  # (that mode compiles the script on every request)
            self._remember(target.path, _script_page(script, target.traps, self.cors))
        return self._run_script(ctx, script, None, target.traps)

    def _template_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        name = target.name
        if self.templates is None or "." in name.rsplit("/", 1)[-1]:
            return None
        template = self.templates.page_name(name)
        if template is None:
            return None

        async def render(conn: Conn) -> None:
            conn.return_template(template)

        filename = os.path.join(self.templates.directory, template)
        return self.run_page(
            ctx, render, f"templates/{template}", filename, False, traps=target.traps
        )

    def _source_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        if not _hidden(target.decoded):
            return None
        return self._answer(ctx, self._not_found_page(target.path), target.decoded, target.traps)

    def _pattern_route(self, ctx: Context, target: _Target) -> Awaitable[Response] | None:
        if not (self.service_routes or self.script_routes):
            return None
        probe = self.static.respond(dataclasses.replace(ctx.request, method="HEAD"))
        if probe is not None and probe.status < 400:
            return None  # an existing static file wins over a pattern
        return self._run_pattern(ctx, target.decoded, target.name, target.traps)

    async def _file_route(self, ctx: Context, target: _Target) -> Response:
        response = await self._answer(ctx, self._static, target.decoded, target.traps)
        if not target.traps and response.status < 400 and not self.dev:
            self._remember_file(target.path, target.name)
        return response

    def _traps_for(self, decoded: str) -> list[Trap]:
        """The traps whose pattern covers ``decoded``, in any of its spellings."""
        canon = canonical(decoded)
        return [t for t in self.traps if t.covers(canon)]

    def _canonical_redirect(self, name: str) -> Callable[[Context], Response]:
        """One URL per page: ``/NAME.py`` (however spelled) is answered with a 308 to
        ``/NAME``, query kept (308 keeps the method and body, RFC 9110 §15.4.9), so the
        page, its traps and its links have one address."""
        index = name == "index" or name.endswith("/index")
        target = quote("/" + (name[: -len("index")] if index else name), safe="/")

        def redirect(ctx: Context) -> Response:
            query = ctx.request.query
            location = target + ("?" + query if query else "")
            return Response(
                308,
                [("Location", location), ("Content-Type", "text/plain; charset=utf-8")],
                f"This page's address is {location}\n".encode(),
            )

        return redirect

    def _upgrade(self, ctx: Context, route: WebSocketRoute, traps: list[Trap]) -> Awaitable[Response]:
        """A WebSocket handshake, as a page: the traps run first (a stranger gets their
        answer, never a socket), the session is loaded, and the handler gets it with the
        logged-in user (``ws.session``, ``ws.user``)."""

        async def upgrade(conn: Conn) -> None:
            conn.response = route.upgrade(ctx.request, self.dev, conn)

        return self.run_page(
            ctx, upgrade, f"websocket {route.path}", None, False, traps=traps, check_csrf=False
        )

    def _remember_file(self, path: str, name: str) -> None:
        """Note that a file answered ``path``, when nothing else ever can in production:
        scripts and services are loaded once (``_load`` forgets these paths too), but a
        template page is looked for on disk on every request, so a file that a template
        added later could shadow (a last segment without a dot, ``/about``) is not noted.
        Bounded, as ``_remember``."""
        if self.templates is not None and "." not in name.rsplit("/", 1)[-1]:
            return
        self._remember(path, _FILE)

    def _remember(self, path: str, page: _Page) -> None:
        """Note which script or service answers ``path`` (as sent), so that the next request
        for it skips the routing above (``__call__``): in production the site's files do not
        change until it is loaded again (``_load`` forgets them all); development mode looks
        every time. Bounded: percent-encoded spellings of one path must not fill memory."""
        if not self.dev and len(self._known) < _KNOWN_PATHS:
            self._known[path] = page

    def _run_service(
        self, ctx: Context, page: _Page, params: dict[str, str] | None = None
    ) -> Awaitable[Response]:
        return self.run_in_guards(ctx, page, params)  # (a method it does not take: guards.methods)

    def _run_script(
        self,
        ctx: Context,
        script: pages.Script,
        params: dict[str, str] | None,
        traps: list[Trap],
    ) -> Awaitable[Response]:
        if self.no_script_cache:
            try:  # Table 1, column five: compile the script again for every request
                script = pages.compile_script(script.path, script.name)
            except (OSError, SyntaxError) as err:
                return _ready(
                    self.error_page(
                        500, detail=f"the page does not compile: {err}", exc=err,
                        request=ctx.request,
                    )  # fmt: skip
                )
        return self.run_in_guards(ctx, _script_page(script, traps, self.cors), params)

    def _run_pattern(
        self, ctx: Context, decoded: str, name: str, traps: list[Trap]
    ) -> Awaitable[Response] | None:
        """Serve a path through a route with parameters, if one matches (the most specific
        of a service's and a script's; an existing static file has won already)."""
        by_service = self.service_routes.match(decoded) if self.service_routes else None
        by_script = self.script_routes.match("/" + name) if self.script_routes else None
        if by_service is not None and (by_script is None or _wins(by_service[0], by_script[0])):
            svc = _for_request(by_service[1], ctx.request)  # (as above)
            return self._run_service(ctx, _service_page(svc, traps, self.cors), by_service[2])
        if by_script is None:
            return None
        name = by_script[1]
        script = self._dev_script(name) if self.dev else self.scripts.get(name)
        if isinstance(script, Problem):
            return self._answer(ctx, self._broken_page(name, script), script.path, traps)
        if script is None:
            return None
        return self._run_script(ctx, script, by_script[2], traps)

    def _answer(
        self, ctx: Context, answer: Callable[[Context], Response], name: str, traps: list[Trap]
    ) -> Awaitable[Response]:
        """A route that answers without a page of the site's (a static file, an error page,
        a redirect), run as one: the same guards, in the same order, as a page."""

        async def respond(conn: Conn) -> None:
            conn.response = answer(ctx)

        return self.run_page(ctx, respond, name, None, False, traps=traps, check_csrf=False)

    def _not_found_page(self, path: str) -> Callable[[Context], Response]:
        return lambda ctx: self._not_found(path, ctx.request)

    def _clash_page(self, path: str) -> Callable[[Context], Response]:
        """The 500 of a path two services claim for one method (development mode)."""
        problem = self._clashes[path]
        return lambda ctx: self.error_page(
            500, detail=f"the site has an error: {problem}", request=ctx.request
        )

    def _broken_page(self, name: str, problem: Problem) -> Callable[[Context], Response]:
        """The 500 of a script that does not compile (development mode shows where)."""
        path = os.path.join(self.root, *name.split("/")) + ".py"
        return lambda ctx: self.error_page(
            500, detail=f"the page does not compile: {problem}",
            exc=self._syntax_errors.get(path), request=ctx.request,
        )  # fmt: skip

    def _static(self, ctx: Context) -> Response:
        request = ctx.request
        method = request.method
        if method == "GET" or method == "HEAD":
            response = self.static.respond(request)
            if response is not None:
                if response.status in (400, 403, 404):
                    if wants_json(request):  # an API client: the refusal as JSON
                        return self.error_page(response.status, request=request)
                    if self.templates is not None and self.templates.error_template(
                        response.status
                    ):  # the site's own page
                        return self.error_page(response.status)
                return response
            return self._not_found(request.path, request)
        # Would a GET find something here? Then the resource exists and only the method is
        # wrong (405, RFC 9110 §15.5.6, with Allow); otherwise there is nothing here (404).
        probe = self.static.respond(dataclasses.replace(request, method="GET"))
        if probe is not None and probe.status < 400:
            return self.not_allowed(method, "GET, HEAD", request)
        if probe is not None:  # the path itself is bad (400) or refused (404)
            return probe
        return self._not_found(request.path, request)
