"""Running a page: its ``conn``, the guards around it, and the one response it gives
(SMLserver §2.1's ``Ns.Conn``, Marlow §4's page deadline, Hop §2.4's "Response" stage).

:meth:`Runner.run_page` runs one page (script, service, template, static file, WebSocket
handshake) for one request: read the body if it is a form, build the
:class:`~pyweb.app.conn.Conn`, make it the current form for :mod:`pyweb.forms`, run, and
turn what happened into one response: the page's own, a 400 listing every bad form
variable, or an error page (with the traceback in development mode): 500 for a bug in the
page, or the status an exception names in an ``http_status`` attribute (the database layer's
"unavailable" error says 503). The guards it runs, in order, are :data:`pyweb.app.guards.GUARDS`.
"""

from __future__ import annotations

import functools
import inspect
import traceback
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from types import CoroutineType
from typing import Any

from pyweb import forms
from pyweb.handler import Context
from pyweb.protocol.errorpage import error_response
from pyweb.protocol.errors import ProtocolError
from pyweb.protocol.response import Response

from . import blocking, csrf, interrupt, pages, watched
from .apierrors import wants_json
from .conn import Conn, PageExit, RequestError, _current
from .cors import CORS
from .csrf import SAFE_METHODS
from .errorpages import ErrorPages, _log, _refusal
from .formdata import FormDataError, FormLimits, MultiDict, form_from, is_form_body, read_form
from .guards import (
    compress,
    deadline,
    headers,
    methods,
    regions,
    sessions,
    traps,
    unawaited,
    watchdog,
)
from .guards import cors as cors_guard
from .guards import csrf as csrf_guard
from .services import JSONFieldErrors, Service
from .sessions import SessionStore
from .traps import Trap
from .uploads import close_all

__all__ = ["Runner", "PAGE_TIMEOUT"]

_EMPTY = MultiDict()
CONTROL_EXPECTED = "text without control characters (NUL, ESC...; tab and newlines are fine)"

PAGE_TIMEOUT = 30.0
"""Seconds a page or service may run before it is stopped with a 503 (``--page-timeout``)."""


class Runner(ErrorPages):
    """Runs pages for a loaded site (see the module doc)."""

    form_limits: FormLimits
    page_timeout: float | None
    sessions: SessionStore
    login_url: str
    conn_login_url: str | None
    """``login_url`` when it is not :attr:`Conn.login_url <pyweb.app.conn.Conn.login_url>`'s
    default, which every conn has without a store (None: the default)."""
    csrf_exempt: tuple[str, ...]
    cors: CORS | None
    openapi: bool
    security_headers: tuple[tuple[str, str, bool], ...]
    html_extra_headers: list[tuple[str, str]]
    other_extra_headers: list[tuple[str, str]]
    html_extra_last: tuple[str, str] | None
    other_extra_last: tuple[str, str] | None
    compress_at: int
    """``compress_min_size`` with compression on, larger than any body with it off: a
    body shorter than this is not looked at (the runner's one test)."""

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
        and ``leave``, in ``run_in_guards``): library state is checked and restored after it,
        its allocations counted.
        ``await site.run_page(...)``: it hands back the coroutine that does the work rather
        than being a coroutine itself, one object less on every request (Hop §3.1)."""
        cors = self.cors
        spec = _Page(
            run, page, filename, timed, tuple(traps), check_csrf, None, None, cors,
            *_plan(None, check_csrf, cors is not None),
        )  # fmt: skip
        return self.run_in_guards(ctx, spec, params)

    async def run_in_guards(
        self, ctx: Context, page: _Page, params: dict[str, str] | None = None, cors: bool = True
    ) -> Response:
        """Run ``page`` for one request inside the guards, in the order of
        :data:`pyweb.app.guards.GUARDS`: the ``before`` steps here and in :meth:`_prepare`
        and :meth:`_page_outcome`, the ``after`` steps in reverse. ``current_conn()`` and
        the forms getters find conn, its form and its form-error list (one context
        variable); the watchdog finds this frame on the loop's stack.

        Every guard decides on every request, on the line marked ``# guard: NAME``; a guard
        with nothing to do is decided by a test written there (an attribute, a method
        name) and costs no call (tests/security/test_pipeline_table.py records these
        decisions for every kind of route). The route's plan (:class:`_Page`'s ``passes``
        and ``tokenless``, worked out when the route is found) answers for the guards
        whose decision depends only on the route, the site's settings and the method.
        ``cors``: False when the CORS guard, which wraps the rest, calls this again for
        the page."""
        request = ctx.request
        method = request.method
        if method not in page.passes:  # guard: cors, methods (the route's plan: _Page.passes)
            refused = self._cors_or_methods(ctx, page, params, cors)
            if refused is not None:
                return await refused
        cookies = request.header("cookie")  # looked up once: _prepare and conn.cookies use it
        if (
            request.query  # a form to read
            or params
            or request.chunked
            or request.content_length
            or cookies is not None  # guard: sessions (a session to load)
            or method not in page.tokenless  # guard: csrf (the route's plan: _Page.tokenless)
        ):
            conn = await self._prepare(ctx, page, params, cookies)
            if not isinstance(conn, Conn):
                return headers.after(self, conn)  # the form's 400 or 413, CSRF's 403
        else:  # the usual GET: nothing to read, load or check before the page
            conn = Conn(ctx, _EMPTY, _EMPTY, page.name, page.filename, self.root, self.templates)
            if self.conn_login_url is not None:  # (as _conn: one call less per request)
                conn.login_url = self.conn_login_url
        conn.watchdog = watchdog.before()  # guard: watchdog
        conn_token = _current.set(conn)
        site_regions = self.regions
        # (a site served with regions=False has none; one expression keeps C901 at 12)
        slot = None if site_regions is None else regions.before(site_regions)  # guard: regions
        try:
            outcome = (
                self._page_outcome(ctx, conn, page)
                if slot is None  # (--profile-alloc: the page's own steps are counted)
                else site_regions.counted(self._page_counted(ctx, conn, page), slot)  # type: ignore[union-attr]
            )
            # A coroutine for a page that awaits (or a session to save): most pages answer
            # by plain calls, with no coroutine to await.
            response: Response = (
                await outcome if slot is not None or type(outcome) is CoroutineType else outcome  # type: ignore[assignment,misc]
            )
        except interrupt.PageInterrupted as exc:  # it held the loop too long (interrupt.py)
            response = deadline.interrupted(self, ctx, conn, page.filename, exc)
        finally:
            scope = conn._scope  # (emptied with the answer, below)
            conn._scope = None  # (the globals hold conn: no cycle back, whatever happened)
            found = None if site_regions is None else regions.after(site_regions, ctx, page.name, slot)  # guard: regions
            if conn.files is not _EMPTY and conn.files:
                close_all(conn.files.multi_items())  # uploads not moved: their files go
            _current.reset(conn_token)
        if scope is not None and type(response) is Response and type(response.body) is bytes:
            scope.clear()  # (the usual reply: pages.end_scope's case without its call)
            scope = None
        if (
            found is not None  # guard: regions (the region found something to say)
            or conn.unawaited  # guard: unawaited (the page dropped a coroutine)
            or conn.held is not None  # guard: watchdog (it saw the page hold the loop)
            or response is not conn.own_response  # guard: headers (a Response not made here)
            or scope is not None  # (a streamed reply's globals: emptied when it ends)
        ):
            response = self._page_answer(ctx, conn, page, response, found, scope)
        else:  # made by conn for this request, so no one else holds it: secured in place
            response.headers.extend(headers.missing(self, response.headers))  # guard: headers
        try:  # (no cost unless it raises: a stream has no length, and goes to the step)
            if len(response.body) < self.compress_at:  # type: ignore[arg-type]  # guard: compress
                return response
        except TypeError:  # a stream: the watchdog follows it while the server sends it
            response = watched.stream(ctx, conn, response)
        answer = compress.after(self, request, response)
        # (a coroutine when the body is compressed in a worker thread: a large body, a file)
        return await answer if type(answer) is CoroutineType else answer  # type: ignore[return-value]

    def _cors_or_methods(
        self, ctx: Context, page: _Page, params: dict[str, str] | None, cors: bool
    ) -> Awaitable[Response] | None:
        """The first two guards, for a method the route's plan does not pass: the CORS
        guard, which wraps the rest of the pipeline (its awaitable is the whole answer), or
        the methods guard's 405; None when neither acts and the request goes on."""
        if page.cors is not None and cors:  # guard: cors (the route's policy: _Page.cors)
            return cors_guard.around(self, ctx, page, params)
        request = ctx.request
        allowed = page.methods
        if allowed is not None and request.method not in allowed:  # guard: methods
            return _ready(headers.after(self, methods.refuse(self, request, allowed, page.allow)))
        return None

    def _page_answer(
        self,
        ctx: Context,
        conn: Conn,
        page: _Page,
        response: Response,
        found: Any,
        scope: dict[str, Any] | None,
    ) -> Response:
        """The ``after`` steps of the guards, the inner ones first, once the page has left
        its region (``found``: what the region found, if anything), for any answer but the
        usual one, and but compression's: ``run_in_guards`` takes that last, and takes the
        usual answer's steps itself (its tests find that only the headers guard has
        something to do). A script's globals (``scope``) are emptied once its reply is
        done: they hold conn."""
        if scope is not None:
            response = pages.end_scope(scope, response)
        if found is not None:  # guard: regions
            response = regions.answer(self, response, page.name, found)
        if conn.unawaited:  # guard: unawaited (the page dropped a coroutine)
            response = unawaited.after(self, ctx, conn, page.name, response)
        if conn.held is not None:  # guard: watchdog (it saw the page hold the loop)
            response = watchdog.after(self, ctx, conn, response)
        if response is conn.own_response:  # guard: headers
            # Made by conn for this request, so no one else holds it: its security headers
            # go in place (no second Response per request).
            response.headers.extend(headers.missing(self, response.headers))
            return response
        return headers.after(self, response)

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
        if self.conn_login_url is not None:  # (the default is a class attribute: no store)
            conn.login_url = self.conn_login_url
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
        ``cookies``: the request's ``Cookie`` field (None without one), as ``run_in_guards``
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
            return self.error_page(err.status, detail=str(err), request=request)
        if params:  # the getters read path parameters too; the path wins (the last value)
            form = MultiDict([*form.multi_items(), *params.items()])
        conn = self._conn(ctx, page, form, files, body, params)
        if cookies is not None:  # guard: sessions
            await sessions.before(self, conn, cookies)
        return csrf_guard.before(self, conn, page.check_csrf) or conn  # guard: csrf

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
            as_json=wants_json(request),
            detail=f"an url-encoded form body of {length} bytes; at most {limit} are accepted "
            "(FormLimits.max_urlencoded; files go in multipart/form-data)",
        )

    async def _page_counted(self, ctx: Context, conn: Conn, page: _Page) -> Response:
        """:meth:`_page_outcome` as one awaitable, for ``--profile-alloc`` to count."""
        response = self._page_outcome(ctx, conn, page)
        if type(response) is CoroutineType:
            return await response
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
            if page.traps:  # guard: traps
                answer = traps.before(conn, page.traps, page.run)
            else:
                answer = page.run(conn)
            if answer is not pages.DONE:  # guard: deadline (only a page that awaits has one)
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
            response is conn.own_response  # (None is not: it is set with the response)
            and response is not None
            and ended is None
            and not conn.form_errors
            and conn.session_or_none is None  # guard: sessions (none loaded, none made)
            and not conn.set_cookie_fields
        ):  # the usual page: _page_end's last step without its call
            return response
        return self._page_end(ctx, conn, page, ended)

    async def _page_awaited(
        self, ctx: Context, conn: Conn, page: _Page, answer: Awaitable[None]
    ) -> Response:
        """:meth:`_page_outcome` for a page that awaits: its deadline, then its answer."""
        ended: BaseException | None = None
        try:
            scope = deadline.before(self, conn, page.timed)  # guard: deadline
            if scope is None:
                await answer
            else:
                with scope:
                    await answer
                late = deadline.after(self, ctx, conn, page.name, scope)
                if late is not None:
                    return late
        except PageExit:
            pass
        except (SystemExit, KeyboardInterrupt) as exc:
            _from_the_page(exc, page.filename)
            ended = exc
        except Exception as exc:
            return self._page_failed(ctx, conn, page, exc)
        response = self._page_end(ctx, conn, page, ended)
        if type(response) is CoroutineType:  # a session to save first
            return await response
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
        if not saved:
            saving = sessions.after(self, conn)  # guard: sessions
            if saving is not None:  # written to: stored before the answer goes
                return self._session_end(ctx, conn, page, ended, saving)
        # (no call without cookies)
        response = conn.finish() if conn.set_cookie_fields else conn.response
        if ended is not None and (response is None or isinstance(ended, KeyboardInterrupt)):
            return self._ended(ctx, page.name, page.filename, ended)
        if response is None:
            return self.error_page(
                500,
                detail=pages.no_response(page.name, page.filename),
                request=ctx.request,
            )
        return response

    async def _session_end(
        self,
        ctx: Context,
        conn: Conn,
        page: _Page,
        ended: BaseException | None,
        saving: Coroutine[Any, Any, None],
    ) -> Response:
        await saving
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
        return self._form_errors_answer(conn.request, errors)  # (JSON for an API client)

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
        detail = f"{page} raised {type(exc).__name__}: {exc}"
        return self._failure_page(ctx.request, status, detail, exc)  # (JSON for an API client)

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
        return self.error_page(500, detail=why, request=ctx.request)

    def _secure(self, response: Response) -> Response:
        """The security headers guard's ``after`` (:func:`pyweb.app.guards.headers.after`)."""
        return headers.after(self, response)

    def _missing(self, fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return headers.missing(self, fields)

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
    allow: str | None = None
    """A service's 405 ``Allow``: every method some service of its path answers."""
    cors: CORS | None = None
    """The route's CORS policy: a service's own, else the site's (``cors_*`` settings); None:
    no origin allowed, and the guard has nothing to do (:mod:`pyweb.app.guards.cors`)."""
    passes: frozenset[str] = frozenset()
    """The route's plan for the first two guards (:func:`_plan`): the methods neither acts
    on here, so that a request with one of them passes both on one test. Any other method
    (all of them, for a route with a CORS policy) goes to the guards themselves."""
    tokenless: frozenset[str] = frozenset()
    """The route's plan for CSRF (:func:`_plan`): the methods that need no token here. Any
    other method goes to the guard, which looks at the session's token."""


_PLANNED = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"})
"""The methods a route's plan names; a request with another one is decided by each guard."""


@functools.cache
def _plan(
    methods: tuple[str, ...] | None, check_csrf: bool, cors: bool
) -> tuple[frozenset[str], frozenset[str]]:
    """A route's plan, ``(passes, tokenless)`` (:class:`_Page`): the decisions of the guards
    that depend only on the route, the site's settings and the request's method, made once
    when the route is found (a site loaded again, by SIGHUP or in development mode, finds
    its routes again). ``methods``: the methods the route takes (None: any); ``check_csrf``:
    whether an unsafe method needs the token; ``cors``: whether a CORS policy covers the
    route (then its guard wraps every request, and no method passes it)."""
    taken = _PLANNED if methods is None else _PLANNED.intersection(methods)
    passes = frozenset() if cors else taken
    tokenless = SAFE_METHODS if check_csrf else _PLANNED
    return passes, tokenless


def _script_page(script: pages.Script, traps: Sequence[Trap], cors: CORS | None) -> _Page:
    """A script's page; ``cors``: the site's policy (a script has none of its own)."""
    return _Page(
        script.run, script.name, script.path, script.is_async, tuple(traps), True, None, None,
        cors, *_plan(None, True, cors is not None),
    )  # fmt: skip


def _service_page(svc: Service, traps: Sequence[Trap], cors: CORS | None) -> _Page:
    """A service's page; ``cors``: the site's policy, unless the service has its own."""
    code = getattr(svc.func, "__code__", None)
    at_once = svc.at_once and not traps  # (a trap may wait: then the deadline stays)
    policy = svc.cors if svc.cors is not None else cors
    return _Page(
        svc.respond_at_once if at_once else svc.respond,
        f"service {svc.path}",
        code and code.co_filename,
        inspect.iscoroutinefunction(svc.func) and not at_once,
        tuple(traps),
        svc.csrf,
        svc.methods,
        svc.allow,
        policy,
        *_plan(svc.methods, svc.csrf, policy is not None),
    )


async def _ready_value(response: Response) -> Response:
    return response


def _ready(response: Response) -> Awaitable[Response]:
    """An awaitable of a response already made (for the routes that return a coroutine)."""
    return _ready_value(response)


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


# The watchdog finds a running page by the frames of this function, in its local "conn".
blocking.page_codes[Runner.run_in_guards.__code__] = "conn"

