"""Error pages: the short HTML a client sees when something goes wrong.

Marlow §3.2: an invalid request "will result in an error response of some description,
with some automatically generated HTML describing the error in the body". pyweb keeps that
page short in production (status, reason, one sentence: nothing about the server's insides)
and, in development mode, adds what a programmer needs: the detail message, the offending
input and the traceback. Everything interpolated goes through :func:`html.escape`, because
the offending input is whatever a client sent.

An API client (:func:`pyweb.protocol.negotiation.prefers_json`) gets the same error as JSON
instead, ``{"error": "...", "status": 404}`` (:func:`json_error_response`), with the same
rule: the detail in development mode only.

Whether the connection closes after the page is the caller's decision (a protocol error
closes it, a 404 doesn't), so this module sets no ``Connection`` header.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any

from pyweb.protocol.errorhtml import page, traceback_html
from pyweb.protocol.response import Response

__all__ = ["error_response", "json_error_response", "reason", "SENTENCES"]

SENTENCES: dict[int, str] = {
    400: "The server could not understand the request.",
    403: "You are not allowed to see this resource.",
    404: "Nothing here answers to this address.",
    405: "This resource does not accept that method.",
    408: "The request took too long to arrive.",
    413: "The request body is larger than this server accepts.",
    414: "The request target is longer than this server accepts.",
    416: "The requested range is not part of this resource.",
    431: "The request header fields are too large.",
    500: "The server met an error while answering this request.",
    501: "The server does not implement what this request needs.",
    503: "The server is not available right now.",
    505: "The server only speaks HTTP/1.0 and HTTP/1.1.",
}
"""The one sentence shown under the status line of each error page."""


def reason(status: int) -> str:
    """The reason phrase of ``status`` ("Not Found"), "Error" for an unknown one."""
    return _reason(status)


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def error_response(
    status: int,
    *,
    dev: bool = False,
    detail: str = "",
    exc: BaseException | None = None,
    offending: bytes = b"",
    sentence: str | None = None,
    own: Callable[[str], bool] | None = None,
    display: Callable[[str], str] = str,
    body_html: str = "",
    title: str | None = None,
    as_json: bool = False,
) -> Response:
    """A short styled HTML page for ``status`` (:func:`pyweb.protocol.errorhtml.page`), or
    with ``as_json`` the same error as JSON for an API client (:func:`json_error_response`:
    the detail in development mode, else ``sentence`` or the reason phrase).
    ``detail``, ``offending`` and the traceback of ``exc`` appear only when ``dev`` is true
    (they may reveal paths, code or other users' data, so production pages never carry
    them; a production 500 says the details are in the error log). ``own(filename)`` says
    which frames are the site's (shown first, with source); ``body_html`` is extra HTML
    (already escaped) shown in both modes."""
    if as_json:
        return json_error_response(status, detail if dev and detail else sentence or _reason(status))
    parts = [body_html]
    if dev:
        if detail:
            parts.append(
                f'<p class="detail"><strong>Detail:</strong> {html.escape(detail)}</p>\n'
            )
        if offending:
            # repr() shows control bytes (CR, LF, NUL) visibly instead of rendering them
            parts.append(f"<h2>Offending input</h2>\n<pre>{html.escape(repr(offending))}</pre>\n")
        if exc is not None:
            parts.append(traceback_html(exc, own or (lambda filename: False), display))
    elif status >= 500:
        parts.append(
            '<p class="log">The details are in the server\'s error log. (Development mode, '
            "<code>--dev</code>, shows them on this page.)</p>\n"
        )
    text = page(
        status,
        title or _reason(status),
        sentence or SENTENCES.get(status, f"The server answered with status {status}."),
        body_html="".join(parts),
    )
    return Response(
        status,
        [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Cache-Control", "no-store"),
            # Every response says nosniff, the server's own error pages too (a site adds it
            # to its pages; these are made before or without a site).
            ("X-Content-Type-Options", "nosniff"),
        ],
        text.encode("utf-8"),
    )


def json_error_response(
    status: int,
    message: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Response:
    """An error for an API client: ``{"error": message, "status": status}``, and
    ``"errors"`` (one object per bad field) when given. Never cached, never sniffed."""
    data: dict[str, Any] = {"error": message, "status": status}
    if errors is not None:
        data["errors"] = errors
    body = json.dumps(data, ensure_ascii=False).encode("utf-8")
    return Response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
            *headers,
        ],
        body,
    )
