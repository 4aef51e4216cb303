"""``conn``: the request a page is serving, and the one response it gives (SMLserver's ``Ns.Conn``).

In SMLserver a script reads the request through ``Ns.Conn`` and answers with
``Ns.Conn.return`` (§2); pyweb gives every page a global ``conn`` with the same role::

    conn.method, conn.path, conn.query, conn.form, conn.files, conn.headers,
    conn.cookies, conn.peer
    conn.return_(body, status=200, content_type=...)   # the paper's Ns.Conn.return
    conn.redirect(url)
    conn.set_cookie(name, value, ...)
    conn.return_file(path)
    conn.flash("Saved.") / conn.flashes()              # a message for the next page

``return_`` has a trailing underscore because ``return`` is a Python keyword (PEP 8's rule
for such clashes).

**Exactly one response.** A request gets one answer. A second ``return_`` (or ``redirect``,
``return_file``) raises :class:`ResponseAlreadySent` naming the page and the line of the
first return: the usual cause is a missing ``else``. A page that finishes without returning
is a 500 whose development page says so. (Returning does not stop the script, as in
SMLserver: code after ``return_`` still runs.)

Form variables (``conn.form``, what SMLserver's ``FormVar`` getters in ``pyweb.forms`` read)
come from **one** place: on a GET, HEAD, OPTIONS or TRACE, the query string (a search form,
``/guess?n=3``); on any other method (a POST), the body alone, which the app reads before the
page runs (see :mod:`pyweb.app.formdata`). The query of a POST is in ``conn.query``, never in
``conn.form``: so a link (``GET /guest_add?name=...``) cannot fill a form that a POST is
meant to send, and a CSRF token is never taken from a URL. A page that changes something
says so first: ``conn.require_method("POST")`` answers any other method with a 405.
"""

from __future__ import annotations

import contextvars
import json
import mimetypes
import os
import re
import sys
import types
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import unquote

from pyweb import forms
from pyweb.protocol.headers import Headers
from pyweb.protocol.response import FileBody, Response, http_date

from .formdata import MultiDict, UploadedFile, parse_query
from .results import HTML, to_response
from .sessions import Session

if TYPE_CHECKING:
    from pyweb.handler import Context

__all__ = [
    "Conn",
    "ResponseAlreadySent",
    "current_conn",
    "RequestHeaders",
    "RequestError",
    "PageExit",
    "Flash",
    "MAX_FLASHES",
]

_current: contextvars.ContextVar[Conn] = forms.current_page  # type: ignore[assignment]
"""The conn of the page being served: the context variable :mod:`pyweb.forms` reads the
form from, so that the site sets one variable per request, not two."""


def current_conn() -> Conn:
    """The :class:`Conn` of the request being served (for library code called by a page)."""
    try:
        return _current.get()
    except LookupError:
        raise RuntimeError(
            "current_conn() is only available while a page or service is serving a request"
        ) from None


class ResponseAlreadySent(RuntimeError):
    """A page tried to answer a request twice."""


class PageExit(BaseException):
    """Raised by :meth:`Conn.exit` to end the page's script (SMLserver's ``Web.exit``).

    A ``BaseException``, like ``SystemExit``, so that a page's ``except Exception:`` does
    not swallow it."""


class RequestError(Exception):
    """The request itself is wrong (a JSON body that does not parse, the wrong content
    type): its ``http_status`` and a message safe to show the client, even in production."""

    def __init__(
        self, status: int, message: str, headers: list[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.http_status = status
        self.headers = headers or []
        """Header fields the refusal carries (``Allow`` on a 405)."""


RequestHeaders = Headers
"""The request's header fields (:class:`pyweb.protocol.Headers`): case-insensitive, repeats
joined by ``, ``; ``get_all(name)`` lists them."""


# RFC 6265 §4.1.1: cookie-name is a token; cookie-value is cookie-octets (no space, comma,
# semicolon, backslash, double quote, control characters), optionally in double quotes.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_COOKIE_OCTETS = re.compile(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*")
_SAME_SITE = {"strict": "Strict", "lax": "Lax", "none": "None"}
_new = object.__new__


# RFC 6265 §4.1.1: a Domain is a host name (RFC 1034 labels, a leading dot tolerated), and a
# Path any printable ASCII but ";". Anything else could end the attribute and start another
# (``d=x; Path=/admin``) or split the header line.
_DOMAIN = re.compile(
    r"\.?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)
_PATH = re.compile(r"[\x20-\x3a\x3c-\x7e]*")


def _cookie_attributes(
    name: str,
    max_age: int | None,
    expires: datetime | None,
    path: str,
    domain: str | None,
    flags: tuple[bool, bool],
    same_site: str | None,
) -> list[str]:
    """A cookie's attributes (RFC 6265 §4.1.1), each checked: a ``;`` or a line break in
    one would add attributes of the caller's choosing (``domain="x; SameSite=None"``)."""
    parts = []
    if max_age is not None:
        parts.append(f"Max-Age={int(max_age)}")
    if expires is not None:
        if expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)
        parts.append(f"Expires={http_date(expires.timestamp())}")
    if domain:
        if not isinstance(domain, str) or not _DOMAIN.fullmatch(domain):
            raise ValueError(
                f"cookie {name!r}: the domain {domain!r} is not a host name "
                "(letters, digits, '-' and '.'; IDNA-encode a non-ASCII name)"
            )
        parts.append(f"Domain={domain}")
    if path:
        if not isinstance(path, str) or not _PATH.fullmatch(path):
            raise ValueError(
                f"cookie {name!r}: the path {path!r} has characters a cookie path cannot "
                "hold (';', control characters or non-ASCII)"
            )
        parts.append(f"Path={path}")
    secure, http_only = flags
    if secure:
        parts.append("Secure")
    if http_only:
        parts.append("HttpOnly")
    if same_site is not None:
        if same_site.lower() not in _SAME_SITE:
            raise ValueError(f"same_site is 'Strict', 'Lax' or 'None', got {same_site!r}")
        parts.append(f"SameSite={_SAME_SITE[same_site.lower()]}")
    return parts


def parse_cookies(header: str) -> dict[str, str]:
    """``"a=1; b=2"`` → ``{"a": "1", "b": "2"}``. Malformed pairs are skipped, as browsers do."""
    cookies: dict[str, str] = {}
    for pair in header.split(";"):
        name, eq, value = pair.partition("=")
        name = name.strip()
        if not eq or not name:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        cookies.setdefault(name, value)  # RFC 6265 §5.4: the most specific (first) wins
    return cookies


async def _after_page(batch: Any) -> None:
    """Start a batch of work once the page's task waits (no reply to wait for: ASGI)."""
    from pyweb import runtime

    await runtime.sleep(0)
    batch.sent(200)


def _page_frame(filename: str | None, depth: int) -> types.FrameType | None:
    """The frame of the page's code that called us: the first frame in ``filename`` from
    ``depth`` frames above our caller (0: the caller itself) upwards."""
    if filename is None:
        return None
    frame: types.FrameType | None = sys._getframe(depth + 1)
    while frame is not None:
        if frame.f_code.co_filename == filename:
            return frame
        frame = frame.f_back
    return None


def _page_line(filename: str | None, depth: int = 1) -> int | None:
    """The line of the page's code that called us (for 'already returned at line N')."""
    frame = _page_frame(filename, depth + 1)
    return frame.f_lineno if frame is not None else None


def _line_at(code: types.CodeType, offset: int) -> int | None:
    """The source line of the instruction at ``offset`` in ``code``."""
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line
    return None


_FLASHES = "_flashes"
"""The session key that holds the flash messages: ``[[category, message], ...]``."""
_CATEGORY = re.compile(r"[A-Za-z0-9_-]{1,32}")
MAX_FLASHES = 20
"""How many flash messages a session keeps at most (the oldest are dropped)."""


class Flash(str):
    """A flash message: the text itself (a ``str``, escaped like any other in a quotation or
    a template) with its :attr:`category`."""

    category: str

    def __new__(cls, message: str, category: str = "info") -> Flash:
        made = super().__new__(cls, message)
        made.category = category
        return made

    @property
    def message(self) -> str:
        """The text, as a plain ``str``."""
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Flash({self.message!r}, {self.category!r})"


class Conn:
    """One request, as a page sees it (see the module docstring)."""

    # Slots: a conn is made for every request, and slots make it and its fields cheap;
    # what few requests set (a session, the parsed headers, a deadline) are class
    # attributes until set, and ``__dict__`` holds them then, with anything a page or a
    # library adds (docs/performance.md).
    __slots__ = (
        "ctx", "request", "method", "path", "form", "files", "form_errors", "page",
        "path_params", "response", "own_response", "_returned_at", "filename", "site_root",
        "_templates", "_body", "watchdog", "_scope", "__dict__", "__weakref__",
    )  # fmt: skip

    def __init__(
        self,
        ctx: Context,
        form: MultiDict,
        files: MultiDict,
        page: str,
        filename: str | None = None,
        site_root: str | None = None,
        templates: Any = None,
        body: bytes | None = None,
        path_params: dict[str, str] | None = None,
    ) -> None:
        self.ctx = ctx
        request = self.request = ctx.request
        self.method: str = request.method
        """``"GET"``, ``"POST"``, ..."""
        path = request.path
        self.path: str = unquote(path) if "%" in path else path
        """The URL path, percent-decoded (``/guess``)."""
        self.form: MultiDict = form
        """The form: the query's variables on a GET (HEAD, OPTIONS, TRACE), the body's alone
        on any other method. ``form["n"]`` is the last value, ``form.getall("n")`` all."""
        self.files: MultiDict = files
        """Uploaded files (:class:`~pyweb.app.formdata.UploadedFile`) of a multipart form."""
        self.form_errors: list[Any] = []
        """The errors ``wrap_fail`` getters recorded (:mod:`pyweb.forms`): the page's 400."""
        self.page = page
        """The page's name for messages (``pages/guess.py``)."""
        self.path_params: dict[str, str] = path_params if path_params is not None else {}
        """The parts of the path matched by a ``[name]`` file or folder or a ``{name}`` in a
        service's path (``/todo/3`` → ``{"id": "3"}``), as sent (the getters parse them)."""
        self.response: Response | None = None
        """The response given by ``return_`` (None until then)."""
        self.own_response: Response | None = None
        """The response conn built itself (``return_`` of a str or bytes, ``redirect``,
        ``return_file``; None until then): a new object of this request, so the site adds
        its headers to it in place, where a page's own Response may be shared."""
        self._returned_at: tuple[types.CodeType, int] | None = None
        self.filename: str | None = filename
        """The file of the code answering: the script, the service's module or the
        template (absolute path; None for an answer that has no file)."""
        self.site_root: str | None = site_root
        """The site directory (None for a conn made without a site)."""
        self._templates = templates
        self._body = body
        self.watchdog: Any = None
        """The watchdog of the loop the page runs on (:mod:`pyweb.app.blocking`), which
        finds the page on the loop's stack when it holds the loop."""
        self._scope: dict[str, Any] | None = None  # a script's globals (pages.end_scope)

    # Set by few requests: class attributes until then (see __slots__).
    login_url = "/login"
    """Where ``require_login()`` sends strangers (the ``login_url`` setting)."""
    deadline_scope: Any = None
    """The page deadline's cancel scope while the page runs (``--page-timeout``)."""
    session_or_none: Session | None = None
    """The session if this request has one: loaded from the browser's cookie (the sessions
    guard) or made by the first use of :attr:`session`; None otherwise. The guards read
    it here, where :attr:`session` would make one."""
    _query: MultiDict | None = None
    _headers: Headers | None = None
    _cookies: dict[str, str] | None = None
    set_cookie_fields: tuple[()] | list[tuple[str, str]] = ()
    """The ``Set-Cookie`` fields to send (a list once there is one)."""
    # Set by the few pages that go wrong.
    held: Any = None
    """What the watchdog saw this page hold (a ``blocking.PageRun``, set by its thread)."""
    exited_at: int | None = None
    """The line where the page called :meth:`exit` (None if it did not)."""
    unawaited: list[Any] | None = None
    """Coroutines the page made and dropped (:mod:`pyweb.app.unawaited` notes them)."""
    _after: Any = None
    """The work handed to :meth:`after` (a ``pyweb.app.after.Batch``), once there is some."""

    @property
    def query_string(self) -> str:
        """The query as sent (``n=3&name=ann``)."""
        return self.request.query

    @property
    def peer(self) -> str:
        """The client's address, ``"host:port"`` (behind a trusted reverse proxy, the client
        it forwards for: ``--proxy-headers``)."""
        return self.ctx.peer

    @property
    def scheme(self) -> str:
        """``"http"`` or ``"https"``: how the client reached the site (a trusted proxy's
        ``X-Forwarded-Proto``)."""
        return getattr(self.ctx, "scheme", "http")  # (a test's stand-in may lack it)

    @property
    def dev(self) -> bool:
        """Development mode (error pages show details)."""
        return self.ctx.dev

    def add_set_cookie(self, value: str) -> None:
        """Send ``Set-Cookie: value`` with the response (``set_cookie`` builds the value)."""
        if not self.set_cookie_fields:
            self.set_cookie_fields = []
        self.set_cookie_fields.append(("Set-Cookie", value))

    # ---- the request ------------------------------------------------------------------

    @property
    def query(self) -> MultiDict:
        """The query string's variables (on a GET, ``form`` holds the same)."""
        if self._query is None:
            self._query = parse_query(self.query_string)
        return self._query

    @property
    def headers(self) -> Headers:
        """Request header fields, case-insensitive: ``conn.headers["user-agent"]``."""
        if self._headers is None:
            self._headers = Headers(self.request.headers)
        return self._headers

    @property
    def cookies(self) -> dict[str, str]:
        """The cookies the browser sent (``Cookie`` header, RFC 6265 §5.4)."""
        if self._cookies is None:
            header = self.request.header("cookie")
            self._cookies = parse_cookies(header) if header else {}
        return self._cookies

    @property
    def server_port(self) -> int:
        """The port this server listens on: to reach the site itself, never the ``Host``
        header's port (a client chooses that one: it could name Redis's)."""
        return self.ctx.server_port

    @property
    def url(self) -> str:
        """The request target as sent: path and query (``/guess?n=3``)."""
        return self.request.target

    async def body(self) -> bytes:
        """The raw request body (already read for a form; read now otherwise)."""
        if self._body is None:
            self._body = await self.ctx.body()
        return self._body

    async def json(self) -> Any:
        """The request body parsed as JSON. A body of another content type is a 415, one
        that does not parse a 400 naming the line and column (:class:`RequestError`); its
        size is bounded by the server's body limit (413)."""
        content_type = self.request.header("content-type") or ""
        mime = content_type.split(";", 1)[0].strip().lower()
        if mime != "application/json" and not mime.endswith("+json"):
            shown = mime or "no Content-Type"
            raise RequestError(415, f"this URL takes a JSON body (application/json), not {shown}")
        body = await self.body()
        try:
            return json.loads(body)
        except json.JSONDecodeError as exc:
            raise RequestError(
                400,
                f"the JSON body does not parse: {exc.msg} at line {exc.lineno}, "
                f"column {exc.colno} (character {exc.pos})",
            ) from None
        except UnicodeDecodeError as exc:
            raise RequestError(400, f"the JSON body is not UTF-8 text: {exc}") from None

    def require_method(self, *methods: str) -> None:
        """Go on only for one of ``methods`` (``conn.require_method("POST")``); any other
        method is answered 405 with ``Allow``, and nothing after this line runs. A page that
        changes something starts with it: a link or a prefetch (a GET) then changes
        nothing, and the CSRF check (which every POST passes through) covers the change."""
        allowed = tuple(m.upper() for m in methods)
        if not allowed:
            raise ValueError("require_method needs at least one method, such as 'POST'")
        if self.method not in allowed:
            raise RequestError(
                405,
                f"{self.page} answers {' or '.join(allowed)} only, not {self.method}: "
                "a change is sent by a form with method=\"post\"",
                [("Allow", ", ".join(allowed))],
            )

    @property
    def session(self) -> Session:
        """This browser's session: a mutable mapping of JSON values kept on the server
        between its requests (:mod:`pyweb.app.sessions`)."""
        if self.session_or_none is None:
            self.session_or_none = Session()
        return self.session_or_none

    # ---- flash messages: one message for the next page (post/redirect/get) ------------

    def flash(self, message: str, category: str = "info") -> None:
        """Keep ``message`` in the session for the next page that calls :meth:`flashes`
        (Flask's ``flash``): "Saved." before the redirect of a post/redirect/get.
        ``category`` (``"info"``, ``"success"``, ``"error"``...) is for the page's styling.
        With a shared cache (``--cache redis://...``) the next page may run in any worker."""
        if not isinstance(message, str) or not message:
            raise TypeError(f"conn.flash takes a non-empty str message, got {message!r:.60}")
        if not isinstance(category, str) or not _CATEGORY.fullmatch(category):
            raise ValueError(
                f"conn.flash: category {category!r:.40} is a short word (letters, digits, - and _)"
            )
        kept = self.session.get(_FLASHES) or []
        # Bounded: a loop that flashes must not grow a session without end (the oldest go).
        self.session[_FLASHES] = [*kept, [category, message]][-MAX_FLASHES:]

    def flashes(self) -> list[Flash]:
        """The messages :meth:`flash` kept, oldest first, and forget them: each shows once.
        Each is a ``str`` with a ``category``. A session without any is not touched."""
        session = self.session_or_none  # None: the browser sent no session, so it has none
        if session is None or _FLASHES not in session:
            return []
        kept = session[_FLASHES]
        del session[_FLASHES]
        return [
            Flash(entry[1], entry[0])
            for entry in (kept if isinstance(kept, list) else [])
            if isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) for x in entry)
        ]

    def client_gone_evt(self):
        """An event (``pyweb.events``) enabled when the client closes the connection.

        A page that asks for it waits on its own terms (a long poll): the page deadline
        (``--page-timeout``) no longer applies to it."""
        self._no_deadline()
        return self.ctx.client_gone_evt()

    def shutdown_evt(self):
        """An event (``pyweb.events``) enabled once the server begins a graceful shutdown:
        a page that waits long (a long poll) answers at once instead of holding it up.
        Like :meth:`client_gone_evt`, it lifts the page deadline."""
        self._no_deadline()
        return self.ctx.shutdown_evt()

    def _no_deadline(self) -> None:
        scope = self.deadline_scope
        if scope is not None:
            scope.deadline = float("inf")

    def exit(self) -> NoReturn:
        """End the page here (SMLserver's ``Web.exit``): the rest of the script does not run.

        An answer given before stands; a page that exits without answering gets the usual
        "finished without giving a response" error. Unlike ``sys.exit()``, which stops a
        whole program, this stops only the page::

            if n < 0:
                conn.return_("n must not be negative", status=400)
                conn.exit()
        """
        self.exited_at = _page_line(self.filename)
        raise PageExit(self.page)

    def after(self, fn: Any, *args: Any) -> None:
        """Run ``fn(*args)`` once the response is sent (:mod:`pyweb.app.after`): an
        ``async def`` on the loop, a plain function in a worker thread. Dropped if the
        reply is a server error; an exception is logged with this page and line."""
        from . import after

        batch = self._after
        if batch is None:
            batch = self._after = after.Batch(after.WORK)
            if hasattr(self.ctx, "after_reply"):
                self.ctx.after_reply = batch.sent  # the server calls it after the reply
            else:  # a context without the hook (ASGI, a test's stand-in): beside the page
                from pyweb import runtime

                runtime.spawn_background(_after_page, batch)
        after.WORK.submit(batch, fn, args, self.page, _page_line(self.filename))
        # The page's globals stay (not emptied after the reply): fn may read them.
        self._scope = None

    # ---- the one response -------------------------------------------------------------

    def _claim(self, what: str) -> None:
        if self.response is not None:
            line = _page_line(self.filename, 2)
            first = f" at line {self._returned_line()}" if self._returned_at else ""
            here = f" (this {what} is at line {line})" if line else ""
            raise ResponseAlreadySent(
                f"page {self.page} already returned a response{first}; a page answers "
                f"a request exactly once{here}. Is an 'else' missing?"
            )
        # Where the page answered, for the message above if it answers again: the code and
        # the instruction, made into a line number only then (a line number costs a walk
        # through the code's line table, on every request: docs/performance.md).
        frame = _page_frame(self.filename, 2)
        if frame is not None:
            self._returned_at = (frame.f_code, frame.f_lasti)

    def _returned_line(self) -> int | None:
        if self._returned_at is None:
            return None
        return _line_at(*self._returned_at)

    def return_(
        self,
        body: object = "",
        status: int = 200,
        content_type: str | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        """Answer the request (SMLserver's ``Ns.Conn.return``).

        ``body`` is a ``str`` (HTML unless ``content_type`` says otherwise), a Quot or HTML
        node, ``bytes``, a ``dict``/``list`` (JSON), or an async iterator (streamed in
        chunks). See :mod:`pyweb.app.results`.
        """
        if not isinstance(status, int) or not 200 <= status <= 999:
            raise ValueError(f"a page's status is an int from 200 to 999, got {status!r}")
        if self.response is not None:
            self._claim("return_")  # raises ResponseAlreadySent, naming both lines
        # _claim's note of where the page answered, made here without its two calls: the
        # page's own frame is usually the caller (docs/performance.md).
        frame: types.FrameType | None = sys._getframe(1)
        if frame.f_code.co_filename != self.filename:  # type: ignore[union-attr]
            frame = _page_frame(self.filename, 1)  # a library function answered for the page
        if frame is not None:
            self._returned_at = (frame.f_code, frame.f_lasti)
        kind = body.__class__
        if headers is None and (kind is bytes or kind is str):
            # The usual answer, made as to_response makes it, without its call (one call
            # less per request: docs/performance.md).
            data: bytes = body if kind is bytes else body.encode()  # type: ignore[assignment, attr-defined]
            # Its three fields set one by one rather than through the dataclass's __init__,
            # which Python 3.11 calls by its slow path (docs/performance.md; the test
            # test_return_sets_every_field_of_a_response keeps the fields in step).
            response = _new(Response)
            response.status = status
            response.headers = [("Content-Type", content_type or HTML)]
            response.body = data
        else:
            response = to_response(body, status, content_type, headers)
        self.response = response
        if response is not body:  # made here: the site may add its headers to it in place
            self.own_response = response

    def redirect(self, url: str, status: int = 302) -> None:
        """Send the browser to ``url`` (302 Found; 303 See Other after a POST is also common)."""
        if status not in (301, 302, 303, 307, 308):
            raise ValueError(f"a redirect status is 301, 302, 303, 307 or 308, got {status!r}")
        if any(c in url for c in "\r\n\x00"):
            raise ValueError(f"a redirect URL cannot contain CR, LF or NUL: {url!r}")
        self._claim("redirect")
        self.response = self.own_response = Response(
            status,
            [("Location", url), ("Content-Type", "text/html; charset=utf-8")],
            b"",
        )

    def return_file(self, path: str | os.PathLike[str], content_type: str | None = None) -> None:
        """Answer with a file, sent with ``sendfile``. A relative path is taken from the site
        directory; the file is opened now so a missing one is an error in the page."""
        path = os.fspath(path)
        if not os.path.isabs(path) and self.site_root is not None:
            path = os.path.join(self.site_root, path)
        size = os.stat(path).st_size  # FileNotFoundError names the path
        if content_type is None:
            guessed, encoding = mimetypes.guess_type(path)
            content_type = guessed or "application/octet-stream"
            if content_type.startswith("text/") or content_type in (
                "application/javascript",
                "image/svg+xml",
            ):
                content_type += "; charset=utf-8"
        self._claim("return_file")
        self.response = self.own_response = Response(
            200, [("Content-Type", content_type)], FileBody(path, 0, size)
        )

    def return_template(self, name: str, /, status: int = 200, **context: Any) -> None:
        """Render ``templates/NAME`` (jinja2, autoescaped) with ``conn``, ``form`` and ``context``."""
        if self._templates is None:
            raise RuntimeError(f"page {self.page}: this site has no templates/ directory")
        text = self._templates.render(name, self, context)
        self.return_(text, status)

    def set_cookie(
        self,
        name: str,
        value: str,
        *,
        max_age: int | None = None,
        expires: datetime | None = None,
        path: str = "/",
        domain: str | None = None,
        secure: bool = False,
        http_only: bool = True,
        same_site: str | None = "Lax",
    ) -> None:
        """Ask the browser to store a cookie (RFC 6265 §4.1). Set cookies before returning.

        ``http_only`` (default on) hides the cookie from page scripts; ``same_site="Lax"``
        (default) keeps it off cross-site POSTs. A value outside RFC 6265's cookie-octets
        (spaces, ``;``, ``,``, quotes, non-ASCII) is refused: encode it first (e.g. with
        ``urllib.parse.quote``).
        """
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"a cookie name is an RFC 9110 token, got {name!r}")
        if not isinstance(value, str) or not _COOKIE_OCTETS.fullmatch(value):
            raise ValueError(
                f"cookie {name!r}: the value {value!r} has characters a cookie cannot hold "
                f'(space , ; \\ " or non-ASCII); encode it, e.g. urllib.parse.quote(value)'
            )
        if self.response is not None:
            raise ResponseAlreadySent(
                f"page {self.page}: set_cookie({name!r}) after the response was given; "
                f"set cookies before conn.return_()"
            )
        flags = (secure, http_only)
        attributes = _cookie_attributes(name, max_age, expires, path, domain, flags, same_site)
        parts = [f"{name}={value}", *attributes]
        self.add_set_cookie("; ".join(parts))

    def delete_cookie(self, name: str, path: str = "/") -> None:
        """Ask the browser to forget a cookie (an empty value that expired long ago)."""
        self.set_cookie(name, "", max_age=0, path=path, same_site=None, http_only=False)

    def finish(self) -> Response | None:
        """The response with the cookies added (the app calls this after the page ran)."""
        response = self.response
        if response is not None and self.set_cookie_fields:
            response.headers.extend(self.set_cookie_fields)
        return response

    def __repr__(self) -> str:
        return f"<Conn {self.method} {self.url} for {self.page}>"


__all__ += ["UploadedFile", "parse_cookies"]
