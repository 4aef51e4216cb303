"""Sessions and their cookies: the browser's session loaded before the page and stored
after it (:mod:`pyweb.app.sessions` keeps them; Django's ``SessionMiddleware``).

Before: a request with a ``Cookie`` field gets its session (``conn.session``) from the
store. After: a session the page wrote to is stored and its id sent (``HttpOnly``,
``SameSite=Lax``, ``Secure`` over https), or, for a browser with no session, the CSRF
token made for its form goes in a signed cookie of its own; and the answer of a page that
read the session is kept private (:func:`pyweb.app.guards.headers.private`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from .. import csrf as tokens
from ..conn import Conn, parse_cookies
from ..sessions import COOKIE_NAME
from . import headers

__all__ = ["before", "after"]


async def before(site: Any, conn: Conn, cookies: str) -> None:
    """Load the session named by the request's cookies (the ``Cookie`` field, found once)."""
    jar = conn._cookies = parse_cookies(cookies) if cookies else {}
    cookie = jar.get(COOKIE_NAME)
    if cookie:
        conn.session_or_none = await site.sessions.load(cookie)


def after(site: Any, conn: Conn) -> Coroutine[Any, Any, None] | None:
    """After a page that answered and touched the session: the coroutine that stores it
    when the page wrote to it (the caller awaits it), else None, the cookies and cache
    headers added at once (a first visit's CSRF token is held, not stored)."""
    if conn.session_or_none is None or conn.response is None:
        return None
    if conn.session_or_none.modified:
        return _save(site, conn)
    _cookie(conn, tokens.COOKIE, tokens.first_visit_cookie(conn))
    headers.private(conn)
    return None


async def _save(site: Any, conn: Conn) -> None:
    """Store the session; tell the browser a new id, or, when no session was stored, the
    CSRF token made for it (its own cookie)."""
    assert conn.session_or_none is not None
    tokens.keep_cookie_token(conn)  # a new session keeps the token of a form shown before
    value = await site.sessions.save(conn.session_or_none)
    if value is not None:
        _cookie(conn, COOKIE_NAME, value)
    else:
        _cookie(conn, tokens.COOKIE, tokens.first_visit_cookie(conn))
    headers.private(conn)


def _cookie(conn: Conn, name: str, value: str | None) -> None:
    """Send the cookie ``name`` (``""`` drops it, None sends nothing); an answer that sets
    one is this browser's only (``Cache-Control: private, no-store``)."""
    if value is None:
        return
    parts = [f"{name}={value}", "Path=/", "HttpOnly", "SameSite=Lax"]
    if not value:
        parts.insert(2, "Max-Age=0")
    if getattr(conn.ctx, "scheme", "http") == "https":  # (a trusted proxy's word counts)
        parts.append("Secure")
    conn.add_set_cookie("; ".join(parts))
    headers.private(conn, "private, no-store")
