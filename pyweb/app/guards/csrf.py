"""CSRF: a request that may change something carries the session's token
(:mod:`pyweb.app.csrf` has the tokens; this is the check, for every route).

Every method but GET, HEAD, OPTIONS and TRACE needs the token, from the body's form or the
``X-CSRF-Token`` header (Django's rule); the ``csrf_exempt`` setting and
``@service(..., csrf=False)`` lift it. It runs after the session is loaded (the token is
the session's) and before the traps and the page: a refused request runs nothing.
"""

from __future__ import annotations

from typing import Any

from pyweb.protocol.response import Response

from .. import csrf as tokens
from ..conn import Conn, RequestError
from ..errorpages import _refusal

__all__ = ["before", "after", "needed"]


def needed(check: bool, method: str) -> bool:
    """Whether a request with ``method`` to a route that checks (``check``) needs the token.
    (The runner's first look, for a request with no cookie, query or body, is this same
    test written inline: a GET costs no call.)"""
    return check and method not in tokens.SAFE_METHODS


def before(site: Any, conn: Conn, check: bool) -> Response | None:
    """The 403 for a request that needs the token and lacks it; None when it may go on."""
    if not needed(check, conn.method) or _exempt(site, conn.path):
        return None
    why = tokens.missing_token(conn)
    if why is None:
        return None
    detail = why + "."
    if site.dev:
        detail += " " + tokens.HOW_TO_ADD
    else:
        detail += " Reload the page that has the form and send it again."
    return _refusal(conn, RequestError(403, detail))


def _exempt(site: Any, path: str) -> bool:
    return any(tokens.matches(pattern, path) for pattern in site.csrf_exempt)


def after() -> None:
    """Nothing to do after the page."""
