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

from collections.abc import Iterable
from typing import Any

from pyweb.protocol.errorpage import json_error_response, reason
from pyweb.protocol.negotiation import accept_weights, prefers_html, prefers_json
from pyweb.protocol.response import Response

from .conn import RequestError

__all__ = ["HTTPError", "wants_json", "wants_html", "json_error", "accept_weights"]

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


def wants_json(request: Any) -> bool:
    """Whether errors for this request should be JSON: a JSON body, or ``Accept`` ranks
    JSON above HTML (``+json`` types count as JSON). The decision is
    :func:`pyweb.protocol.negotiation.prefers_json`'s, the server's own errors' too."""
    return prefers_json(request.header("content-type"), request.header("accept"))


def wants_html(request: Any) -> bool:
    """Whether the client is a browser showing pages: no ``Accept`` at all, or one that
    names ``text/html`` (or XHTML), and no JSON body."""
    return prefers_html(request.header("content-type"), request.header("accept"))


def json_error(
    status: int,
    message: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Response:
    """The JSON answer to an error: ``{"error": message, "status": status}``, and
    ``"errors"`` (one object per bad field) when given. Never cached. (The server's own
    errors are drawn by the same :func:`~pyweb.protocol.errorpage.json_error_response`.)"""
    return json_error_response(status, message, errors=errors, headers=headers)
