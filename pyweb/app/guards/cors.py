"""CORS: a preflight answered, and the ``Access-Control-Allow-*`` fields on every answer
to an origin the route's policy lets in (the Fetch standard's CORS protocol;
:mod:`pyweb.app.cors` holds the policies).

The first guard, because a preflight is an ``OPTIONS`` request that no route takes: the
method rules would refuse it with 405 and the browser would never send the real request.
A preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) is answered
here and goes no further: 204 naming what is allowed, or 403 (without the fields, so the
browser refuses) when the origin, the method or a header is not allowed. Every other
request runs the rest of the guards and its page, and its answer, an error page too, gets
``Access-Control-Allow-Origin`` (and ``-Credentials``, ``-Expose-Headers``) when its
``Origin`` is allowed, and ``Vary: Origin`` either way: a cache must not hand the answer
for one origin to another.

A route without a policy (the site's settings name no origin, the service none of its own)
gets nothing: the runner tests that itself and makes no call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pyweb.protocol.errorpage import error_response
from pyweb.protocol.response import Response

from ..cors import CORS
from . import headers

__all__ = ["before", "after", "around", "preflight"]

_PREFLIGHT_VARY = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"


def policy(site: Any, page: Any) -> CORS | None:
    """The route's policy: the service's own, else the site's (the runner's page has it
    already: ``_Page.cors``)."""
    return page.cors if page.cors is not None else site.cors


async def around(site: Any, ctx: Any, page: Any, params: dict[str, str] | None) -> Response:
    """The whole guard for a route with a policy: :func:`before` (a preflight's answer),
    else the rest of the pipeline and the page, then :func:`after`."""
    cors = policy(site, page)
    request = ctx.request
    origin = request.header("origin")
    answer = before(site, cors, request, origin, page.methods)
    if answer is not None:
        return answer
    response = await site.run_in_guards(ctx, page, params, False)
    return after(cors, origin, response)


def before(
    site: Any,
    cors: CORS | None,
    request: Any,
    origin: str | None,
    route_methods: tuple[str, ...] | None,
) -> Response | None:
    """The answer to a preflight (None: not one, the request goes on)."""
    if origin is None or request.method != "OPTIONS":
        return None
    wanted = request.header("access-control-request-method")
    if wanted is None:
        return None  # a plain OPTIONS request: the route's to answer
    if cors is None or not cors.origins:
        return None  # nothing allowed here: the method rules answer it as any OPTIONS
    return preflight(site, cors, request, origin, wanted, route_methods)


def preflight(
    site: Any,
    cors: CORS,
    request: Any,
    origin: str,
    wanted: str,
    route_methods: tuple[str, ...] | None,
) -> Response:
    """204 with what ``origin`` may do, or 403 saying what it may not."""
    methods = cors.methods_for(route_methods)
    asked = request.header("access-control-request-headers") or ""
    if not cors.allows_origin(origin):
        why = f"the origin {origin!r} is not allowed here"
    elif wanted not in methods:
        why = f"the method {wanted!r} is not allowed here (allowed: {', '.join(methods) or 'none'})"
    elif not cors.allows_headers(asked):
        why = f"a header of {asked!r} is not allowed here"
    else:
        fields = _allow_origin(cors, origin)
        fields.append(("Access-Control-Allow-Methods", ", ".join(methods)))
        if asked.strip():
            # The headers asked for, all allowed: named back (a "*" would not cover
            # Authorization, nor anything with credentials).
            fields.append(("Access-Control-Allow-Headers", asked.strip()))
        if cors.max_age is not None:
            fields.append(("Access-Control-Max-Age", str(cors.max_age)))
        fields.append(("Vary", _PREFLIGHT_VARY))
        return headers.after(site, Response(204, fields, b""))
    refused = error_response(403, dev=site.dev, detail=f"CORS preflight refused: {why}")
    refused.headers.append(("Vary", _PREFLIGHT_VARY))
    return headers.after(site, refused)


def after(cors: CORS | None, origin: str | None, response: Response) -> Response:
    """``response`` with the CORS fields for ``origin`` (a new Response: a page may hand
    back one object built once, which must not change)."""
    if cors is None or not cors.origins or type(response) is not Response:
        return response  # (a WebSocket handshake: CORS does not cover it)
    extra: list[tuple[str, str]] = []
    if origin is not None and cors.allows_origin(origin):
        extra = _allow_origin(cors, origin)
        if cors.expose:
            extra.append(("Access-Control-Expose-Headers", ", ".join(cors.expose)))
    fields = response.headers
    if not cors.any_origin:  # the answer depends on the origin: caches must know
        fields = _vary_origin(fields)
    if not extra and fields is response.headers:
        return response
    return dataclasses.replace(response, headers=[*fields, *extra])


def _allow_origin(cors: CORS, origin: str) -> list[tuple[str, str]]:
    if cors.any_origin:
        return [("Access-Control-Allow-Origin", "*")]
    fields = [("Access-Control-Allow-Origin", origin)]
    if cors.credentials:
        fields.append(("Access-Control-Allow-Credentials", "true"))
    return fields


def _vary_origin(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``fields`` with ``Origin`` in its ``Vary`` (the same list when it is there)."""
    for i, (name, value) in enumerate(fields):
        if name.lower() == "vary":
            listed = [v.strip().lower() for v in value.split(",")]
            if "origin" in listed or "*" in listed:
                return fields
            return [*fields[:i], (name, f"{value}, Origin"), *fields[i + 1 :]]
    return [*fields, ("Vary", "Origin")]
