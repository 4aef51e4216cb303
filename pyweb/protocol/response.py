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
It is sans-IO like the parser: bytes out, no sockets. The everyday reply (a known status,
header fields seen before, a body of known length) is framed by the C fast path
``pyweb_regions._frame`` when it is built, from this module's own caches, byte for byte
what the Python code below makes; anything else it leaves to the Python code
(docs/protocol.md, "Framing replies in C").
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterable
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import NamedTuple

import pyweb_regions

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
    "use_c_framer",
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


class ResponseHead(NamedTuple):
    """The framed head of a response, and what the server must do with the body. (A
    NamedTuple: the C framer makes one as cheaply as a tuple.)"""

    data: bytes
    """The status line and the header block, ending with the empty line, as one bytes (the
    trio server copies it into the reply arena in one piece); with ``frame_response``'s
    ``join``, the body follows it."""
    chunked: bool
    """The body must be sent through :func:`encode_chunk` and end with :data:`LAST_CHUNK`."""
    send_body: bool
    """False for HEAD requests and for 1xx/204/304 responses, which have no body."""
    keep_alive: bool
    """Whether the connection stays open after this response."""


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
    clock MUST send Date), formatted once per second, not once per response (the C framer
    asks for it once a second too)."""
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


_SERVER_LINE = b"Server: pyweb\r\n"

_c_module = pyweb_regions.extension("_frame")
if _c_module is not None:
    _c_module.configure(
        _line_cache, _status_lines, _length_lines, _date_line, _SERVER_LINE, ResponseHead,
        Request,
    )  # fmt: skip
C_FRAME = _c_module.frame if _c_module is not None else None
"""``pyweb_regions._frame.frame``: the everyday reply head in C, or None (not built,
``PYWEB_REGIONS=python``, or :func:`use_c_framer` turned it off). Called with
:func:`frame_response`'s arguments, all positional; it returns the same
:class:`ResponseHead`, or None for a reply it leaves to the Python code (then call
:func:`frame_response`). The servers call it themselves for every reply of a known length,
read as ``response.C_FRAME`` at each call (a test may switch it): the keyword call of
:func:`frame_response` cost 0.7k instructions per request (docs/performance.md)."""


def use_c_framer(on: bool | None) -> bool:
    """Frame with the C fast path (``on``, the default when it is built) or with the Python
    code alone (``None``: leave it as it is); returns whether the C framer is now used
    (False when it is not built or ``PYWEB_REGIONS=python``). For tests that run the
    framer both ways in one process."""
    global C_FRAME
    if on is not None:
        C_FRAME = _c_module.frame if on and _c_module is not None else None
    return C_FRAME is not None


def frame_response(
    request: Request | None,
    status: int,
    headers: list[tuple[str, str]],
    body_length: int | None,
    *,
    keep_alive: bool = True,
    join: bytes | None = None,
) -> ResponseHead:
    """Frame a response to ``request`` (``None`` when no request could be parsed).

    ``body_length`` is the length of the body, or ``None`` when it streams. The connection
    is kept alive only if the server wants it (``keep_alive``), the request allows it, and
    the framing allows it: a streamed body to an HTTP/1.0 client can only be delimited by
    closing the connection (RFC 9112 §6.3 rule 8). Raises ``ValueError`` naming the field
    when a header name is not a token or a value holds CR, LF or NUL.

    ``join``: the body itself (bytes, ``body_length`` of them), copied behind the head into
    ``data`` when it is to be sent, so that head and a small body go out in one write.
    """
    if C_FRAME is not None:  # the everyday reply, in C; None: this code decides
        head = C_FRAME(request, status, headers, body_length, keep_alive, join)
        if head is not None:
            return head
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
    if join is not None and send_body:
        out.append(join)
    return ResponseHead(b"".join(out), chunked, send_body, keep_alive)


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
        out.append(_SERVER_LINE)


def encode_chunk(data: bytes) -> bytes:
    """One chunk of a chunked body. Empty data would end the body, so it encodes to ``b""``."""
    if not data:
        return b""
    return b"%x\r\n%b\r\n" % (len(data), data)
