"""Security and cache headers, added on the way out of every answer (Django's
``SecurityMiddleware``; RFC 9111 §5.2.2.7 for ``private``).

* ``X-Content-Type-Options: nosniff`` on every answer, ``X-Frame-Options`` and
  ``Referrer-Policy`` on HTML (settings ``content_type_options``, ``frame_options``,
  ``referrer_policy``); a header the answer sets itself is left as it is;
* ``Strict-Transport-Security`` (setting ``hsts``) only on answers over https, a trusted
  proxy's ``X-Forwarded-Proto`` included (RFC 6797 §7.2: never over plain http);
* ``Cache-Control: private`` and ``Vary: Cookie`` on the answer of a page that read the
  session (:func:`private`): a shared cache must not hand one visitor's page to another.

The lists of headers are made once per site (:func:`security_headers`); an answer whose
last header is one of their very objects has been secured already and is not looked at
again (docs/performance.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pyweb.protocol.response import Response

from ..conn import Conn

__all__ = ["before", "after", "private", "hsts", "security_headers", "hsts_header"]


USUAL_TYPES = 64
"""How many ``Content-Type`` fields a site keeps the security headers of (the types its
pages answer with: a handful; a page making up types costs the few tests of the others)."""


def before() -> None:
    """Nothing to do before the page."""


def after(site: Any, response: Response) -> Response:
    """The response with the security headers it does not set itself. A new Response: a
    page may return one object built once, which must not change. (A response that conn
    built for this request has them already, added in place by the runner.)"""
    fields = response.headers
    if fields:
        last = fields[-1]
        if last is site.html_extra_last or last is site.other_extra_last:
            return response  # the site's own header objects: secured already
    extra = missing(site, fields)
    if not extra:
        return response
    if type(response) is not Response:  # a WebSocketUpgrade stays one
        return dataclasses.replace(response, headers=[*fields, *extra])
    return Response(response.status, [*fields, *extra], response.body)


def missing(site: Any, fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The security headers ``fields`` lacks."""
    if len(fields) == 1:
        # The usual answer (conn.return_, a service's value) has its type and nothing
        # else, so it lacks every security header: the lists made once do, found by that
        # one field after the first answer of its type (one dictionary lookup).
        extra = site.usual_extra_headers.get(fields[0])
        if extra is not None:
            return extra
        name, value = fields[0]
        if name == "Content-Type":
            html = value.startswith("text/html")
            extra = site.html_extra_headers if html else site.other_extra_headers
            if len(site.usual_extra_headers) < USUAL_TYPES:
                site.usual_extra_headers[fields[0]] = extra
            return extra
    names = {name.lower() for name, _ in fields}
    html = False
    for name, value in fields:
        if name.lower() == "content-type":
            html = value.startswith("text/html")
            break
    return [
        (name, value)
        for name, value, html_only in site.security_headers
        if (html or not html_only) and name.lower() not in names
    ]


def hsts(field: tuple[str, str], response: Response) -> Response:
    """``response`` with ``Strict-Transport-Security`` (the site asks only over https)."""
    if any(name.lower() == "strict-transport-security" for name, _ in response.headers):
        return response
    return dataclasses.replace(response, headers=[*response.headers, field])


def private(conn: Conn, value: str = "private") -> None:
    """The answer of a page that read the session is this browser's own: no shared cache
    keeps it (``Cache-Control``, unless the page chose one), and a cache that keeps it for
    the browser keys it by the cookie (``Vary: Cookie``)."""
    response = conn.response
    if response is None:
        return
    names = {name.lower(): field for name, field in response.headers}
    extra = []
    if "cache-control" not in names:
        extra.append(("Cache-Control", value))
    vary = names.get("vary", "")
    if "cookie" not in vary.lower() and vary != "*":
        extra.append(("Vary", "Cookie"))
    if not extra:
        return
    if response is conn.own_response:
        response.headers.extend(extra)
    else:  # (the page's own object may be shared: a new one)
        conn.response = dataclasses.replace(response, headers=[*response.headers, *extra])


def hsts_header(max_age: int | None) -> tuple[str, str] | None:
    """The ``Strict-Transport-Security`` field of the ``hsts`` setting (None: not set)."""
    if not max_age:
        return None
    if not isinstance(max_age, int) or max_age < 0:
        raise ValueError(f"hsts is a max-age in seconds, got {max_age!r}")
    return ("Strict-Transport-Security", f"max-age={max_age}")


def security_headers(
    content_type_options: str | None, frame_options: str | None, referrer_policy: str | None
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
