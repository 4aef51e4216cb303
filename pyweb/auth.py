"""Login: password hashes, who is logged in, and pages only members may see.

After the SMLserver book's authentication chapter: a user logs in once with a name and a
password, the server remembers it (there, a cookie checked against a ``WhileUsed`` cache of
password checks; here, the session, :mod:`pyweb.app.sessions`), and every private page asks
"who is this?" before answering::

    from pyweb import auth

    hashed = auth.hash_password("correct horse")     # store this, never the password
    auth.verify_password("correct horse", hashed)    # True
    auth.login("alice")                              # in the login page, after verifying
    auth.current_user()                              # "alice" (None for a stranger)
    auth.require_login()                             # top of a private script
    auth.logout()

``@login_required`` guards a service the way ``require_login()`` guards a script. A folder
of pages is guarded by one trap (:func:`pyweb.trap`): ``require_login()`` inside it.

Passwords are hashed with argon2id (argon2-cffi's defaults, RFC 9106's recommendation);
nothing here is hand-written cryptography. Failed logins are limited per user name and
client: the sixth failure within a minute is answered 429 (:class:`TooManyAttempts`), so
a password cannot be guessed by trying thousands.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from pyweb import cache
from pyweb.app.conn import Conn, current_conn

__all__ = [
    "hash_password",
    "verify_password",
    "login",
    "logout",
    "current_user",
    "require_login",
    "login_required",
    "safe_next",
    "TooManyAttempts",
    "MAX_FAILURES",
    "FAILURE_WINDOW",
]

_hasher = PasswordHasher()  # argon2id, argon2-cffi's recommended parameters
_USER_KEY = "_user"
MAX_FAILURES = 5
"""Failed logins allowed per user name and client within :data:`FAILURE_WINDOW`."""
FAILURE_WINDOW = 60.0
"""Seconds over which failures are counted."""
_failures = cache.get(
    cache.String, cache.List(cache.Real), "pyweb.auth.failures", cache.TimeOut(FAILURE_WINDOW)
)


class TooManyAttempts(Exception):
    """Too many failed logins for this user name from this client: a 429 page."""

    http_status = 429


def hash_password(password: str) -> str:
    """An argon2id hash of ``password`` (with its own random salt) to store for the user."""
    if not isinstance(password, str):
        raise TypeError(f"hash_password takes a str, got {type(password).__name__}")
    return _hasher.hash(password)


@functools.cache
def _dummy_hash() -> str:
    return _hasher.hash("a password no user has")


def _client(conn: Conn) -> str:
    host, _, _ = conn.peer.rpartition(":")
    return host or conn.peer


def _recent_failures(key: str) -> list[float]:
    now = time.time()
    return [t for t in _failures.lookup(key, []) if now - t < FAILURE_WINDOW]


def verify_password(password: str, hashed: str | None, *, user: str | None = None) -> bool:
    """Whether ``password`` matches ``hashed`` (from :func:`hash_password`).

    ``hashed=None`` is an unknown user: the answer is ``False`` after the same work as a
    real check (so the time taken does not tell which user names exist), and it counts as
    a failure. Inside a request, failures are counted per client and user name (pass
    ``user=`` on a login page): after :data:`MAX_FAILURES` failures within a minute, the
    next try raises :class:`TooManyAttempts` (a 429 page) without checking. A ``hashed``
    that is not an argon2 hash (a password stored in clear?) raises ``ValueError``.
    """
    if not isinstance(password, str) or not isinstance(hashed, str | None):
        raise TypeError("verify_password takes the password (str) and the stored hash (str)")
    try:
        conn: Conn | None = current_conn()
    except RuntimeError:
        conn = None  # in a notebook or a script: no rate limit
    key = f"{user or ''}|{_client(conn)}" if conn is not None else None
    if key is not None:
        failures = _recent_failures(key)
        if len(failures) >= MAX_FAILURES:
            raise TooManyAttempts(
                f"too many failed logins for {user or 'this client'}: wait a minute"
            )
    try:
        ok = _hasher.verify(hashed or _dummy_hash(), password) and hashed is not None
    except VerifyMismatchError:
        ok = False
    except InvalidHashError:
        raise ValueError(
            f"verify_password: {(hashed or '')[:12]!r}... is not a password hash from hash_password"
        ) from None
    except VerificationError:
        ok = False
    if not ok and key is not None:
        _failures.insert(key, [*failures, time.time()])
    return ok


def login(user: str) -> None:
    """Remember that this browser is ``user``: a new session id (no fixation), a new CSRF
    token, and ``current_user()`` returns ``user`` from now on."""
    if not isinstance(user, str) or not user:
        raise ValueError(f"login takes the user's name, a non-empty str; got {user!r}")
    conn = current_conn()
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
    ``next`` parameter must never send the user to another site (an open redirect)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return default
    if any(c in target for c in "\r\n\x00\\"):
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return default
    return target


def require_login() -> str:
    """The user's name; for a stranger, a 303 to the ``login_url`` setting (``/login``)
    with ``?next=`` this page, and the page stops here."""
    user = current_user()
    if user is not None:
        return user
    conn = current_conn()
    login_url = getattr(conn, "login_url", "/login")
    if conn.path == login_url.split("?", 1)[0]:
        raise RuntimeError(f"require_login() on the login page itself ({login_url}) would loop")
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
