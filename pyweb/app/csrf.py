"""CSRF protection, on by default: a POST must prove it comes from one of the site's forms.

Cross-site request forgery: a page on another site holds a form whose ``action`` is this
site's ``/guest_add``; a visitor who is logged in here opens that page, the form is posted
(a script can do it unseen), and the browser sends this site's cookies with it. The guest
book gets an entry the visitor never wrote.

The defence (as in Django, on by default): every form of this site carries a secret token
that belongs to the visitor's session, and every request whose method may change something
(every method but GET, HEAD, OPTIONS and TRACE, as in Django: POST, PUT, PATCH, DELETE, but
also PROPFIND or any other) to a page or a service must send it back, as the form field
``csrf_token`` of the request's *body* or the header ``X-CSRF-Token`` (for ``fetch``). A
token in the query string is never looked at: a URL ends up in logs, in the history and in
the ``Referer`` of the next page, so a token there would leak. The other site cannot read the token (the same-origin policy keeps this
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

Masked per response (BREACH): the session's token is a secret that never appears in a page
as it is. Each :func:`csrf_token` (and so each hidden field) is the secret XOR-ed with a
fresh random mask, the mask written before it (:func:`mask`), so no two pages carry the
same token and a compressed page's size tells an attacker nothing about the secret
(Django masks its tokens the same way). The check unmasks (:func:`unmask`); a token sent
as the bare secret, the form of a page rendered before masking, is accepted too: it is
the same secret, and accepting it leaks nothing.

Where the token is kept (docs/csrf.md, "Where the token lives"): in the visitor's session
when there is one (a stored session, or one the page stores now). A first visit with no
session gets a random token in a cookie of its own instead, ``pyweb_csrf``, signed with the
site's key (:mod:`pyweb.signing`), ``HttpOnly`` and ``SameSite=Lax``; a POST from a browser
without a session must send back the token inside that cookie (a signed double-submit
token). So a guest book's first visit stores nothing on the server. A browser that has a
session is checked against the session's token only, as before.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from fnmatch import fnmatchcase

from pyweb import html, signing
from pyweb.quot import safe

from .conn import Conn, _current, current_conn

__all__ = [
    "csrf_token",
    "csrf_field",
    "COOKIE",
    "FIELD",
    "HEADER",
    "SAFE_METHODS",
    "UNSAFE_METHODS",
    "is_unsafe",
    "matches",
    "missing_token",
    "mask",
    "unmask",
]

FIELD = "csrf_token"
HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
"""The methods that must not change anything (RFC 9110 §9.2.1): the only ones without a token."""
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""The usual methods that need the token; any method not in :data:`SAFE_METHODS` does too."""
_KEY = "_csrf_token"  # where the token lives in the session
COOKIE = "pyweb_csrf"  # where a browser without a session keeps it (signed)
_SALT = "pyweb.csrf"  # (a session id's signature is no CSRF cookie's, and the reverse)


def matches(pattern: str, path: str) -> bool:
    """URL pattern matching for ``csrf_exempt`` and traps: ``*`` matches any characters
    (``/`` too), and ``/admin/*`` also matches ``/admin`` itself."""
    if fnmatchcase(path, pattern):
        return True
    return pattern.endswith("/*") and path == pattern[:-2]


def is_unsafe(method: str) -> bool:
    """Whether a request with ``method`` must carry the token: any method but the safe ones
    (a method this list does not know, PROPFIND or MKCOL, may change something)."""
    return method not in SAFE_METHODS


def csrf_token(conn: Conn | None = None) -> str:
    """The browser's CSRF token, masked afresh on each call (see the module doc): what a
    page writes into a form or hands to JavaScript. The secret under it is the session's
    (made on first use), or, for a browser with no session, the token of its
    ``pyweb_csrf`` cookie (made on first use, and the cookie sent with the response unless
    the page stores a session after all)."""
    return mask(_secret(conn or current_conn()))


def mask(secret: str) -> str:
    """``secret`` masked with fresh random bytes: URL-safe base64 of the mask followed by
    the secret XOR the mask (twice the secret's length, before base64)."""
    plain = secret.encode("ascii")
    pad = secrets.token_bytes(len(plain))
    masked = bytes(a ^ b for a, b in zip(plain, pad, strict=True))
    return base64.urlsafe_b64encode(pad + masked).rstrip(b"=").decode("ascii")


def unmask(sent: str) -> str:
    """The secret under a token :func:`mask` made; any other string as it is (the bare
    secret of a page rendered before tokens were masked, or a wrong token: the check
    compares either with the secret)."""
    if len(sent) < 80:  # a secret is 43 characters, its masked form 115
        return sent
    try:
        raw = base64.urlsafe_b64decode(sent + "=" * (-len(sent) % 4))
    except (binascii.Error, ValueError):
        return sent
    half, odd = divmod(len(raw), 2)
    if odd:
        return sent
    pad, masked = raw[:half], raw[half:]
    return bytes(a ^ b for a, b in zip(masked, pad, strict=True)).decode("latin-1")


def _secret(conn: Conn) -> str:
    """The session's (or the CSRF cookie's) token itself, unmasked."""
    session = conn.session
    token = session.get(_KEY)
    if isinstance(token, str):
        return token
    if session.sid is not None or session.modified:  # a session that is, or will be, stored
        token = session[_KEY] = secrets.token_urlsafe(32)
        return token
    # No session: nothing is stored for the token alone. It is held in the session for
    # this request (stored with it if the page writes to the session later) and otherwise
    # goes to the browser in a signed cookie (first_visit_cookie).
    token = _cookie_token(conn)
    if token is None:
        token = session.cookie_token = secrets.token_urlsafe(32)
    session.hold(_KEY, token)
    return token


def _cookie_token(conn: Conn) -> str | None:
    """The token in the request's ``pyweb_csrf`` cookie; None if missing or not signed by
    this site for this use."""
    value = conn.cookies.get(COOKIE)
    if not value:
        return None
    try:
        return signing.signer(_SALT).unsign(value).decode("ascii")
    except (signing.BadSignature, UnicodeDecodeError):
        return None


def first_visit_cookie(conn: Conn) -> str | None:
    """The value of the ``pyweb_csrf`` cookie this response sets (the token, signed), or
    None: no token was made for a browser without a session, or the session was stored
    with the token in it. The site asks after saving the session."""
    session = conn.session_or_none
    if session is None or session.sid is not None:
        return None
    token = session.cookie_token
    if token is None or session.get(_KEY) != token:  # (the page cleared the session)
        return None
    return signing.signer(_SALT).sign(token).decode("ascii")


def keep_cookie_token(conn: Conn) -> None:
    """A session stored for the first time takes the token of the browser's ``pyweb_csrf``
    cookie, so a form shown before the session existed still posts. (The site calls this
    before saving; a session with a token of its own, or being emptied, is left alone.)"""
    session = conn.session_or_none
    if (
        session is not None
        and session.sid is None
        and session.modified
        and session
        and _KEY not in session
        and COOKIE in conn.cookies
    ):
        token = _cookie_token(conn)
        if token is not None:
            session[_KEY] = token


def new_token(conn: Conn) -> None:
    """A fresh token in the session (on login, so a token seen before login is worth
    nothing after it), and a ``pyweb_csrf`` cookie from before the login dropped."""
    conn.session[_KEY] = secrets.token_urlsafe(32)
    if COOKIE in conn.cookies:
        conn.add_set_cookie(f"{COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax")


def csrf_field(conn: Conn | None = None) -> object:
    """The hidden ``<input>`` carrying the token, as safe HTML for a quotation or template."""
    token = csrf_token(conn)
    return safe(f'<input type="hidden" name="{FIELD}" value="{token}">')


def _field_for_current_request() -> object | None:
    conn = _current.get(None)
    return csrf_field(conn) if conn is not None else None


html.post_form_field = _field_for_current_request


def missing_token(conn: Conn) -> str | None:
    """Why this request fails the check (a sentence), or ``None`` when it passes. The token
    is read from the header or from the body's form only: on an unsafe method ``conn.form``
    holds the body alone (never the query string; see :class:`~pyweb.app.conn.Conn`)."""
    sent = conn.headers.get(HEADER) or conn.form.get(FIELD)
    if not sent or not isinstance(sent, str) or not sent.isascii():
        return (
            f"this {conn.method} carries no CSRF token (the form field {FIELD} or the "
            f"header X-CSRF-Token)"
        )
    session = conn.session_or_none
    if session is not None and session.sid is not None:
        expected = session.get(_KEY)  # a browser with a session: the session's token only
    else:
        expected = _cookie_token(conn)  # one without: the token its cookie holds
    if not isinstance(expected, str):
        return (
            f"this {conn.method} carries a CSRF token but the browser has no session it "
            f"belongs to (no session or CSRF cookie, or the session expired)"
        )
    if not hmac.compare_digest(unmask(sent).encode("latin-1"), expected.encode()):
        return f"this {conn.method} carries a CSRF token that is not this session's"
    return None


HOW_TO_ADD = (
    "Every request but a GET, HEAD, OPTIONS or TRACE must carry the session's CSRF token, "
    "in the body or a header (never in the URL). "
    "In a template, put {{ csrf_field() }} inside the <form>; in a quotation, "
    '{csrf_field()} (from pyweb import csrf_field); pyweb.html.FORM(..., method="post") '
    "adds it itself. From JavaScript, send the header X-CSRF-Token with the value of "
    "pyweb.csrf_token(). An API authenticated another way can opt out: "
    "@service(..., csrf=False) or the csrf_exempt setting."
)
