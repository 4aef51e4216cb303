"""Error pages: the short HTML a client sees when something goes wrong.

Marlow §3.2: an invalid request "will result in an error response of some description,
with some automatically generated HTML describing the error in the body". pyweb keeps that
page short in production (status, reason, one sentence: nothing about the server's insides)
and, in development mode, adds what a programmer needs: the detail message, the offending
input and the traceback. Everything interpolated goes through :func:`html.escape`, because
the offending input is whatever a client sent.

Whether the connection closes after the page is the caller's decision (a protocol error
closes it, a 404 doesn't), so this module sets no ``Connection`` header.
"""

from __future__ import annotations

import html
import traceback
from http import HTTPStatus

from pyweb.protocol.response import Response

__all__ = ["error_response", "SENTENCES"]

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

_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{status} {reason}</title></head>
<body>
<h1>{status} {reason}</h1>
<p>{sentence}</p>
{extra}</body>
</html>
"""


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
) -> Response:
    """A short HTML page for ``status``. ``detail``, ``offending`` and the traceback of
    ``exc`` appear only when ``dev`` is true (they may reveal paths, code or other users'
    data, so production pages never carry them)."""
    reason = _reason(status)
    extra = ""
    if dev:
        parts = []
        if detail:
            parts.append(f"<p><strong>Detail:</strong> {html.escape(detail)}</p>\n")
        if offending:
            # repr() shows control bytes (CR, LF, NUL) visibly instead of rendering them
            parts.append(
                f"<p><strong>Offending input:</strong></p>\n<pre>{html.escape(repr(offending))}</pre>\n"
            )
        if exc is not None:
            tb = "".join(traceback.format_exception(exc))
            parts.append(f"<p><strong>Traceback:</strong></p>\n<pre>{html.escape(tb)}</pre>\n")
        extra = "".join(parts)
    page = _TEMPLATE.format(
        status=status,
        reason=html.escape(reason),
        sentence=html.escape(
            sentence or SENTENCES.get(status, f"The server answered with status {status}.")
        ),
        extra=extra,
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
        page.encode("utf-8"),
    )
