"""The messages the request parser produces: what one HTTP/1.1 request looks like as data.

(h11 calls them events; pyweb says *messages*, because in pyweb an event is a CML event,
``pyweb.events``.) A request arrives as one :class:`Request` (the head), then zero or more
:class:`Data` messages (the body, de-chunked), then one :class:`EndOfMessage`. On a persistent connection
the next :class:`Request` follows (pipelining, RFC 9112 §9.3.2). :data:`NEED_DATA` means
"feed me more bytes"; :class:`ConnectionClosed` means the client closed the connection
cleanly between two requests.

This mirrors Marlow's ``Request`` record (§3.2: command, URI, version, headers) and the
request object of Hop's "Request" stage (§2.2). Text is ``str`` decoded as Latin-1, so every
byte maps to exactly one character and nothing can fail to decode (RFC 9110 §5.5: field
values are historically ISO-8859-1; anything else is opaque octets).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Request", "Data", "EndOfMessage", "ConnectionClosed", "NEED_DATA", "Message"]


class _NeedData:
    """Sentinel type: the parser cannot produce an event until it is fed more bytes."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA = _NeedData()


@dataclass(slots=True)
class Request:
    """The head of one request, validated.

    ``headers`` keeps every field in arrival order with its name lower-cased and its value
    stripped of surrounding whitespace (RFC 9112 §5.1). The remaining attributes are
    derived from the request line and the headers by the parser, once, so the server never
    re-scans the header list on the hot path.
    """

    method: str
    """The method token, case preserved (methods are case-sensitive, RFC 9110 §9.1)."""
    target: str
    """The request-target exactly as sent (origin, absolute, authority or asterisk form)."""
    http_version: str
    """``"1.1"`` or ``"1.0"``."""
    headers: list[tuple[str, str]]
    """``(lower-cased name, value)`` pairs in arrival order."""
    path: str = "/"
    """The path of the target, still percent-encoded; ``"*"`` for ``OPTIONS *``."""
    query: str = ""
    """The query string without the ``?``; ``""`` when there is none."""
    host: str = ""
    """The Host header, or the authority of an absolute-form target (RFC 9112 §3.2.2)."""
    keep_alive: bool = True
    """Whether the connection may carry another request after this one (RFC 9112 §9.3)."""
    content_length: int | None = None
    """The body length when framed by Content-Length; ``None`` when chunked or absent."""
    chunked: bool = False
    """True when the body uses the chunked transfer coding."""
    expect_continue: bool = False
    """True when the client sent ``Expect: 100-continue`` and waits before sending a body."""
    forwarded: bool = False
    """True when the request has an ``X-Forwarded-For`` or ``X-Forwarded-Proto`` field
    (what a reverse proxy adds): a server behind one looks for them only then."""

    def header(self, name: str, default: str | None = None) -> str | None:
        """The value of the first field called ``name`` (case-insensitive), or ``default``."""
        if not name.islower():  # lower() makes a new string even when nothing changes
            name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return default


@dataclass(slots=True)
class Data:
    """A piece of the request body, with any chunked framing removed."""

    data: bytes


@dataclass(slots=True)
class EndOfMessage:
    """The end of a request's body. ``trailers`` are the trailer fields of a chunked body."""

    trailers: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class ConnectionClosed:
    """The client closed its side of the connection at a request boundary."""


Message = Request | Data | EndOfMessage | ConnectionClosed
