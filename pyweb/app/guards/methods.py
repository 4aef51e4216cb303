"""Method rules: a route answers only the methods it takes (RFC 9110 §15.5.6).

A service names its methods (``@service("/items", methods=["POST"])``; by default GET and
HEAD, or POST for one that reads a JSON body); a static file takes GET and HEAD; a page
that changes something says ``conn.require_method("POST")`` (it needs its ``conn`` first,
so that rule is the page's own). Any other method is answered 405 with ``Allow`` before
anything else runs: no body read, no session loaded. A GET and a POST service may share a
path; the routing gives each method its own service, and ``Allow`` names every method some
service of the path answers. An API client (:func:`pyweb.app.apierrors.wants_json`) gets
the 405 as JSON.
"""

from __future__ import annotations

from typing import Any

from pyweb.protocol.response import Response

__all__ = ["before", "after", "refuse"]


def before(
    site: Any, request: Any, allowed: tuple[str, ...] | None, allow: str | None = None
) -> Response | None:
    """A 405 when the request's method is not one of ``allowed`` (None: the route takes
    any); ``allow`` is its ``Allow`` field when the path answers more than ``allowed``.
    (The runner makes this test itself, and calls :func:`refuse` only for a method the
    route does not take: a route that takes the method costs no call.)"""
    if allowed is None or request.method in allowed:
        return None
    return refuse(site, request, allowed, allow)


def refuse(
    site: Any, request: Any, allowed: tuple[str, ...], allow: str | None = None
) -> Response:
    """The 405 for the request's method, with ``Allow`` (``allow``, or ``allowed``)."""
    return site.not_allowed(request.method, allow or ", ".join(allowed), request)


def after() -> None:
    """Nothing to do after the page."""
