"""Responses as data, and the writer that frames them on the wire (RFC 9112 §4, §6, §7).

A handler answers with a :class:`Response`; its ``body`` is one of three things, the three
cases of Marlow's ``ResponseBody`` (§3.2) and of Hop's static/dynamic reply stages (§2.2):

* ``bytes``: known length, sent with ``Content-Length``;
* an async iterator of ``bytes``: streamed, sent with ``Transfer-Encoding: chunked`` to an
  HTTP/1.1 client (Hop §3.2: chunked replies keep dynamic content on a persistent
  connection without an auxiliary buffer), or delimited by closing the connection for 1.0;
* a :class:`FileBody`: a byte range of a file, which the server sends with ``os.sendfile``
  (Hop §3.3.1; Marlow's ``FileBody``);
* :class:`Fragments`: known length too, as the str pieces of an HTML rendering (a
  quotation's, an HTML node's) that the server writes into its reply arena one by one
  (Hop §3.1), so a page is never joined into one str and encoded into one bytes.

:func:`frame_response` decides the framing and writes the status line and header block.
It is sans-IO like the parser: bytes out, no sockets.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus

from .messages import Request

__all__ = [
    "Response",
    "FileBody",
    "Fragments",
    "Body",
    "ResponseHead",
    "frame_response",
    "encode_chunk",
    "LAST_CHUNK",
    "CONTINUE_100",
    "http_date",
]


@dataclass(slots=True)
class FileBody:
    """``length`` bytes of the file at ``path`` starting at ``offset``, sent with sendfile."""

    path: str
    offset: int
    length: int


@dataclass(slots=True)
class Fragments:
    """An HTML body as the str pieces of its rendering, before they are joined (what
    ``Quot.html_parts()`` and ``Node.html_parts()`` give). ``length`` is their UTF-8
    length, the Content-Length, computed by whoever makes it (pyweb.app uses
    ``pyweb_regions.utf8_length``, which counts without encoding)."""

    parts: list[str]
    length: int

    def __len__(self) -> int:
        return self.length

    def __bytes__(self) -> bytes:
        """The body joined and encoded (for a server without an arena, and for tests)."""
        return "".join(self.parts).encode("utf-8")


Body = bytes | AsyncIterable[bytes] | FileBody | Fragments


@dataclass(slots=True)
class Response:
    """What a handler returns: a status, header fields, and a body (see the module doc).

    Framing headers (``Content-Length``, ``Transfer-Encoding``, ``Connection``) are the
    writer's business: :func:`frame_response` sets them from the body and drops any the
    handler set, so a page can never frame its own response wrongly.
    """

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: Body = b""


@dataclass(slots=True)
class ResponseHead:
    """The framed head of a response, and what the server must do with the body."""

    lines: list[bytes]
    """The status line and the header lines, the last one empty: the server copies them
    into the connection's arena one by one (no join; Hop §3.1)."""
    chunked: bool
    """The body must be sent through :func:`encode_chunk` and end with :data:`LAST_CHUNK`."""
    send_body: bool
    """False for HEAD requests and for 1xx/204/304 responses, which have no body."""
    keep_alive: bool
    """Whether the connection stays open after this response."""

    @property
    def data(self) -> bytes:
        """Status line and header block, ending with the empty line, as one bytes."""
        return b"".join(self.lines)


#  RFC 9112 §7.1: chunk = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
#                 last-chunk = 1*("0") [ chunk-ext ] CRLF, then trailer-section CRLF
LAST_CHUNK = b"0\r\n\r\n"
CONTINUE_100 = b"HTTP/1.1 100 Continue\r\n\r\n"

# RFC 9110 §5.1: field-name = token; §5.5: field-value has no CR, LF or NUL. A handler
# that puts a newline in a header could split the response in two (response splitting),
# so the writer refuses it with an error naming the field.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAD_VALUE = re.compile(r"[\x00\r\n]")
_FRAMING = frozenset(("content-length", "transfer-encoding", "connection"))
_NO_BODY_STATUS = frozenset((204, 304))

_status_lines: dict[int, bytes] = {}


def _status_line(status: int) -> bytes:
    line = _status_lines.get(status)
    if line is None:
        if not 100 <= status <= 999:
            raise ValueError(f"HTTP status must be a three-digit number, got {status!r}")
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        line = _status_lines[status] = f"HTTP/1.1 {status} {reason}\r\n".encode("latin-1")
    return line


_date_cache: tuple[int, str] = (0, "")
_date_line_cache: tuple[int, bytes] = (0, b"")


def _date_line() -> bytes:
    """The ``Date:`` field line for this second (RFC 9110 §6.6.1: an origin server with a
    clock MUST send Date), formatted once per second, not once per response."""
    global _date_line_cache
    second = int(time.time())
    if _date_line_cache[0] != second:
        _date_line_cache = (second, b"Date: " + http_date().encode("ascii") + b"\r\n")
    return _date_line_cache[1]


def http_date(now: float | None = None) -> str:
    """The IMF-fixdate for ``now`` (RFC 9110 §5.6.7), cached per second on the hot path."""
    global _date_cache
    if now is not None:
        return formatdate(now, usegmt=True)
    second = int(time.time())
    if _date_cache[0] != second:
        _date_cache = (second, formatdate(second, usegmt=True))
    return _date_cache[1]


def _header_line(name: str, value: str) -> tuple[bytes, int]:
    """Validate one handler-supplied field and encode it; (line, kind). Cold path: the
    result is cached, so a page that sends the same Content-Type on every request pays
    for the checks once."""
    lname = name.lower()
    if lname in _FRAMING:
        return b"", _SKIP
    if not _TOKEN.fullmatch(name):
        raise ValueError(f"invalid response header name {name!r}")
    if _BAD_VALUE.search(value):
        raise ValueError(f"invalid character (CR, LF or NUL) in response header {name}: {value!r}")
    kind = _DATE if lname == "date" else _SERVER if lname == "server" else _PLAIN
    return f"{name}: {value}\r\n".encode("latin-1"), kind


_PLAIN, _SKIP, _DATE, _SERVER = 0, 1, 2, 3
_line_cache: dict[tuple[str, str], tuple[bytes, int]] = {}
_LINE_CACHE_SIZE = 4096  # bounded: per-request values (cookies, ETags) must not grow it forever


_length_lines: dict[int, bytes] = {}
"""``Content-Length`` lines made so far, by length (bounded like ``_line_cache``): a
lookup costs a tenth of formatting the line anew."""


def _length_line(length: int) -> bytes:
    line = b"Content-Length: %d\r\n" % length
    if len(_length_lines) < _LINE_CACHE_SIZE:
        _length_lines[length] = line
    return line


def frame_response(
    request: Request | None,
    status: int,
    headers: list[tuple[str, str]],
    body_length: int | None,
    *,
    keep_alive: bool = True,
) -> ResponseHead:
    """Frame a response to ``request`` (``None`` when no request could be parsed).

    ``body_length`` is the length of the body, or ``None`` when it streams. The connection
    is kept alive only if the server wants it (``keep_alive``), the request allows it, and
    the framing allows it: a streamed body to an HTTP/1.0 client can only be delimited by
    closing the connection (RFC 9112 §6.3 rule 8). Raises ``ValueError`` naming the field
    when a header name is not a token or a value holds CR, LF or NUL.
    """
    method = request.method if request is not None else "GET"
    keep_alive = keep_alive and request is not None and request.keep_alive
    send_body = method != "HEAD" and status >= 200 and status not in _NO_BODY_STATUS
    out = [_status_lines.get(status) or _status_line(status)]
    _add_fields(out, headers)
    # RFC 9112 §6: the body's framing, and the connection's fate.
    chunked = False
    if status < 200 or status in _NO_BODY_STATUS:
        pass  # RFC 9110 §8.6: no Content-Length for 1xx/204; 304 describes another response
    elif body_length is not None:
        try:  # the same few lengths again and again (a page's size barely changes)
            out.append(_length_lines[body_length])
        except KeyError:
            out.append(_length_line(body_length))
    elif request is not None and request.http_version == "1.1":
        out.append(b"Transfer-Encoding: chunked\r\n")
        chunked = send_body
    else:
        keep_alive = False  # HTTP/1.0 has no chunked coding: close to mark the end
    if not keep_alive:
        out.append(b"Connection: close\r\n")
    elif request is not None and request.http_version == "1.0":
        out.append(b"Connection: keep-alive\r\n")
    out.append(b"\r\n")
    return ResponseHead(out, chunked, send_body, keep_alive)


def _add_fields(out: list[bytes], headers: list[tuple[str, str]]) -> None:
    """The handler's header fields as lines (checked, and cached: pages repeat them), and
    ``Date`` and ``Server`` unless the handler set them."""
    has_date = has_server = False
    cache = _line_cache
    for field_ in headers:
        try:
            line, kind = cache[field_]
        except (KeyError, TypeError):  # TypeError: a list instead of a tuple
            line, kind = _header_line(*field_)
            if len(cache) < _LINE_CACHE_SIZE and type(field_) is tuple:
                cache[field_] = (line, kind)
        if kind:
            if kind == _SKIP:
                continue
            if kind == _DATE:
                has_date = True
            else:
                has_server = True
        out.append(line)
    if not has_date:
        out.append(_date_line())
    if not has_server:
        out.append(b"Server: pyweb\r\n")


def encode_chunk(data: bytes) -> bytes:
    """One chunk of a chunked body. Empty data would end the body, so it encodes to ``b""``."""
    if not data:
        return b""
    return b"%x\r\n%b\r\n" % (len(data), data)
