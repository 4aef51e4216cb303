"""CSRF protection, on by default: a POST must prove it comes from one of the site's forms.

Cross-site request forgery: a page on another site holds a form whose ``action`` is this
site's ``/guest_add``; a visitor who is logged in here opens that page, the form is posted
(a script can do it unseen), and the browser sends this site's cookies with it. The guest
book gets an entry the visitor never wrote.

The defence (as in Django, on by default): every form of this site carries a secret token
that belongs to the visitor's session, and every POST, PUT, PATCH and DELETE to a page or a
service must send it back, as the form field ``csrf_token`` or the header ``X-CSRF-Token``
(for ``fetch``). The other site cannot read the token (the same-origin policy keeps this
site's pages from it), so it cannot forge the POST. A request without the right token gets
a 403 page that says what is missing, and nothing runs.

Putting the token in a form:

* ``pyweb.html.FORM(..., method="post")`` adds the hidden field itself;
* a quotation: ``qq(f'<form method="post">{csrf_field()}...')`` (``pyweb.csrf_field()``);
* a template: ``{{ csrf_field() }}``;
* JavaScript: ``fetch(url, {method: "POST", headers: {"X-CSRF-Token": token}})`` with the
  token from :func:`csrf_token` written into the page.

Exemptions: the setting ``csrf_exempt`` (URL patterns, as for traps: ``"/api/*"``) and
``@service(..., csrf=False)``, for APIs authenticated by a token rather than a cookie.
"""

from __future__ import annotations

import hmac
import secrets
from fnmatch import fnmatchcase

from pyweb import html
from pyweb.quot import safe

from .conn import Conn, _current, current_conn

__all__ = [
    "csrf_token",
    "csrf_field",
    "FIELD",
    "HEADER",
    "UNSAFE_METHODS",
    "matches",
    "missing_token",
]

FIELD = "csrf_token"
HEADER = "x-csrf-token"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_KEY = "_csrf_token"  # where the token lives in the session


def matches(pattern: str, path: str) -> bool:
    """URL pattern matching for ``csrf_exempt`` and traps: ``*`` matches any characters
    (``/`` too), and ``/admin/*`` also matches ``/admin`` itself."""
    if fnmatchcase(path, pattern):
        return True
    return pattern.endswith("/*") and path == pattern[:-2]


def csrf_token(conn: Conn | None = None) -> str:
    """The session's CSRF token, created (with the session) on first use."""
    conn = conn or current_conn()
    session = conn.session
    token = session.get(_KEY)
    if not isinstance(token, str):
        token = session[_KEY] = secrets.token_urlsafe(32)
    return token


def new_token(conn: Conn) -> None:
    """A fresh token (on login, so a token seen before login is worth nothing after it)."""
    if _KEY in conn.session:
        conn.session[_KEY] = secrets.token_urlsafe(32)


def csrf_field(conn: Conn | None = None) -> object:
    """The hidden ``<input>`` carrying the token, as safe HTML for a quotation or template."""
    token = csrf_token(conn)
    return safe(f'<input type="hidden" name="{FIELD}" value="{token}">')


def _field_for_current_request() -> object | None:
    conn = _current.get(None)
    return csrf_field(conn) if conn is not None else None


html.post_form_field = _field_for_current_request


def missing_token(conn: Conn) -> str | None:
    """Why this request fails the check (a sentence), or ``None`` when it passes."""
    sent = conn.headers.get(HEADER) or conn.form.get(FIELD)
    if not sent or not isinstance(sent, str):
        return (
            f"this {conn.method} carries no CSRF token (the form field {FIELD} or the "
            f"header X-CSRF-Token)"
        )
    expected = conn.session.get(_KEY)
    if not isinstance(expected, str):
        return (
            f"this {conn.method} carries a CSRF token but the browser has no session it "
            f"belongs to (no session cookie, or the session expired)"
        )
    if not hmac.compare_digest(sent.encode(), expected.encode()):
        return f"this {conn.method} carries a CSRF token that is not this session's"
    return None


HOW_TO_ADD = (
    "Every POST, PUT, PATCH and DELETE must carry the session's CSRF token. "
    "In a template, put {{ csrf_field() }} inside the <form>; in a quotation, "
    '{csrf_field()} (from pyweb import csrf_field); pyweb.html.FORM(..., method="post") '
    "adds it itself. From JavaScript, send the header X-CSRF-Token with the value of "
    "pyweb.csrf_token(). An API authenticated another way can opt out: "
    "@service(..., csrf=False) or the csrf_exempt setting."
)
