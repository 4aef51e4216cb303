"""Typed protocol errors: every way a request can be rejected, and the status it maps to.

Marlow §3.2: ``parseRequest :: Config -> [String] -> Either Response Request``: parsing
either yields a request or the response that explains why not. pyweb raises instead of
returning ``Left``, but keeps the idea: each rejection carries its HTTP status, and the
server turns it into a short error page and closes the connection (after a protocol
error the byte stream can no longer be trusted to be framed correctly, RFC 9112 §2.2).

The parser raises nothing but :class:`ProtocolError` and its subclasses, whatever the
input; the property-based tests in ``tests/protocol`` check that.
"""

from __future__ import annotations

__all__ = [
    "ProtocolError",
    "BadRequest",
    "BodyTooLarge",
    "TargetTooLong",
    "HeadersTooLarge",
    "NotImplementedByServer",
    "VersionNotSupported",
]


class ProtocolError(Exception):
    """A request the server will not process. ``status`` is the HTTP status to answer with.

    ``offending`` holds (a prefix of) the input that caused the error, for development-mode
    error pages and the error log; it is never shown in production mode.
    """

    status: int = 400
    accept: str = ""
    """The request's ``Accept`` value when its head could be read that far, else ``""``:
    the server answers the error as JSON to an API client
    (:func:`pyweb.protocol.negotiation.prefers_json`)."""
    content_type: str = ""
    """The request's ``Content-Type`` value, likewise."""

    def __init__(self, message: str, *, offending: bytes | str = b"", status: int | None = None):
        super().__init__(message)
        self.message = message
        if isinstance(offending, str):
            offending = offending.encode("latin-1", "replace")
        self.offending: bytes = offending[:200]
        if status is not None:
            self.status = status

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status})"


class BadRequest(ProtocolError):
    """400: the request does not follow the grammar of RFC 9110/9112."""

    status = 400


class BodyTooLarge(ProtocolError):
    """413: the body is larger than the configured limit (``Limits.max_body``)."""

    status = 413


class TargetTooLong(ProtocolError):
    """414: the request line (and so the target) is longer than ``Limits.max_request_line``."""

    status = 414


class HeadersTooLarge(ProtocolError):
    """431: the header block is larger than ``Limits.max_header_bytes`` or has more than
    ``Limits.max_headers`` fields."""

    status = 431


class NotImplementedByServer(ProtocolError):
    """501: a method (CONNECT) or transfer coding this server does not implement."""

    status = 501


class VersionNotSupported(ProtocolError):
    """505: an HTTP major version other than 1 (RFC 9110 §15.6.6)."""

    status = 505
