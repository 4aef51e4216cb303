"""Errors for API clients: ``HTTPError``, and whether a client wants JSON or HTML.

Hop §2.1 binds a service to a URL and lets it answer anything; a program that calls a
service (a page's ``fetch``, a phone app, ``curl``) is not a browser, and an HTML error page
is noise to it. This module decides, from the request alone, what kind of client is asking:

* :func:`wants_json`: the request body is JSON (``Content-Type: application/json`` or
  ``+json``), or ``Accept`` ranks ``application/json`` above ``text/html`` (RFC 9110
  §12.5.1, with its ``q`` weights). Such a client gets its errors as
  ``{"error": "...", ...}`` (:func:`json_error`).
* :func:`wants_html`: a browser. A request with no ``Accept`` at all counts as one (a
  bare client keeps the old behaviour); ``Accept: */*`` (``fetch``, ``curl``) does not,
  so ``@auth.login_required`` answers such a client 401, not a redirect to the login form.

:class:`HTTPError` is how a page or a service answers a status on purpose::

    raise pyweb.HTTPError(404, "no to-do 17")

It stops the page, and the client gets the status with the message (JSON for an API
client, a short styled page for a browser), in production too: the message is meant for
the client, so never put a secret in it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pyweb.protocol.errorpage import reason
from pyweb.protocol.response import Response

from .conn import RequestError

__all__ = ["HTTPError", "wants_json", "wants_html", "json_error", "accept_weights"]

_JSON_TYPES = ("application/json",)
_HTML_TYPES = ("text/html", "application/xhtml+xml")


class HTTPError(RequestError):
    """Answer ``status`` (400 to 599) with ``message``: ``raise HTTPError(404, "no such item")``.

    ``message`` defaults to the status's reason phrase (``"Not Found"``). ``headers`` are
    added to the answer (``[("Retry-After", "30")]``). A status outside 400..599 is a
    ``ValueError`` naming it: a redirect is ``conn.redirect``, a success a return value.
    """

    def __init__(
        self,
        status: int,
        message: str | None = None,
        *,
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise ValueError(
                f"HTTPError takes an error status from 400 to 599, got {status!r} "
                "(a redirect is conn.redirect(url), a success is a return value)"
            )
        if message is not None and not isinstance(message, str):
            raise TypeError(f"HTTPError's message is a str, got {message!r:.60}")
        super().__init__(status, message if message else reason(status))
        self.status = status
        self.headers = [(str(n), str(v)) for n, v in headers]
        for name, value in self.headers:
            if any(c in name + value for c in "\r\n\x00"):
                raise ValueError(f"HTTPError header {name!r}: {value!r} holds CR, LF or NUL")


def accept_weights(accept: str) -> dict[str, float]:
    """``Accept``'s media ranges and their weights: ``"text/html;q=0.8, */*"`` →
    ``{"text/html": 0.8, "*/*": 1.0}``. A malformed weight counts as 0 (not wanted)."""
    found: dict[str, float] = {}
    for item in accept.split(","):
        media, *params = item.split(";")
        media = media.strip().lower()
        if not media:
            continue
        weight = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0
                if not 0.0 <= weight <= 1.0:
                    weight = 0.0
        found[media] = max(weight, found.get(media, 0.0))
    return found


def _best(weights: dict[str, float], types: tuple[str, ...]) -> float:
    return max(weights.get(t, 0.0) for t in types)


def _json_body(request: Any) -> bool:
    content_type = request.header("content-type") or ""
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime in _JSON_TYPES or mime.endswith("+json")


def wants_json(request: Any) -> bool:
    """Whether errors for this request should be JSON: a JSON body, or ``Accept`` ranks
    JSON above HTML (``+json`` types count as JSON)."""
    if _json_body(request):
        return True
    accept = request.header("accept")
    if not accept:
        return False
    weights = accept_weights(accept)
    as_json = max(
        [_best(weights, _JSON_TYPES)] + [w for m, w in weights.items() if m.endswith("+json")]
    )
    return as_json > 0 and as_json > _best(weights, _HTML_TYPES)


def wants_html(request: Any) -> bool:
    """Whether the client is a browser showing pages: no ``Accept`` at all, or one that
    names ``text/html`` (or XHTML), and no JSON body."""
    if _json_body(request):
        return False
    accept = request.header("accept")
    if not accept:
        return True
    weights = accept_weights(accept)
    html = _best(weights, _HTML_TYPES)
    return html > 0 and not wants_json(request)


def json_error(
    status: int,
    message: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Response:
    """The JSON answer to an error: ``{"error": message}`` with the status, and
    ``"errors"`` (one object per bad field) when given. Never cached."""
    data: dict[str, Any] = {"error": message, "status": status}
    if errors is not None:
        data["errors"] = errors
    body = json.dumps(data, ensure_ascii=False).encode("utf-8")
    return Response(
        status,
        [("Content-Type", "application/json"), ("Cache-Control", "no-store"), *headers],
        body,
    )
