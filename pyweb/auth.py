"""Login: password hashes, who is logged in, and pages only members may see.

After the SMLserver book's authentication chapter: a user logs in once with a name and a
password, the server remembers it (there, a cookie checked against a ``WhileUsed`` cache of
password checks; here, the session, :mod:`pyweb.app.sessions`), and every private page asks
"who is this?" before answering::

    from pyweb import auth

    hashed = await auth.hash_password("correct horse")     # store this, never the password
    await auth.verify_password("correct horse", hashed)    # True
    auth.login("alice")                              # in the login page, after verifying
    auth.current_user()                              # "alice" (None for a stranger)
    auth.require_login()                             # top of a private script
    auth.logout()

``@login_required`` guards a service the way ``require_login()`` guards a script. A folder
of pages is guarded by one trap (:func:`pyweb.trap`): ``require_login()`` inside it.

Passwords are hashed with argon2id (argon2-cffi's defaults, RFC 9106's recommendation);
nothing here is hand-written cryptography. A hash takes about half a second of CPU on
purpose, so in a page (on the event loop) :func:`hash_password` and :func:`verify_password`
are awaited and run in a worker thread (:func:`pyweb.runtime.to_thread`, Hop §2.4's
pluggable scheduler seam), at most a few at once: the loop goes on serving everybody else
(Marlow §3: one blocked page must not stall the server). Outside a request's code on
the loop (a script, a notebook cell, a worker thread, a module loaded at start-up) they
answer at once, as plain calls.

Failed logins are limited per account: the name as the user table stores it, compared
after Unicode NFKC normalisation and case folding (so ``Carol``, ``cArol`` and ``CAROL``
share one count, as they share one row under a case-insensitive collation). The sixth
failure within a minute is answered 429 with ``Retry-After`` (:class:`TooManyAttempts`),
so a password cannot be guessed by trying thousands.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import time
import unicodedata
from collections.abc import Awaitable, Callable, Generator
from contextvars import ContextVar
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlsplit

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from pyweb import cache, runtime
from pyweb.app.apierrors import HTTPError, wants_html, wants_json
from pyweb.app.conn import Conn, PageExit, current_conn
from pyweb.protocol.errorpage import error_response

__all__ = [
    "hash_password",
    "verify_password",
    "login",
    "logout",
    "current_user",
    "require_login",
    "login_required",
    "safe_next",
    "account_key",
    "TooManyAttempts",
    "MAX_FAILURES",
    "FAILURE_WINDOW",
]

_hasher = PasswordHasher()  # argon2id, argon2-cffi's recommended parameters
_USER_KEY = "_user"
_verified: ContextVar[tuple[Conn, str] | None] = ContextVar("pyweb_auth_verified", default=None)
"""The request and the stored name a ``verify_password`` of that request found right."""
MAX_FAILURES = 5
"""Failed logins allowed per account within :data:`FAILURE_WINDOW`."""
FAILURE_WINDOW = 60.0
"""Seconds over which failures are counted."""
_failures = cache.get(
    cache.String, cache.List(cache.Real), "pyweb.auth.failures", cache.TimeOut(FAILURE_WINDOW)
)


T = TypeVar("T")


class TooManyAttempts(PageExit):
    """Too many failed logins for this account: the page ends with a 429 page that carries
    ``Retry-After`` (:attr:`retry_after` seconds).

    A ``PageExit`` (like ``conn.exit()``): the 429 is already the request's answer, and a
    page's ``except Exception:`` around the login cannot turn it into "wrong password"."""

    http_status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Offloaded(Generic[T]):
    """The answer of :func:`hash_password` or :func:`verify_password` called on the event
    loop: ``await`` it (the hash runs in a worker thread meanwhile).

    It has no truth value and no text on purpose: ``if auth.verify_password(...)`` without
    ``await`` would otherwise be true for every password."""

    __slots__ = ("_start", "_name")

    def __init__(self, start: Callable[[], Awaitable[T]], name: str) -> None:
        self._start = start
        self._name = name

    def __await__(self) -> Generator[Any, None, T]:
        return self._start().__await__()

    def _not_awaited(self, *_args: object) -> Any:
        raise TypeError(
            f"auth.{self._name}(...) runs in a worker thread inside a page: write "
            f"'await auth.{self._name}(...)' (its answer is not known until then)"
        )

    __bool__ = __str__ = __format__ = __iter__ = __eq__ = _not_awaited
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<auth.{self._name}(...) not awaited>"


def _on_loop() -> bool:
    """Whether the caller is a request's code on the event loop's thread, where a hash
    would stall every other request. A notebook cell, a script, a worker thread, or a
    module imported at start-up is not: there the call simply runs."""
    try:
        current_conn()
        runtime.current()
    except Exception:  # no request, or sniffio finds no loop in this thread
        return False
    return True


_limits: dict[object, Any] = {}  # loop id -> the semaphore of its hashing threads
_HASHING_AT_ONCE = max(2, os.cpu_count() or 2)
"""Hashes at most running at once per loop: each takes 64 MiB and a core, so more would
only queue on the CPU while holding memory (and every worker thread of the loop)."""


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    rt = runtime.current()
    loop = rt.loop_id()
    semaphore = _limits.get(loop)
    if semaphore is None:
        if len(_limits) > 16:  # ended loops (tests run many): forget them
            _limits.clear()
        semaphore = _limits[loop] = rt.Semaphore(_HASHING_AT_ONCE)
    await semaphore.acquire()
    try:
        return await rt.to_thread(fn, *args)
    finally:
        semaphore.release()


def hash_password(password: str) -> str | Offloaded[str]:
    """An argon2id hash of ``password`` (with its own random salt) to store for the user.

    In a page: ``hashed = await auth.hash_password(password)`` (a worker thread does it)."""
    if not isinstance(password, str):
        raise TypeError(f"hash_password takes a str, got {type(password).__name__}")
    if not _on_loop():
        return _hasher.hash(password)

    async def offloaded() -> str:
        return await _in_thread(_hasher.hash, password)

    return Offloaded(offloaded, "hash_password")


@functools.cache
def _dummy_hash() -> str:
    return _hasher.hash("a password no user has")


def account_key(name: str) -> str:
    """The name failures are counted under: Unicode NFKC, then case folding (``"CAROL"``,
    ``"Carol"`` and ``"ＣＡＲＯＬ"`` are all ``"carol"``)."""
    return unicodedata.normalize("NFKC", name).casefold()


def _client(conn: Conn) -> str:
    host, _, _ = conn.peer.rpartition(":")
    return host or conn.peer


def _recent_failures(key: str) -> list[float]:
    now = time.time()
    return [t for t in _failures.lookup(key, []) if now - t < FAILURE_WINDOW]


def _check(password: str, hashed: str | None) -> bool:
    """The argon2 check itself (in a worker thread inside a page)."""
    try:
        return _hasher.verify(hashed or _dummy_hash(), password) and hashed is not None
    except VerifyMismatchError:
        return False
    except InvalidHashError:
        raise ValueError(
            f"verify_password: {(hashed or '')[:12]!r}... is not a password hash from hash_password"
        ) from None
    except VerificationError:
        return False


def verify_password(
    password: str, hashed: str | None, *, user: str | None = None
) -> bool | Offloaded[bool]:
    """Whether ``password`` matches ``hashed`` (from :func:`hash_password`). In a page:
    ``if await auth.verify_password(password, hashed, user=name): ...``.

    ``hashed=None`` is an unknown user: the answer is ``False`` after the same work as a
    real check (so the time taken does not tell which user names exist), and it counts as
    a failure. Inside a request, failures are counted per account: pass ``user=`` the name
    *as the user table stores it* (the row's, not the typed one; the typed one for an
    unknown user), compared by :func:`account_key`. After :data:`MAX_FAILURES` failures
    within a minute the next try ends the page with a 429 (:class:`TooManyAttempts`)
    without checking. A ``hashed`` that is not an argon2 hash (a password stored in
    clear?) raises ``ValueError``.
    """
    if not isinstance(password, str) or not isinstance(hashed, str | None):
        raise TypeError("verify_password takes the password (str) and the stored hash (str)")
    if user is not None and not isinstance(user, str):
        raise TypeError(f"verify_password: user= is the user's name (str), got {user!r}")
    try:
        conn: Conn | None = current_conn()
    except RuntimeError:
        conn = None  # in a notebook or a script: no rate limit
    key: str | None = None
    started = 0.0
    if conn is not None:
        key = account_key(user) if user else f"client {_client(conn)}"
        _refuse_if_locked(conn, key, user)
        # Counted as a failure before the check and taken back on success: concurrent
        # guesses (the check takes half a second) cannot all slip under the limit.
        started = _note_attempt(key)
    if not _on_loop():
        ok = _check(password, hashed)
        _settle(conn, key, started, ok, user)
        return ok

    async def offloaded() -> bool:
        ok = await _in_thread(_check, password, hashed)
        _settle(conn, key, started, ok, user)
        return ok

    return Offloaded(offloaded, "verify_password")


def _refuse_if_locked(conn: Conn, key: str, user: str | None) -> None:
    failures = _recent_failures(key)
    if len(failures) < MAX_FAILURES:
        return
    retry_after = max(1, math.ceil(FAILURE_WINDOW - (time.time() - min(failures))))
    message = f"too many failed logins for {user!r}: try again in {retry_after} s"
    if conn.response is None:  # the page has not answered: the 429 is its answer
        response = error_response(
            429, dev=conn.dev, detail=message, as_json=wants_json(conn.request)
        )
        response.headers.append(("Retry-After", str(retry_after)))
        conn.response = conn.own_response = response
    raise TooManyAttempts(message, retry_after)


def _note_attempt(key: str) -> float:
    now = time.time()
    _failures.insert(key, [*_recent_failures(key), now])
    return now


def _settle(conn: Conn | None, key: str | None, started: float, ok: bool, user: str | None) -> None:
    """After the check: a success takes its attempt back, and remembers (for
    :func:`login`) which stored name it was."""
    if conn is None or key is None or not ok:
        return
    _failures.insert(key, [t for t in _recent_failures(key) if t != started])
    if user:
        _verified.set((conn, user))


def login(user: str) -> None:
    """Remember that this browser is ``user``: a new session id (no fixation), a new CSRF
    token, and ``current_user()`` returns the name from now on.

    After a successful ``verify_password(..., user=stored_name)`` in the same request, the
    name kept is that stored one whenever ``user`` is the same account spelled otherwise
    (``login("CAROL")`` keeps ``"carol"``): a name compared later (``!= "root"``) is the
    table's spelling, not the visitor's."""
    if not isinstance(user, str) or not user:
        raise ValueError(f"login takes the user's name, a non-empty str; got {user!r}")
    conn = current_conn()
    verified = _verified.get()
    if verified is not None and verified[0] is conn and account_key(verified[1]) == account_key(user):
        user = verified[1]
    conn.session.rotate()
    conn.session[_USER_KEY] = user
    from pyweb.app import csrf

    csrf.new_token(conn)


def logout() -> None:
    """Forget the user and everything else in the session."""
    current_conn().session.clear()


def current_user() -> str | None:
    """The logged-in user's name, or ``None`` for a stranger."""
    conn = current_conn()
    user = conn.session.get(_USER_KEY)
    return user if isinstance(user, str) else None


def safe_next(target: str | None, default: str = "/") -> str:
    """``target`` if it is a path on this site (``/guest?page=2``), else ``default``: a
    ``next`` parameter must never send the user to another site (an open redirect).

    The path comes back percent-encoded (RFC 3986 §2.1: ``/€`` is ``/%E2%82%AC``), so it
    can always be sent in a ``Location`` field, whatever the visitor typed."""
    if not isinstance(target, str) or not target.startswith("/") or target.startswith(("//", "/\\")):
        return default
    if any(c in target for c in "\r\n\t\x00\\") or not target.isprintable():
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return default
    # Reserved and already-escaped characters are kept; everything else is escaped.
    return quote(target, safe="/?&=#%:@!$'()*+,;~-._[]")


def require_login() -> str:
    """The user's name; for a stranger, a 303 to the ``login_url`` setting (``/login``)
    with ``?next=`` this page, and the page stops here. A client that is not a browser
    (a JSON body, or an ``Accept`` without HTML, such as ``fetch``'s ``*/*``) gets 401 with
    ``WWW-Authenticate`` instead (:class:`pyweb.HTTPError`; JSON if it prefers JSON)."""
    user = current_user()
    if user is not None:
        return user
    conn = current_conn()
    login_url = getattr(conn, "login_url", "/login")
    if conn.path == login_url.split("?", 1)[0]:
        raise RuntimeError(f"require_login() on the login page itself ({login_url}) would loop")
    if not wants_html(conn.request):  # an API client: 401, it cannot fill in a login form
        raise HTTPError(
            401,
            f"log in first (the login page is {login_url})",
            headers=[("WWW-Authenticate", f'Cookie realm="pyweb", form-action="{login_url}"')],
        )
    here = conn.url if conn.method in ("GET", "HEAD") else conn.path
    sep = "&" if "?" in login_url else "?"
    conn.redirect(f"{login_url}{sep}next={quote(here, safe='/')}", 303)
    conn.exit()  # the page stops here (SMLserver's Web.exit)


def login_required(func: Callable[..., Any]) -> Any:
    """A service only logged-in users reach (strangers are sent to the login page)::

    @service("/secret")
    @login_required
    def secret(): ...
    """
    from pyweb.app.services import Service

    if isinstance(func, Service):  # written above @service: guard the bound service
        func.login_required = True
        return func
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def guarded(*args: Any, **kwargs: Any) -> Any:
            require_login()
            return await func(*args, **kwargs)

        return guarded

    @functools.wraps(func)
    def guarded_sync(*args: Any, **kwargs: Any) -> Any:
        require_login()
        return func(*args, **kwargs)

    return guarded_sync
