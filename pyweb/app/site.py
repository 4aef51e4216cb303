"""Site: the handler of ``pyweb serve DIR``: route each URL to a service, a script, a template
or a file, and run pages with their ``conn`` (SMLserver §2.1, Hop §2.1 and §2.4's "Response"
stage).

Routing, first match wins (docs/pages.md and docs/routing.md have the full story):

1. a **service** bound to exactly this path (``@service("/mul")``);
2. a **script**: ``/NAME`` or ``/NAME.py`` runs ``NAME.py`` (``/`` and ``/dir/`` run an
   ``index.py`` if there is one);
3. a **template page**: ``/NAME`` renders ``templates/NAME.html``;
4. an existing **static file** (sendfile, validators, ranges: :mod:`pyweb.app.static`),
   except the site's source: ``.py`` files, ``_library`` names, ``templates/`` and
   ``__pycache__`` answer 404 so code and templates are never sent as text;
5. a route with **path parameters** (``@service("/todo/{id}")``, ``pages/todo/[id].py``:
   :mod:`pyweb.app.routes`), the most specific first.

Before the page, service or file, the **traps** whose pattern matches the path run
(:mod:`pyweb.app.traps`, SMLserver's ``registerTrap``). Before both, a POST, PUT, PATCH or
DELETE must carry the session's CSRF token (:mod:`pyweb.app.csrf`). The page sees
``conn.session`` (:mod:`pyweb.app.sessions`), saved after it ran; every response gets the
security headers (``X-Content-Type-Options``, and on HTML ``X-Frame-Options`` and
``Referrer-Policy``; ``Strict-Transport-Security`` when ``hsts`` is set).

Loading follows SMLserver's compile step. In production the site is loaded once: every
script compiled, every service module imported, every template parsed; any error stops
the server from starting (:class:`SiteError`, listing them all, like ``pyweb check``).
In development mode (``dev=True``) errors are kept and shown on the pages they break, and
every request first looks for changed files: a changed script is recompiled, a changed
library or service module is re-imported, a new file is found.

Running a page (:meth:`Site.run_page`): read the body if it is a form, build the
:class:`~pyweb.app.conn.Conn`, make it the current form for :mod:`pyweb.forms`, run, and
turn what happened into one response: the page's own, a 400 listing every bad form
variable, or an error page (with the traceback in development mode): 500 for a bug in the
page, or the status an exception names in an ``http_status`` attribute (the database layer's
"unavailable" error says 503).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import inspect
import json
import logging
import os
import sys
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from types import CoroutineType
from typing import Any
from urllib.parse import quote, unquote

from markupsafe import Markup

from pyweb import forms, runtime, signing
from pyweb.handler import Context
from pyweb.protocol.errorpage import SENTENCES, error_response, reason
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.response import Response
from pyweb.regions import SiteRegions
from pyweb.regions import _with_banner as with_banner

from . import blocking, csrf, pages, unawaited
from .conn import Conn, PageExit, RequestError, _current, parse_cookies
from .formdata import FormDataError, FormLimits, MultiDict, form_from, is_form_body, read_form
from .routes import Pattern, Router, script_pattern
from .services import JSONFieldErrors, Service
from .sessions import COOKIE_NAME, DEFAULT_IDLE, SessionStore
from .static import StaticFiles
from .stats import stats_json, stats_page
from .templates import Templates
from .traps import Trap, canonical
from .uploads import close_all
from .websockets import WebSocketRoute

__all__ = ["Site", "SiteError", "Problem", "check_site"]

_site_log = logging.getLogger("pyweb.site")
_EMPTY = MultiDict()
CONTROL_EXPECTED = "text without control characters (NUL, ESC...; tab and newlines are fine)"
_DEFAULT_LIMITS = FormLimits()
_TOO_LONG = "The page took too long to answer, so the server stopped it."

_KNOWN_PATHS = 1024  # paths whose script or service is remembered (Site._remember)

PAGE_TIMEOUT = 30.0
"""Seconds a page or service may run before it is stopped with a 503 (``--page-timeout``)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One error found while loading a site: where, and what."""

    path: str
    """The file, relative to the site directory's parent (``pages/guess.py``)."""
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class SiteError(Exception):
    """A site that cannot be served: its :attr:`problems`, every one of them."""

    def __init__(self, root: str, problems: list[Problem]) -> None:
        self.root = root
        self.problems = problems
        listing = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{len(problems)} error(s) in site {root}:\n{listing}")


def _hidden(decoded: str) -> bool:
    """Source files of the site, never served as static files: a segment that starts
    with ``_``, a last one that ends in ``.py``, ``.pyc`` or ``.sql``, and what is under
    ``templates/`` (source) and ``data/`` (the site's SQLite database, pyweb.db's default).
    Tested on the whole string where it can be: this runs for every static file."""
    if decoded.startswith("_") or "/_" in decoded or decoded.endswith((".py", ".pyc", ".sql")):
        return True
    segments = decoded.split("/", 2)
    return len(segments) > 1 and segments[1] in ("templates", "data")


class Site:
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
        login_url: str = "/login",
        csrf_exempt: Sequence[str] = (),
        content_type_options: str | None = "nosniff",
        frame_options: str | None = "SAMEORIGIN",
        referrer_policy: str | None = "same-origin",
        hsts: int | None = None,
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
        self.sessions = SessionStore(session_idle)
        if not login_url.startswith("/"):
            raise ValueError(f"login_url is a path on this site, got {login_url!r}")
        self.login_url = login_url
        self.csrf_exempt = tuple(csrf_exempt)
        """URL patterns whose POSTs need no CSRF token (``"/api/*"``)."""
        self._security_headers = _security_headers(content_type_options, frame_options, referrer_policy)
        self._hsts = _hsts_header(hsts)
        """``Strict-Transport-Security``, sent over https only (RFC 6797 §7.2: a browser
        ignores it over http, and a site reached over http must not claim https)."""
        # The headers a page's answer gets when it sets none of them itself, made once:
        # every HTML answer gets _html_extra, anything else _other_extra (docs/performance.md).
        self._html_extra = [(n, v) for n, v, _html_only in self._security_headers]
        self._other_extra = [  # the same tuple objects: see _html_last below
            pair
            for pair, (_n, _v, html_only) in zip(self._html_extra, self._security_headers, strict=True)
            if not html_only
        ]
        # A response whose last header is one of these very objects has been through
        # _secure's lists: it is not looked at again (the page path secures in place).
        self._html_last = self._html_extra[-1] if self._html_extra else None
        self._other_last = self._other_extra[-1] if self._other_extra else None
        # A file's answer ends with these lists' own fields, so _secure passes it as it is.
        self.static = StaticFiles(
            self.root, hidden=_hidden, dev=dev, extra_headers=(self._html_extra, self._other_extra)
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
        "login_url",
        "csrf_exempt",
        "content_type_options",
        "frame_options",
        "referrer_policy",
        "hsts",
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

    # ---- loading (the compile step) ---------------------------------------------------

    def display(self, path: str) -> str:
        return os.path.relpath(path, self._display_base)

    def _problem(self, path: str, line: int, message: str) -> Problem:
        problem = Problem(self.display(path), line, message)
        self.problems.append(problem)
        return problem

    def _walk(self) -> list[str]:
        found: list[str] = []
        for directory, dirs, files in os.walk(self.root):
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and d != "__pycache__"
                and not (directory == self.root and d == "templates")
            )
            # Editor lock and autosave files (.#guest.py, #guest.py#) and hidden files are not
            # pages: loading them would run an editor's half-saved copy under a URL.
            found.extend(
                os.path.join(directory, f)
                for f in sorted(files)
                if f.endswith(".py") and not f.startswith((".", "#"))
            )
        return found

    def _load(self) -> None:
        """Scan the site: compile scripts and library, import service modules, parse templates."""
        self.problems = []
        self._broken = {}
        self._syntax_errors = {}
        self.scripts = {}
        self.services = {}
        self.websockets = {}
        self.service_routes = Router()
        self.script_routes = Router()
        self.traps = []
        self._known = {}
        template_dir = os.path.join(self.root, "templates")
        if not os.path.isdir(template_dir):
            self.templates = None
        elif self.templates is None:
            self.templates = Templates(template_dir, dev=self.dev)
        self._forget_foreign_library()
        for path in self._walk():
            self._load_file(path)
        if self.templates is not None:
            for path, line, message in self.templates.check():
                self._problem(path, line, message)
        for name, script in self.scripts.items():
            svc = self.services.get("/" + name)
            if svc is not None:
                self._problem(script.path, 1, f"{svc!r} has the same URL as this script")
            try:
                pattern = script_pattern(name)
            except ValueError as exc:
                self._problem(script.path, 1, str(exc))
                continue
            if pattern is not None:
                self.script_routes.add(pattern, name)  # the URL name: dev mode recompiles
        for first, second in self.script_routes.ambiguous(self.service_routes):
            self._problem(
                self.root,
                1,
                f"ambiguous routes: {first.text} and {second.text} match the same paths; "
                f"rename one",
            )
        if self.dev:
            self._stamps = self._take_stamps()

    def _load_file(self, path: str) -> None:
        try:
            with open(path, "rb") as f:
                source = f.read()
        except OSError as err:
            self._problem(path, 1, f"cannot read: {err}")
            return
        if pages.is_library_path(self.root, path):
            try:  # compiled only: importing is the first script's job (it runs init code)
                compile(source, path, "exec", dont_inherit=True)
            except SyntaxError as err:
                self._problem(path, err.lineno or 1, f"SyntaxError: {err.msg}")
            name = os.path.relpath(path, self.root).split(os.sep)[0].removesuffix(".py")
            if name in sys.stdlib_module_names:
                self._problem(
                    path,
                    1,
                    f"library module {name!r} has the name of a standard module, "
                    f"which wins; rename it",
                )
            return
        try:
            tree = compile(source, path, "exec", flags=ast.PyCF_ONLY_AST | pages._FLAGS)
        except SyntaxError as err:
            problem = self._problem(path, err.lineno or 1, f"SyntaxError: {err.msg}")
            self._broken[path] = problem
            self._syntax_errors[path] = err.with_traceback(None)  # the compile step is not theirs
            return
        if pages.defines_services(tree):
            self._import_services(path)
            return
        try:
            script = pages.compile_script(path, self.display(path), source)
        except SyntaxError as err:  # e.g. 'return' outside function: found by compile
            self._broken[path] = self._problem(path, err.lineno or 1, f"SyntaxError: {err.msg}")
            self._syntax_errors[path] = err.with_traceback(None)  # the compile step is not theirs
            return
        self.scripts[self._url_name(path)] = script

    def _url_name(self, path: str) -> str:
        return os.path.relpath(path, self.root).removesuffix(".py").replace(os.sep, "/")

    def _import_services(self, path: str) -> None:
        module_name = "pyweb_site_services." + self._url_name(path).replace("/", ".")
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[module_name]
            line = 1
            for frame in traceback.extract_tb(exc.__traceback__):
                if frame.filename.startswith(self.root + os.sep):
                    line = frame.lineno or 1
            if isinstance(exc, SyntaxError) and exc.filename == path:
                line = exc.lineno or 1
            self._problem(path, line, f"{type(exc).__name__}: {exc}")
            return
        for value in vars(module).values():
            if isinstance(value, WebSocketRoute):
                other = self.websockets.get(value.path) or self.services.get(value.path)
                if other is not None and other is not value:
                    self._problem(path, 1, f"{value!r} and {other!r} have the same URL")
                    continue
                self.websockets[value.path] = value
            if isinstance(value, Trap):
                self.traps.append(value)
            if isinstance(value, Service) and value.pattern is not None:
                self.service_routes.add(value.pattern, value)
            elif isinstance(value, Service):
                other = self.services.get(value.path)
                if other is not None and other is not value:
                    self._problem(path, 1, f"{value!r} and {other!r} have the same URL")
                    continue
                self.services[value.path] = value

    def _forget_foreign_library(self) -> None:
        """Another site loaded earlier in this process may have library modules with the
        same names; drop them so this site's are imported (tests serve many sites)."""
        names = set()
        try:
            entries = os.listdir(self.root)
        except OSError:
            return
        for entry in entries:
            if entry.startswith("_") and entry.endswith(".py"):
                names.add(entry[:-3])
            elif os.path.isfile(os.path.join(self.root, entry, "__init__.py")):
                names.add(entry)
        for name in list(sys.modules):
            top = name.split(".", 1)[0]
            if top in names:
                file = getattr(sys.modules[name], "__file__", None) or ""
                if not file.startswith(self.root + os.sep):
                    del sys.modules[name]

    # ---- development mode: notice changed files ----------------------------------------

    def _take_stamps(self) -> dict[str, int]:
        """mtime of every directory, service module and imported library module."""
        watched: list[str] = []
        for directory, dirs, _files in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            watched.append(directory)
        watched.extend(
            s.func.__code__.co_filename
            for s in self.services.values()
            if hasattr(s.func, "__code__")
        )
        watched.extend(m.__file__ for m in pages.library_modules(self.root) if m.__file__)
        stamps = {}
        for path in watched:
            try:
                stamps[path] = os.stat(path).st_mtime_ns
            except OSError:
                stamps[path] = -1
        return stamps

    def refresh(self) -> bool:
        """Reload the site if any watched file changed (dev); True if it reloaded."""
        for path, stamp in self._stamps.items():
            try:
                now = os.stat(path).st_mtime_ns
            except OSError:
                now = -1
            if now != stamp:
                break
        else:
            # Library modules imported since (by a script) are watched from now on.
            for module in pages.library_modules(self.root):
                file = module.__file__
                if file and file not in self._stamps:
                    try:
                        self._stamps[file] = os.stat(file).st_mtime_ns
                    except OSError:
                        self._stamps[file] = -1
            return False
        pages.forget_library(self.root)
        self._load()
        return True

    def _dev_script(self, name: str) -> pages.Script | Problem | None:
        """Find ``NAME.py`` now, recompiling it if it changed since it was compiled."""
        if not name or any(
            not seg or seg.startswith((".", "_")) or seg == "__pycache__" for seg in name.split("/")
        ):
            return None
        path = os.path.join(self.root, *name.split("/")) + ".py"
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        script = self.scripts.get(name)
        if script is not None and script.version == (st.st_mtime_ns, st.st_size):
            return script
        if pages.is_library_path(self.root, path):
            return None
        self.problems = [p for p in self.problems if p.path != self.display(path)]
        self._broken.pop(path, None)
        self._syntax_errors.pop(path, None)
        self.scripts.pop(name, None)
        self._load_file(path)
        return self.scripts.get(name) or self._broken.get(path)

    # ---- error pages -------------------------------------------------------------------

    def error_page(
        self,
        status: int,
        *,
        detail: str = "",
        exc: BaseException | None = None,
        offending: bytes = b"",
        sentence: str | None = None,
        body_html: str = "",
        public_detail: str = "",
        title: str | None = None,
    ) -> Response:
        """The page for an error ``status``: the site's own template if it has one
        (``templates/_404.html``, ..., or ``templates/_error.html`` for any status), else
        pyweb's styled page. In development mode a page with a traceback (``exc``) is always
        pyweb's, so the traceback shows. ``public_detail`` is detail fit for production (the
        list of bad form fields); ``detail`` is shown in development mode only. The server
        calls this too, for the errors it answers itself (400, 408, 413, 414, 431, 505)."""
        if self.templates is not None and not (self.dev and exc is not None):
            override = self._override(
                status, detail if self.dev else public_detail, sentence, title, body_html
            )
            if override is not None:
                return override
        return error_response(
            status,
            dev=self.dev,
            detail=detail,
            exc=exc,
            offending=offending,
            sentence=sentence,
            own=self._own,
            display=self.display,
            body_html=body_html,
            title=title,
        )

    def _form_errors_page(self, errors: list[Any]) -> Response:
        """The ``wrap_fail`` page: one 400 listing every bad form variable (in production
        too: the values are the visitor's own, and the list is what they need to fix)."""
        bad = forms.FormErrors(list(errors))
        listing = bad.describe()
        return self.error_page(
            400,
            sentence=bad.intro(),
            title="Bad form input",
            body_html=bad.table_html(),
            detail=listing,
            public_detail=listing,
        )

    def _own(self, filename: str) -> bool:
        """A file of the site itself (its frames come first in a traceback)."""
        return filename.startswith(self.root + os.sep)

    def _override(
        self, status: int, detail: str, sentence: str | None, title: str | None, body_html: str
    ) -> Response | None:
        templates = self.templates
        assert templates is not None
        name = templates.error_template(status)
        if name is None:
            return None
        title = title or reason(status)
        try:
            text = templates.env.get_template(name).render(
                status=status,
                title=title,
                detail=detail or sentence or SENTENCES.get(status, ""),
                sentence=sentence or SENTENCES.get(status, ""),
                dev=self.dev,
                details_html=Markup(body_html),
            )
        except Exception as exc:  # a broken error template must not hide the error
            _site_log.warning("templates/%s failed, pyweb's page used: %s", name, exc)
            return None
        return Response(
            status,
            [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")],
            text.encode("utf-8"),
        )

    # ---- serving ------------------------------------------------------------------------

    def __call__(self, ctx: Context) -> Awaitable[Response]:
        """``await site(ctx)``: the response to one request, with the security headers. A
        path whose script or service was found before (``_remember``) goes straight to its
        page, whose coroutine is handed back as it is (one coroutine less per request);
        anything else is routed (development mode routes every request: files change)."""
        if self._hsts is not None and ctx.scheme == "https":  # (a trusted proxy's too)
            return self._with_hsts(ctx)
        return self._dispatch(ctx)

    async def _with_hsts(self, ctx: Context) -> Response:
        response = await self._dispatch(ctx)
        hsts = self._hsts
        assert hsts is not None
        if any(name.lower() == "strict-transport-security" for name, _ in response.headers):
            return response
        return dataclasses.replace(response, headers=[*response.headers, hsts])

    def _dispatch(self, ctx: Context) -> Awaitable[Response]:
        if not self.dev:
            page = self._known.get(ctx.request.path)
            if page is not None and (page.methods is None or ctx.request.method in page.methods):
                if page is _FILE:
                    return self._file(ctx)
                return self._run_page(ctx, page)
        return self._routed(ctx)

    async def _file(self, ctx: Context) -> Response:
        """A path a static file answered before (``_remember_file``): the file again,
        without the routing that chose it. Anything else (another method, the file gone,
        a conditional GET's 304 is fine) goes through the routing as usual."""
        response = self.static.respond(ctx.request)  # (a GET or a HEAD: _FILE.methods)
        if response is not None and response.status < 400:
            return self._secure(response)  # (it has them: StaticFiles added them)
        return self._secure(await self._route(ctx))

    async def _routed(self, ctx: Context) -> Response:
        return self._secure(await self._route(ctx))

    def _secure(self, response: Response) -> Response:
        """The response with the security headers it does not set itself. A new Response:
        a page may return one object built once, which must not change. (A response that
        conn built for this request has them already: :meth:`_page_outcome`.)"""
        headers = response.headers
        if headers:
            last = headers[-1]
            if last is self._html_last or last is self._other_last:
                return response  # the site's own header objects: secured already
        extra = self._missing(headers)
        if not extra:
            return response
        if type(response) is not Response:  # a WebSocketUpgrade stays one
            return dataclasses.replace(response, headers=[*headers, *extra])
        return Response(response.status, [*headers, *extra], response.body)

    def _missing(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The security headers ``headers`` lacks."""
        if len(headers) == 1 and headers[0][0] == "Content-Type":
            # The usual answer (conn.return_, a service's value) has its type and nothing
            # else, so it lacks every security header: the lists made once do.
            return self._html_extra if headers[0][1].startswith("text/html") else self._other_extra
        return self._missing_headers(headers)

    def _missing_headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The security headers that ``headers`` lacks (those for HTML only on HTML)."""
        names = {name.lower() for name, _ in headers}
        html = False
        for name, value in headers:
            if name.lower() == "content-type":
                html = value.startswith("text/html")
                break
        return [
            (name, value)
            for name, value, html_only in self._security_headers
            if (html or not html_only) and name.lower() not in names
        ]

    async def _route(self, ctx: Context) -> Response:
        request = ctx.request
        if self.dev and self.refresh() and self.regions is not None:
            self.regions.reload()
        path = request.path
        decoded = unquote(path) if "%" in path else path

        if not decoded.startswith("/"):  # "OPTIONS *": no page answers the server itself
            return self._static(ctx)
        if decoded.startswith("/_pyweb/stats") and self.regions is not None:
            if self.dev or self.regions.profile_alloc or self.regions.alloc_message:
                if decoded == "/_pyweb/stats":
                    return stats_page(self.regions)
                if decoded == "/_pyweb/stats.json":
                    return stats_json(self.regions)
        traps = self._traps_for(decoded) if self.traps else []
        route = self.websockets.get(decoded)
        if route is not None:
            return await self._upgrade(ctx, route, traps)
        svc = self.services.get(decoded)
        if svc is not None:
            page = _service_page(svc, traps)
            self._remember(path, page)
            return await self._run_service(ctx, page)

        name = decoded[1:]
        alias = name.endswith(".py")
        if alias:
            name = name[:-3]
        elif name == "" or name.endswith("/"):
            name += "index"
        script: pages.Script | Problem | None
        script = self._dev_script(name) if self.dev else self.scripts.get(name)
        if isinstance(script, Problem):
            path = os.path.join(self.root, *name.split("/")) + ".py"
            return self.error_page(
                500,
                detail=f"the page does not compile: {script}",
                exc=self._syntax_errors.get(path),
            )
        if script is not None and "[" in name:
            script = None  # a [param] file is reached through its pattern only
        if script is not None and alias:
            return self._canonical_redirect(ctx, name)
        if script is not None:
            if not self.no_script_cache:  # (that mode compiles the script on every request)
                self._remember(path, _script_page(script, traps))
            return await self._run_script(ctx, script, None, traps)

        if self.templates is not None and "." not in name.rsplit("/", 1)[-1]:
            template = self.templates.page_name(name)
            if template is not None:

                async def render(conn: Conn, template: str = template) -> None:
                    conn.return_template(template)

                return await self.run_page(
                    ctx,
                    render,
                    f"templates/{template}",
                    os.path.join(self.templates.directory, template),
                    False,
                    traps=traps,
                )

        if _hidden(decoded):
            return self._not_found(request.path)
        if self.service_routes or self.script_routes:
            routed = await self._run_pattern(ctx, decoded, name, traps)
            if routed is not None:
                return routed
        if traps:
            return await self._trapped_static(ctx, traps)
        response = self._static(ctx)
        if response.status < 400 and not self.dev:
            self._remember_file(path, name)
        return response

    def _traps_for(self, decoded: str) -> list[Trap]:
        """The traps whose pattern covers ``decoded``, in any of its spellings."""
        canon = canonical(decoded)
        return [t for t in self.traps if t.covers(canon)]

    def _canonical_redirect(self, ctx: Context, name: str) -> Response:
        """One URL per page: ``/NAME.py`` (however spelled) is answered with a 308 to
        ``/NAME``, query kept (308 keeps the method and body, RFC 9110 §15.4.9), so the
        page, its traps and its links have one address."""
        target = "/" + (name[: -len("index")] if name == "index" or name.endswith("/index") else name)
        location = quote(target, safe="/") + ("?" + ctx.request.query if ctx.request.query else "")
        return Response(
            308,
            [("Location", location), ("Content-Type", "text/plain; charset=utf-8")],
            f"This page's address is {location}\n".encode(),
        )

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
        assert page.methods is not None
        if ctx.request.method not in page.methods:
            return _ready(self._not_allowed(ctx.request.method, ", ".join(page.methods)))
        return self._run_page(ctx, page, params)

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
                    self.error_page(500, detail=f"the page does not compile: {err}", exc=err)
                )
        return self._run_page(ctx, _script_page(script, traps), params)

    async def _run_pattern(
        self, ctx: Context, decoded: str, name: str, traps: list[Trap]
    ) -> Response | None:
        """Serve a path through a route with parameters, if one matches (the most specific
        of a service's and a script's; an existing static file has won already)."""
        probe = self.static.respond(dataclasses.replace(ctx.request, method="HEAD"))
        if probe is not None and probe.status < 400:
            return None
        by_service = self.service_routes.match(decoded) if self.service_routes else None
        by_script = self.script_routes.match("/" + name) if self.script_routes else None
        if by_service is not None and (by_script is None or _wins(by_service[0], by_script[0])):
            return await self._run_service(ctx, _service_page(by_service[1], traps), by_service[2])
        if by_script is not None:
            name = by_script[1]
            script = self._dev_script(name) if self.dev else self.scripts.get(name)
            if isinstance(script, Problem):
                path = os.path.join(self.root, *name.split("/")) + ".py"
                return self.error_page(
                    500,
                    detail=f"the page does not compile: {script}",
                    exc=self._syntax_errors.get(path),
                )
            if script is not None:
                return await self._run_script(ctx, script, by_script[2], traps)
        return None

    def _trapped_static(self, ctx: Context, traps: list[Trap]) -> Awaitable[Response]:
        """A static file behind traps: the traps run first, as for a page."""

        async def serve_file(conn: Conn) -> None:
            conn.response = self._static(ctx)

        return self.run_page(
            ctx, serve_file, f"file {ctx.request.path}", None, False, traps=traps, check_csrf=False
        )

    def _static(self, ctx: Context) -> Response:
        request = ctx.request
        method = request.method
        if method == "GET" or method == "HEAD":
            response = self.static.respond(request)
            if response is not None:
                if response.status in (400, 403, 404) and self.templates is not None:
                    if self.templates.error_template(response.status):  # the site's own page
                        return self.error_page(response.status)
                return response
            return self._not_found(request.path)
        # Would a GET find something here? Then the resource exists and only the method is
        # wrong (405, RFC 9110 §15.5.6, with Allow); otherwise there is nothing here (404).
        probe = self.static.respond(dataclasses.replace(request, method="GET"))
        if probe is not None and probe.status < 400:
            return self._not_allowed(method, "GET, HEAD")
        if probe is not None:  # the path itself is bad (400) or refused (404)
            return probe
        return self._not_found(request.path)

    def _urlencoded_too_large(self, request: Any, content_type: str | None) -> Response | None:
        """A 413 for an url-encoded form body over ``FormLimits.max_urlencoded``, decided
        from its Content-Length before it is read (a chunked one is refused by the server's
        ``max_body`` and the body budget)."""
        limit = self.form_limits.max_urlencoded
        length = request.content_length
        if length is None or length <= limit:
            return None
        if (content_type or "").split(";", 1)[0].strip().lower() != (
            "application/x-www-form-urlencoded"
        ):
            return None
        # (its body is not read: the server closes the connection after this reply)
        return error_response(
            413,
            dev=self.dev,
            detail=f"an url-encoded form body of {length} bytes; at most {limit} are accepted "
            "(FormLimits.max_urlencoded; files go in multipart/form-data)",
        )

    def _not_found(self, path: str) -> Response:
        detail = f"no page, service, template or file for {path}"
        if self.dev and self.problems:
            detail += "; the site has errors: " + "; ".join(str(p) for p in self.problems)
        return self.error_page(404, detail=detail)

    def _not_allowed(self, method: str, allow: str) -> Response:
        page = self.error_page(405, detail=f"{method} is not allowed here")
        page.headers.append(("Allow", allow))
        return page

    def run_page(
        self,
        ctx: Context,
        run: Callable[[Conn], Awaitable[None]],
        page: str,
        filename: str | None = None,
        timed: bool = True,
        *,
        params: dict[str, str] | None = None,
        traps: Sequence[Trap] = (),
        check_csrf: bool = True,
    ) -> Awaitable[Response]:
        """Run one page (script, service or template) for one request: see the module doc.
        With regions on, the page runs inside one (:meth:`pyweb.regions.SiteRegions.enter`
        and ``leave``, in ``_run_page``): library state is checked and restored after it,
        its allocations counted.
        ``await site.run_page(...)``: it hands back the coroutine that does the work rather
        than being a coroutine itself, one object less on every request (Hop §3.1)."""
        spec = _Page(run, page, filename, timed, tuple(traps), check_csrf)
        return self._run_page(ctx, spec, params)

    async def _run_page(
        self, ctx: Context, page: _Page, params: dict[str, str] | None = None
    ) -> Response:
        """Run ``page`` for one request: its ``conn`` (:meth:`_prepare`), then the page with
        its guards: the watchdog finds this frame on the loop's stack (to name a page that
        holds the loop); ``current_conn()`` and the forms getters find conn, its form and
        its form-error list (one context variable); a coroutine the page drops unawaited
        is noted on conn (pyweb.app.unawaited); the page runs in a region (pyweb.regions)."""
        request = ctx.request
        cookies = request.header("cookie")  # looked up once: _prepare and conn.cookies use it
        if (
            request.query  # a form to read
            or params
            or request.chunked
            or request.content_length
            or cookies is not None  # a session to load
            or (page.check_csrf and request.method not in csrf.SAFE_METHODS)  # a token to check
        ):
            conn = await self._prepare(ctx, page, params, cookies)
            if not isinstance(conn, Conn):
                return self._secure(conn)  # the form's 400 or 413, CSRF's 403: no page runs
        else:  # the usual GET: nothing to read, load or check before the page
            conn = Conn(ctx, _EMPTY, _EMPTY, page.name, page.filename, self.root, self.templates)
            if self.login_url != Conn.login_url:  # (as _conn: one call less per request)
                conn.login_url = self.login_url
        conn.watchdog = blocking.current()  # it finds conn on the stack (blocking.page_codes)
        conn_token = _current.set(conn)
        regions = self.regions
        slot = regions.enter() if regions is not None else None
        try:
            response: Response
            if slot is None:
                outcome = self._page_outcome(ctx, conn, page)
                if type(outcome) is CoroutineType:  # a page that awaits (or a session)
                    response = await outcome
                else:
                    response = outcome  # type: ignore[assignment]
            else:  # --profile-alloc: the page's own steps are counted (any loop)
                response = await regions.counted(self._page_counted(ctx, conn, page), slot)  # type: ignore[union-attr]
            scope = conn._scope
            if scope is not None:  # a script's globals: emptied once the reply is done
                if type(response) is Response and type(response.body) is bytes:
                    scope.clear()  # (the usual reply: pages.end_scope's case without its call)
                else:
                    response = pages.end_scope(scope, response)
        finally:
            conn._scope = None  # (the globals hold conn: no cycle back, whatever happened)
            found = regions.leave(ctx, page.name, slot) if regions is not None else None
            if conn.files is not _EMPTY and conn.files:
                close_all(conn.files.multi_items())  # uploads not moved: their files go
            _current.reset(conn_token)
        if found is not None:
            response = regions.answer(response, page.name, found)  # type: ignore[union-attr]
        if conn.unawaited:
            response = self._unawaited_page(ctx, page.name, page.filename, conn.unawaited)
        if conn.held is not None:  # the watchdog saw this page hold the loop
            response = self._blocked(ctx, conn.held, response)
        if response is conn._made:
            return response  # secured in place by _page_outcome
        return self._secure(response)

    def _conn(
        self,
        ctx: Context,
        page: _Page,
        form: MultiDict,
        files: MultiDict,
        body: bytes | None,
        params: dict[str, str] | None,
    ) -> Conn:
        # (positional: a class called with keywords costs a dictionary per call)
        conn = Conn(ctx, form, files, page.name, page.filename, self.root, self.templates, body, params)
        if self.login_url != Conn.login_url:  # (the default is a class attribute: no store)
            conn.login_url = self.login_url
        return conn

    async def _prepare(
        self,
        ctx: Context,
        page: _Page,
        params: dict[str, str] | None,
        cookies: str | None = None,
    ) -> Conn | Response:
        """The conn of a request that has more than a plain GET: its form read (the query,
        a form body), its session loaded (a session cookie), its CSRF token checked (a
        POST, PUT, PATCH or DELETE). A Response instead when the page must not run.
        ``cookies``: the request's ``Cookie`` field (None without one), as ``_run_page``
        looked it up."""
        request = ctx.request
        content_type = None
        body = None
        try:
            unsafe = csrf.is_unsafe(request.method)
            if unsafe and (request.chunked or request.content_length):
                content_type = request.header("content-type")  # a body: read it if a form
            if content_type is not None and is_form_body(content_type):
                too_large = self._urlencoded_too_large(request, content_type)
                if too_large is not None:
                    return too_large
                # The body alone (never the query: a token or a field in a URL is not the
                # form's). A multipart body is parsed as it arrives, big files go to disk.
                form, files, body = await read_form(ctx, content_type, self.form_limits, "")
            elif request.query and not unsafe:  # a GET's form is its query (FormVar)
                form, files = form_from(request.query, None, None, self.form_limits)
            else:
                form, files = _EMPTY, _EMPTY
        except FormDataError as err:
            if err.field is not None:  # the user's own field: name it, as wrap_fail does
                return self._form_errors_page(
                    [forms.FormError(err.field, err.value, CONTROL_EXPECTED)]
                )
            return self.error_page(err.status, detail=str(err))
        if params:  # the getters read path parameters too; the path wins (the last value)
            form = MultiDict([*form.multi_items(), *params.items()])
        conn = self._conn(ctx, page, form, files, body, params)
        if cookies is not None:
            # conn.cookies made from the field already found (the property would look again)
            jar = conn._cookies = parse_cookies(cookies) if cookies else {}
            cookie = jar.get(COOKIE_NAME)
            if cookie:
                conn._session = await self.sessions.load(cookie)
        if page.check_csrf and csrf.is_unsafe(request.method) and not self._exempt(conn.path):
            why = csrf.missing_token(conn)
            if why is not None:
                return self._csrf_refused(conn, why)
        return conn

    async def _page_counted(self, ctx: Context, conn: Conn, page: _Page) -> Response:
        """:meth:`_page_outcome` as one awaitable, for ``--profile-alloc`` to count."""
        response = self._page_outcome(ctx, conn, page)
        if type(response) is CoroutineType:
            return await response  # type: ignore[no-any-return]
        return response  # type: ignore[return-value]

    def _page_outcome(
        self, ctx: Context, conn: Conn, page: _Page
    ) -> Response | Coroutine[Any, Any, Response]:
        """Run the page and turn what happened into one response (see the module doc):
        the traps first, then the page, unless a trap answered.

        A page that has run when its ``run`` returns (a script without ``await``, a service
        that cannot wait: ``pages.DONE``) is answered here, by plain calls; for a page that
        awaits this gives the coroutine :meth:`_page_awaited`, which the caller awaits (one
        coroutine less for the usual page: docs/performance.md)."""
        ended: BaseException | None = None  # sys.exit() or KeyboardInterrupt in the page
        try:
            answer = _trapped(conn, page.traps, page.run) if page.traps else page.run(conn)
            if answer is not pages.DONE:
                return self._page_awaited(ctx, conn, page, answer)
        except PageExit:
            pass  # conn.exit(): the page ends here, its answer (if any) stands
        except (SystemExit, KeyboardInterrupt) as exc:
            # sys.exit(), exit(), quit() or Ctrl-C's exception raised by the page itself:
            # it ends the page, never the server (every other page keeps being served).
            _from_the_page(exc, page.filename)
            ended = exc
        except Exception as exc:
            return self._page_failed(ctx, conn, page, exc)
        response = conn.response
        if (
            response is conn._made  # (None is not: _made is set with the response)
            and response is not None
            and ended is None
            and not conn.form_errors
            and conn._session is None
            and not conn._set_cookies
        ):  # the usual page: _page_end's last step without its call
            response.headers.extend(self._missing(response.headers))
            return response
        return self._page_end(ctx, conn, page, ended)

    async def _page_awaited(
        self, ctx: Context, conn: Conn, page: _Page, answer: Awaitable[None]
    ) -> Response:
        """:meth:`_page_outcome` for a page that awaits: its deadline, then its answer."""
        ended: BaseException | None = None
        try:
            if page.timed and self.page_timeout is not None:
                # Marlow §4: a page gets page_timeout seconds, then a 503. A page that
                # waits on its own events (a long poll) lifts it (Conn._no_deadline).
                with runtime.current().move_on_after(self.page_timeout) as scope:
                    conn.deadline_scope = scope
                    await answer
                conn.deadline_scope = None
                if scope.cancelled_caught:
                    return self._too_long(ctx, page.name)
            else:
                await answer
        except PageExit:
            pass
        except (SystemExit, KeyboardInterrupt) as exc:
            _from_the_page(exc, page.filename)
            ended = exc
        except Exception as exc:
            return self._page_failed(ctx, conn, page, exc)
        response = self._page_end(ctx, conn, page, ended)
        if type(response) is CoroutineType:  # a session to save first
            return await response  # type: ignore[no-any-return]
        return response  # type: ignore[return-value]

    def _page_end(
        self,
        ctx: Context,
        conn: Conn,
        page: _Page,
        ended: BaseException | None,
        saved: bool = False,
    ) -> Response | Coroutine[Any, Any, Response]:
        """The response of a page that has ended (``ended``: by sys.exit() or Ctrl-C): its
        form errors' 400, or its answer with its cookies and the security headers. A
        coroutine when the page's session must be saved first (:meth:`_session_end`)."""
        if conn.form_errors:  # wrap_fail getters recorded errors: one 400 lists them
            return self._bad_form(conn, conn.form_errors)
        session = conn._session
        if not saved and session is not None and conn.response is not None:
            if session.modified:  # written to: stored before the answer goes
                return self._session_end(ctx, conn, page, ended)
            # Nothing to store (a first visit's CSRF token is held, not written): its
            # cookie, if any, is added now, without the store's coroutine.
            self._session_cookie(conn, csrf.COOKIE, csrf.first_visit_cookie(conn))
        if session is not None and conn.response is not None:
            _private(conn)
        response = conn.finish() if conn._set_cookies else conn.response  # (no call: no cookies)
        if response is not None and response is conn._made:
            # Made by conn for this request, so no one else holds it: its security headers
            # go in place, and _secure finds them there (no second Response per request).
            response.headers.extend(self._missing(response.headers))
        if ended is not None and (response is None or isinstance(ended, KeyboardInterrupt)):
            return self._ended(ctx, page.name, page.filename, ended)
        if response is None:
            return self.error_page(
                500,
                detail=f"{page.name} finished without giving a response: call conn.return_(...) "
                "(or return a value from a service)",
            )
        return response

    async def _session_end(
        self, ctx: Context, conn: Conn, page: _Page, ended: BaseException | None
    ) -> Response:
        await self._save_session(conn)
        return self._page_end(ctx, conn, page, ended, saved=True)  # type: ignore[return-value]

    def _page_failed(self, ctx: Context, conn: Conn, page: _Page, exc: Exception) -> Response:
        """The response for a page that raised ``exc``: a form's 400, a request's 4xx, or
        the error page (500, or the status the exception names)."""
        errors = conn.form_errors
        if isinstance(exc, forms.FormErrors):
            return self._bad_form(conn, errors + [e for e in exc.errors if e not in errors])
        if isinstance(exc, forms.FormError):
            return self._bad_form(conn, errors + ([exc] if exc not in errors else []))
        if isinstance(exc, ProtocolError):
            raise exc  # a bad or oversized body: the server answers 400/413
        if isinstance(exc, RequestError | JSONFieldErrors):
            return _refusal(conn, exc)
        if errors:  # the page tripped over a None from wrap_fail
            return self._bad_form(conn, errors)
        return self._page_error(ctx, page.name, page.filename, exc)

    def _exempt(self, path: str) -> bool:
        return any(csrf.matches(pattern, path) for pattern in self.csrf_exempt)

    def _csrf_refused(self, conn: Conn, why: str) -> Response:
        """403, saying what is missing (and, in development mode, how to add it)."""
        detail = why + "."
        if self.dev:
            detail += " " + csrf.HOW_TO_ADD
        else:
            detail += " Reload the page that has the form and send it again."
        return _refusal(conn, RequestError(403, detail))

    def _bad_form(self, conn: Conn, errors: list[Any]) -> Response:
        """400 listing every bad variable; 404 when a path parameter is among them."""
        for error in errors:
            if getattr(error, "name", None) in conn.path_params:
                return _refusal(
                    conn,
                    RequestError(
                        404,
                        f"no resource at {conn.path}: {error.name} = {error.value!r} "
                        f"is not {error.expected}",
                    ),
                )
        return self._form_errors_page(errors)

    async def _save_session(self, conn: Conn) -> None:
        """Store the session the page changed; tell the browser a new id, or, when no
        session was stored, the CSRF token made for it (pyweb.app.csrf: its own cookie)."""
        assert conn._session is not None
        csrf.keep_cookie_token(conn)  # a new session keeps the token of a form shown before
        value = await self.sessions.save(conn._session)
        if value is not None:
            self._session_cookie(conn, COOKIE_NAME, value)
        else:
            self._session_cookie(conn, csrf.COOKIE, csrf.first_visit_cookie(conn))

    def _session_cookie(self, conn: Conn, name: str, value: str | None) -> None:
        """Send the cookie ``name`` (the session's id or a first visit's CSRF token; ``""``
        drops it, None sends nothing), and keep the answer out of shared caches."""
        if value is None:
            return
        parts = [f"{name}={value}", "Path=/", "HttpOnly", "SameSite=Lax"]
        if not value:
            parts.insert(2, "Max-Age=0")
        if getattr(conn.ctx, "scheme", "http") == "https" or (
            conn.request.header("x-forwarded-proto") == "https"
        ):
            parts.append("Secure")
        conn.add_set_cookie("; ".join(parts))
        response = conn.response
        if response is not None and not any(
            n.lower() == "cache-control" for n, _ in response.headers
        ):
            # a response that sets a session (or CSRF) cookie is this browser's only (a new Response,
            # unless conn made this one: the page's may be an object built once)
            if response is conn._made:
                response.headers.append(("Cache-Control", "private, no-store"))
            else:
                private = [*response.headers, ("Cache-Control", "private, no-store")]
                conn.response = dataclasses.replace(response, headers=private)

    def _page_error(
        self, ctx: Context, page: str, filename: str | None, exc: Exception
    ) -> Response:
        _from_the_page(exc, filename)
        # An exception may say which status it means (``http_status = 503`` on "the
        # database is down"); anything else is the page's bug: 500.
        status = getattr(exc, "http_status", 500)
        if not isinstance(status, int) or not 400 <= status <= 599:
            status = 500
        # An outage (the database down) is logged once by the database layer, when it
        # starts and when it ends, not once per request (pyweb.outage).
        if not getattr(exc, "outage", False):
            _log(ctx, f"{page} raised {type(exc).__name__}: {exc}", exc)
        return self.error_page(status, detail=f"{page} raised {type(exc).__name__}: {exc}", exc=exc)

    def _ended(self, ctx: Context, page: str, filename: str | None, exc: BaseException) -> Response:
        line = _line_in(exc, filename)
        at = f" at line {line}" if line else ""
        if isinstance(exc, SystemExit):
            what = "sys.exit() (or exit(), quit(), raise SystemExit)"
            why = (
                f"{page} called {what}{at} before it answered. In a page that ends only "
                "the page, never the server; to stop a page early, answer first and then "
                "call conn.exit()"
            )
        else:
            why = (
                f"{page} raised KeyboardInterrupt{at}: it ended this page only; the server "
                "goes on (Ctrl-C in the terminal is what stops the server)"
            )
        _log(ctx, why, None)
        return self.error_page(500, detail=why)

    def _too_long(self, ctx: Context, page: str) -> Response:
        why = (
            f"{page} took longer than {self.page_timeout:g} s (--page-timeout) and was "
            "stopped. A page that waits long on purpose (a long poll) waits on its own "
            "events: conn.client_gone_evt() / conn.shutdown_evt()"
        )
        _log(ctx, why, None)
        page_503 = self.error_page(503, detail=why, sentence=_TOO_LONG)
        page_503.headers.append(("Retry-After", "1"))
        return page_503

    def _unawaited_page(
        self,
        ctx: Context,
        page: str,
        filename: str | None,
        found: list[unawaited.Unawaited],
    ) -> Response:
        messages = []
        for item in found:
            message, _line = unawaited.explain(item, filename, self.display)
            if message not in messages:
                messages.append(message)
        why = " ".join(messages)
        if not why.startswith(page):  # the message names the page's file and line itself
            why = f"{page}: {why}"
        _log(ctx, why, None)
        return self.error_page(500, detail=why)

    def _blocked(self, ctx: Context, run: blocking.PageRun, response: Response) -> Response:
        for held in blocking.watchdog().new_reports(run):  # the error log: once per page and line
            _log(ctx, f"{run.page}: {blocking.describe(held, self.display)}", None)
        if not self.dev:
            return response
        messages = "; ".join(blocking.describe(held, self.display) for held in run.blocked)
        return with_banner(response, messages, header="X-Pyweb-Blocking")

    def __repr__(self) -> str:
        return f"Site({self.root!r}, dev={self.dev})"


@dataclass(frozen=True, slots=True)
class _Page:
    """What a request for a page runs, worked out once per URL (``Site._known`` keeps it):
    the page's code, the names its messages use, whether it gets a deadline, the traps
    before it, whether an unsafe method needs the CSRF token, and a service's methods."""

    run: Callable[[Conn], Awaitable[None]]
    name: str
    """``pages/guess.py``, ``service /mul``: what messages call the page."""
    filename: str | None
    timed: bool
    """Only a page that awaits can be stopped at its deadline (trio cancels at an await);
    a script that never awaits gets no deadline and costs no cancel scope."""
    traps: tuple[Trap, ...] = ()
    check_csrf: bool = True
    methods: tuple[str, ...] | None = None
    """A service's methods (another one is a 405); None: a script answers any method."""


async def _no_page(conn: Conn) -> None:
    raise AssertionError("_FILE is a mark, never run")


_FILE = _Page(_no_page, "static file", None, False, methods=("GET", "HEAD"))
"""``Site._known``'s mark for a path a static file answered."""


def _script_page(script: pages.Script, traps: Sequence[Trap]) -> _Page:
    return _Page(script.run, script.name, script.path, script.is_async, tuple(traps))


def _service_page(svc: Service, traps: Sequence[Trap]) -> _Page:
    code = getattr(svc.func, "__code__", None)
    at_once = svc.at_once and not traps  # (a trap may wait: then the deadline stays)
    return _Page(
        svc.respond_at_once if at_once else svc.respond,
        f"service {svc.path}",
        code and code.co_filename,
        inspect.iscoroutinefunction(svc.func) and not at_once,
        tuple(traps),
        svc.csrf,
        svc.methods,
    )


# The watchdog finds a running page by the frames of this function, in its local "conn".
blocking.page_codes[Site._run_page.__code__] = "conn"


async def _ready_value(response: Response) -> Response:
    return response


def _ready(response: Response) -> Awaitable[Response]:
    """An awaitable of a response already made (for the routes that return a coroutine)."""
    return _ready_value(response)


def _wins(first: Pattern, second: Pattern) -> bool:
    """Whether ``first`` is more specific than ``second`` (literals before parameters)."""
    return first.rank <= second.rank


def _hsts_header(hsts: int | None) -> tuple[str, str] | None:
    if not hsts:
        return None
    if not isinstance(hsts, int) or hsts < 0:
        raise ValueError(f"hsts is a max-age in seconds, got {hsts!r}")
    return ("Strict-Transport-Security", f"max-age={hsts}")


def _security_headers(
    content_type_options: str | None,
    frame_options: str | None,
    referrer_policy: str | None,
) -> tuple[tuple[str, str, bool], ...]:
    """``(name, value, on HTML only)`` for each header a site adds to its responses."""
    found = []
    if content_type_options:
        found.append(("X-Content-Type-Options", content_type_options, False))
    if frame_options:
        found.append(("X-Frame-Options", frame_options, True))
    if referrer_policy:
        found.append(("Referrer-Policy", referrer_policy, True))
    return tuple(found)


def _private(conn: Conn) -> None:
    """The answer of a page that read the session is this browser's own: no shared cache
    keeps it (``Cache-Control: private`` unless the page chose), and a cache that keeps it
    for the browser keys it by the cookie (``Vary: Cookie``)."""
    response = conn.response
    assert response is not None
    names = {name.lower(): value for name, value in response.headers}
    extra = []
    if "cache-control" not in names:
        extra.append(("Cache-Control", "private"))
    if "cookie" not in names.get("vary", "").lower() and names.get("vary") != "*":
        extra.append(("Vary", "Cookie"))
    if not extra:
        return
    if response is conn._made:
        response.headers.extend(extra)
    else:  # (the page's own object may be shared: a new one)
        conn.response = dataclasses.replace(response, headers=[*response.headers, *extra])


def _wants_json(conn: Conn) -> bool:
    accept = conn.request.header("accept") or ""
    return "application/json" in accept and "text/html" not in accept


def _refusal(conn: Conn, exc: RequestError | JSONFieldErrors) -> Response:
    """A 4xx whose message is meant for the client (safe in production too): JSON when
    the client asks for JSON, else a short HTML page."""
    status = exc.http_status
    fields = [e.as_dict() for e in exc.errors] if isinstance(exc, JSONFieldErrors) else None
    if _wants_json(conn):
        data: dict[str, Any] = {"error": str(exc)}
        if fields is not None:
            data["errors"] = fields
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        headers = [("Content-Type", "application/json"), ("Cache-Control", "no-store")]
        return Response(status, headers + list(getattr(exc, "headers", ())), body)
    page = error_response(status, dev=True, detail=str(exc))
    page.headers.extend(getattr(exc, "headers", ()))  # (a 405's Allow)
    return page


async def _trapped(
    conn: Conn, traps: Sequence[Trap], run: Callable[[Conn], Awaitable[None]]
) -> None:
    """The traps in order, then the page, unless a trap answered (SMLserver's registerTrap)."""
    for trap in traps:
        await trap.run(conn)
        if conn.response is not None:
            return
    await run(conn)


def _from_the_page(exc: BaseException, filename: str | None) -> None:
    """Drop the framework's frames from the top of a page's traceback, so the first line a
    student reads is their own page's (the frames below it, in libraries, stay)."""
    if filename is None:
        return
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    if tb is not None:
        exc.__traceback__ = tb


def _line_in(exc: BaseException, filename: str | None) -> int | None:
    """The last line of ``filename`` in ``exc``'s traceback (where the page raised it)."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return line


def _log(ctx: Context, message: str, exc: BaseException | None) -> None:
    log_error = getattr(ctx, "log_error", None)
    if log_error is not None:
        log_error(message, exc)


def check_site(root: str | os.PathLike[str]) -> tuple[Site, list[Problem]]:
    """Load ``root`` as ``pyweb check`` does (every file compiled, services imported,
    templates parsed) and return the site and every problem found."""
    site = Site(root, dev=True)
    return site, list(site.problems)
