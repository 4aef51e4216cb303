"""Site: the handler of ``pyweb serve DIR``: one pipeline for every request to a site
directory (SMLserver §2.1, Hop §2.1 and §2.4's "Response" stage).

A site is three layers, one module each:

* :mod:`pyweb.app.loader`: the compile step (scripts compiled, service modules imported,
  templates parsed; development mode's reload);
* :mod:`pyweb.app.routing`: which script, service, template, file or WebSocket answers a
  URL (the routing order as one list);
* :mod:`pyweb.app.runner`: running it, inside the guards of :data:`pyweb.app.guards.GUARDS`
  (method rules, sessions, CSRF, the watchdog, regions, the un-awaited check, traps, the
  page deadline, the security and cache headers), the same list in the same order for every
  kind of route: docs/request-path.md shows it.

:class:`Site` puts them together with the settings; ``await site(ctx)`` answers a request.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Sequence
from typing import Any

from pyweb import signing
from pyweb.handler import Context
from pyweb.protocol.response import Response
from pyweb.regions import SiteRegions

from . import pages, unawaited
from .conn import Conn
from .cors import CORS
from .formdata import FormLimits
from .guards import headers
from .guards.compress import FileCodings
from .loader import Problem, SiteError
from .routes import Router
from .routing import _FILE, Routing, _hidden
from .runner import PAGE_TIMEOUT, _Page
from .services import Service
from .sessions import DEFAULT_IDLE, DEFAULT_LIFETIME, DEFAULT_MEMORY_MAX, SessionStore
from .static import StaticFiles
from .templates import Templates
from .traps import Trap
from .websockets import WebSocketRoute

__all__ = ["Site", "SiteError", "Problem", "check_site", "PAGE_TIMEOUT"]

_DEFAULT_LIMITS = FormLimits()


class Site(Routing):
    """``await Site(root)(ctx) -> Response``: an async handler serving a site directory."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        dev: bool = False,
        form_limits: FormLimits = _DEFAULT_LIMITS,
        regions: bool = True,
        strict_regions: bool = False,
        exec_library: bool = False,
        no_script_cache: bool = False,
        profile_alloc: bool = False,
        page_timeout: float | None = PAGE_TIMEOUT,
        secret_key: str | Sequence[str] | None = None,
        session_idle: float = DEFAULT_IDLE,
        session_lifetime: float = DEFAULT_LIFETIME,
        session_memory_max: int = DEFAULT_MEMORY_MAX,
        login_url: str = "/login",
        csrf_exempt: Sequence[str] = (),
        content_type_options: str | None = "nosniff",
        frame_options: str | None = "SAMEORIGIN",
        referrer_policy: str | None = "same-origin",
        hsts: int | None = None,
        cors_origins: Sequence[str] = (),
        cors_methods: Sequence[str] = (),
        cors_headers: Sequence[str] = (),
        cors_expose_headers: Sequence[str] = (),
        cors_credentials: bool = False,
        cors_max_age: int | None = None,
        openapi: bool = False,
        compress: bool = True,
        compress_min_size: int = 1024,
        static_cache_control: str | None = "no-cache",
    ) -> None:
        if not os.path.isdir(root):
            raise NotADirectoryError(f"site directory {os.fspath(root)!r} does not exist")
        self.root = os.path.realpath(os.fspath(root))
        self.dev = dev
        self.form_limits = form_limits
        if page_timeout is not None and not page_timeout > 0:
            raise ValueError(
                f"page_timeout must be a positive number of seconds, got {page_timeout!r}"
            )
        self.page_timeout = page_timeout
        """Seconds a page (with top-level ``await``) or an async service may run; None: no limit."""
        unawaited.install()
        self.key_source = signing.use_site_key(self.root, secret_key, dev=dev)
        """Where the secret key came from (a setting, the environment, ``data/secret_key``)."""
        self.sessions = SessionStore(session_idle, session_lifetime, session_memory_max)
        if not login_url.startswith("/"):
            raise ValueError(f"login_url is a path on this site, got {login_url!r}")
        self.login_url = login_url
        self.conn_login_url = None if login_url == Conn.login_url else login_url
        """``login_url`` when each conn must be told it (None: conn's default already)."""
        self.usual_extra_headers: dict[tuple[str, str], list[tuple[str, str]]] = {}
        """The security headers an answer lacks whose only field is this ``Content-Type``
        one, found the first time the site answers with it (:func:`headers.missing`)."""
        self.csrf_exempt = tuple(csrf_exempt)
        """URL patterns whose POSTs need no CSRF token (``"/api/*"``)."""
        self.security_headers = headers.security_headers(
            content_type_options, frame_options, referrer_policy
        )
        """``(name, value, html_only)`` of each security header an answer gets when it does
        not set it itself (:mod:`pyweb.app.guards.headers`)."""
        self.cors = (
            CORS(
                cors_origins,
                methods=cors_methods or None,
                headers=cors_headers,
                expose=cors_expose_headers,
                credentials=cors_credentials,
                max_age=cors_max_age,
            )
            if cors_origins
            else None
        )
        """The site's CORS policy (``cors_*`` settings; None: no origin allowed), for every
        route but a service with its own (docs/cors.md)."""
        self.openapi = openapi
        """Answer ``/_pyweb/openapi.json`` and ``/_pyweb/openapi`` in production too."""
        self._hsts = headers.hsts_header(hsts)
        """``Strict-Transport-Security``, sent over https only (RFC 6797 §7.2: a browser
        ignores it over http, and a site reached over http must not claim https)."""
        # Made once, not per answer (docs/performance.md).
        self.html_extra_headers = [(n, v) for n, v, _html_only in self.security_headers]
        """The security headers of an HTML answer that sets none of them itself."""
        self.other_extra_headers = [  # the same tuple objects: see html_extra_last below
            pair
            for pair, (_n, _v, html_only) in zip(
                self.html_extra_headers, self.security_headers, strict=True
            )
            if not html_only
        ]
        """The security headers of any other answer that sets none of them itself."""
        self.html_extra_last = self.html_extra_headers[-1] if self.html_extra_headers else None
        """The last field of :attr:`html_extra_headers` (None: no such header), the very
        object: an answer that ends with it has been secured already and is not looked at
        again (the page path secures in place)."""
        self.other_extra_last = self.other_extra_headers[-1] if self.other_extra_headers else None
        """The same for :attr:`other_extra_headers`."""
        if not isinstance(compress_min_size, int) or compress_min_size < 0:
            raise ValueError(
                f"compress_min_size is a number of bytes, 0 or more, got {compress_min_size!r}"
            )
        self.compress_min_size = compress_min_size
        """Answers smaller than this are sent as they are (:mod:`pyweb.app.guards.compress`)."""
        self.compress_at = compress_min_size if compress else sys.maxsize
        """``compress_min_size`` with compression on, larger than any body with it off: a
        shorter body is sent as it is without a further look."""
        self.file_codings = FileCodings()
        """Static files compressed on the fly, kept until they change."""
        # A file's answer ends with these lists' own fields, so _secure passes it as it is.
        self.static = StaticFiles(
            self.root,
            hidden=_hidden,
            dev=dev,
            extra_headers=(self.html_extra_headers, self.other_extra_headers),
            precompressed=compress,
            cache_control=static_cache_control,
        )
        self._display_base = os.path.dirname(self.root)
        self.templates: Templates | None = None
        pages.install_library_finder(self.root)
        self.scripts: dict[str, pages.Script] = {}
        """URL name (``"guess"``, ``"sub/page"``) → compiled script."""
        self.services: dict[str, Service] = {}
        """URL path → service."""
        self.websockets: dict[str, WebSocketRoute] = {}
        """URL path → WebSocket handler (``@pyweb.websocket``)."""
        self.service_routes = Router()
        """Services whose path has parameters (``/todo/{id}``)."""
        self.script_routes = Router()
        """Scripts whose name has parameters (``todo/[id]``), by URL name."""
        self.traps: list[Trap] = []
        """Traps in registration order."""
        self._known: dict[str, _Page] = {}
        """URL path (as sent) → the script or service that answered it (``_remember``), or
        ``_FILE``: a static file did (``_remember_file``)."""
        self.problems: list[Problem] = []
        self._broken: dict[str, Problem] = {}  # script path -> its syntax error (dev)
        self._syntax_errors: dict[str, SyntaxError] = {}  # the same, as raised (dev page)
        self._stamps: dict[str, int] = {}  # watched path -> mtime_ns (dev)
        self.no_script_cache = no_script_cache
        """Recompile the script on every request (SMLserver Table 1, column five)."""
        self.regions: SiteRegions | None = None
        """Module snapshots and allocation counts (:mod:`pyweb.regions`); before loading,
        so library modules imported by service modules are snapshotted too."""
        if regions or exec_library or profile_alloc:
            self.regions = SiteRegions(
                self.root,
                dev=dev,
                strict=strict_regions,
                exec_library=exec_library,
                profile_alloc=profile_alloc,
            )
        self._load()
        if self.regions is not None:
            self.regions.scan()
        if self.problems and not dev:
            raise SiteError(self.root, self.problems)

    SETTINGS = (
        "dev",
        "strict_regions",
        "no_script_cache",
        "exec_library",
        "profile_alloc",
        "page_timeout",
        "secret_key",
        "session_idle",
        "session_lifetime",
        "session_memory_max",
        "login_url",
        "csrf_exempt",
        "content_type_options",
        "frame_options",
        "referrer_policy",
        "hsts",
        "cors_origins",
        "cors_methods",
        "cors_headers",
        "cors_expose_headers",
        "cors_credentials",
        "cors_max_age",
        "openapi",
        "compress",
        "compress_min_size",
        "static_cache_control",
    )
    """The server settings (``ServerConfig`` fields, ``pyweb.toml`` keys) a Site takes."""

    @classmethod
    def from_settings(cls, root: str | os.PathLike[str], config: Any) -> Site:
        """The Site for ``root`` with the settings of ``config`` (a ``ServerConfig``, or
        anything with those attributes): what ``pyweb serve`` and its reload build."""
        options = {name: getattr(config, name) for name in cls.SETTINGS if hasattr(config, name)}
        if not options.get("secret_key"):
            options["secret_key"] = None  # no setting: PYWEB_SECRET_KEY, or the dev key
        return cls(root, **options)

    def __call__(self, ctx: Context) -> Awaitable[Response]:
        """``await site(ctx)``: the response to one request, with the security headers. A
        path whose script or service was found before (``_remember``) goes straight to its
        page, whose coroutine is handed back as it is (one coroutine less per request);
        anything else is routed (development mode routes every request: files change)."""
        if self._hsts is not None and ctx.scheme == "https":  # (a trusted proxy's too)
            return self._with_hsts(ctx)
        if not self.dev:  # (_dispatch's first step, without its call: the usual request)
            page = self._known.get(ctx.request.path)
            if page is not None and page is not _FILE:  # (the methods guard checks the method)
                return self.run_in_guards(ctx, page)
        return self._dispatch(ctx)

    async def _with_hsts(self, ctx: Context) -> Response:
        assert self._hsts is not None
        return headers.hsts(self._hsts, await self._dispatch(ctx))

    def _dispatch(self, ctx: Context) -> Awaitable[Response]:
        if not self.dev:
            page = self._known.get(ctx.request.path)
            if page is not None and page is not _FILE:  # (the methods guard checks the method)
                return self.run_in_guards(ctx, page)
            if page is _FILE and ctx.request.method in ("GET", "HEAD"):
                return self._file(ctx)
        return self._routed(ctx)

    async def _file(self, ctx: Context) -> Response:
        """A path a static file answered before (``_remember_file``): the file again, through
        the guards, without the routing that chose it (no trap covers it: it would not have
        been remembered). The file gone, the routing resumes."""
        response = await self._answer(ctx, self._static, ctx.request.path, [])
        if response.status < 400:
            return response
        return await self._routed(ctx)

    async def _routed(self, ctx: Context) -> Response:
        return headers.after(self, await self._route(ctx))

    def __repr__(self) -> str:
        return f"Site({self.root!r}, dev={self.dev})"


def check_site(root: str | os.PathLike[str]) -> tuple[Site, list[Problem]]:
    """Load ``root`` as ``pyweb check`` does (every file compiled, services imported,
    templates parsed) and return the site and every problem found."""
    site = Site(root, dev=True)
    return site, list(site.problems)
