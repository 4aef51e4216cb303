"""The incremental HTTP/1.1 request parser (sans-IO): bytes in, events out.

RFC 9112 (HTTP/1.1 message syntax) and RFC 9110 (semantics); Marlow §3.2 (parsing either
yields a request or the response that explains the rejection); Hop §2.2 (the "request"
stage of the pipeline).

INTERFACE (fixed; the server is written against it):

    parser = RequestParser(Limits(...))
    parser.feed(data)          # bytes from the socket; b"" means the client closed (EOF)
    ev = parser.next_event()   # Request | Data | EndOfMessage | ConnectionClosed | NEED_DATA
                               # raises ProtocolError (and only ProtocolError) on bad input

    parser.buffered            # number of bytes fed but not yet consumed
    parser.pending_body        # True between a Request with a body and its EndOfMessage

After ``EndOfMessage`` the parser moves on to the next request by itself (pipelining) when
the request was keep-alive; when it was not, ``next_event`` returns NEED_DATA forever after
(the server closes). After a ProtocolError the parser is broken and every further call
raises the same error.

How it works: the parser keeps one ``bytearray``. While it waits for a request head it
only searches the newly arrived bytes for the CRLF CRLF that ends the head. Once the head
is complete it is decoded once (Latin-1), split into lines with ``str.split`` and read in
the four steps h11 uses (request line, fields, target, framing), each checked against the
grammar (``grammar.py``) and explained when it is wrong. A single Python loop over the
fields then derives everything the server needs (Host, framing, keep-alive, Expect).
Body bytes are handed out as soon as they arrive, never accumulated, in pieces of at
most :data:`MAX_PIECE` bytes.

What the parser remembers between requests (field lines and names already proven valid)
and its C twin (:data:`C_HEAD`) live in ``_fastpath.py``: each either knows a head's
answer or declines, and a decline comes back here, to the careful path.

Decisions (see docs/protocol.md for the full list and the differences from h11):

* Line endings must be CRLF. RFC 9112 §2.2 allows (MAY) a recipient to accept a bare LF;
  pyweb does not, because front ends that disagree about line endings are a classic
  request-smuggling vector, and every real client sends CRLF.
* Up to ``MAX_EMPTY_LINES`` empty lines before a request line are skipped (RFC 9112 §2.2
  SHOULD ignore at least one).
* obs-fold is rejected (RFC 9112 §5.2 allows 400); a message with both Content-Length and
  Transfer-Encoding is rejected (RFC 9112 §6.1 MAY reject; §6.3 "ought to be handled as an
  error"), so one connection can never be read as two different request sequences.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from . import _fastpath
from . import grammar as g
from ._fastpath import GOOD_HOSTS
from .errors import (
    BadRequest,
    BodyTooLarge,
    HeadersTooLarge,
    NotImplementedByServer,
    ProtocolError,
    TargetTooLong,
    VersionNotSupported,
)
from .messages import NEED_DATA, ConnectionClosed, Data, EndOfMessage, Request

__all__ = ["Limits", "RequestParser", "MAX_EMPTY_LINES", "C_HEAD"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Size limits, each with the status it produces when exceeded. Named defaults, on by
    default (bounded time and space for any input)."""

    max_request_line: int = 8 * 1024
    """Longest request line, CRLF excluded → 414."""
    max_header_bytes: int = 64 * 1024
    """Largest header block (request line + fields) → 431."""
    max_headers: int = 100
    """Most header fields → 431."""
    max_body: int = 16 * 1024 * 1024
    """Largest body, Content-Length or the sum of the chunks → 413."""
    max_chunk_line: int = 4 * 1024
    """Longest chunk-size line with its extensions → 400."""


MAX_EMPTY_LINES = 8
"""How many empty lines (CRLF) before a request line are ignored (RFC 9112 §2.2)."""
MAX_PIECE = 16 * 1024
"""The most body bytes one ``Data`` event carries. The server lets other connections run
between two pieces (``body.py``), so this bounds the work one upload does in a turn of
the loop: asyncio's loop reads 256 KiB at a time, and 40 uploads handled a read at a
time kept a normal client waiting 0.4 s (median) against 0.02 s with this size; 64 KiB
pieces, 0.05 s (``benchmarks/attacks.py big-posts``)."""

# Parser states. Small ints compare fastest; the names are for readers and reprs.
_HEAD = 0  # waiting for a request head
_EOM = 1  # the head had no body: the next event is EndOfMessage
_CL_BODY = 2  # reading a Content-Length body
_CHUNK_SIZE = 3  # waiting for a chunk-size line
_CHUNK_DATA = 4  # inside a chunk's data
_CHUNK_CRLF = 5  # waiting for the CRLF after a chunk's data
_TRAILERS = 6  # waiting for the trailer section after the last chunk
_DONE = 7  # a non-keep-alive request has ended: nothing more will be read
_CLOSED = 8  # EOF at a request boundary: ConnectionClosed
_STATE_NAMES = ("HEAD", "EOM", "CL_BODY", "CHUNK_SIZE", "CHUNK_DATA", "CHUNK_CRLF",
                "TRAILERS", "DONE", "CLOSED")

# Fields the parser itself interprets, or notes (the X-Forwarded pair: a server behind a
# proxy reads them, and need not look for them in a request without them); every other
# field is just passed along.
_SPECIAL = frozenset(("host", "content-length", "transfer-encoding", "connection", "expect",
                      "x-forwarded-for", "x-forwarded-proto", "forwarded"))

# The first byte of a request line is a tchar (a method); CR may start an empty line.
# Anything else (a TLS ClientHello starts with 0x16) can be rejected before a whole line
# has arrived, instead of waiting for a CRLF that will never come.
_TCHAR_BYTES = frozenset(b"!#$%&'*+-.^_`|~0123456789"
                         b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_CR = 13

# The request line's fast path (see _request_line): methods known to be tokens, and the two
# versions as the parser reports them.
_COMMON_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"))
_VERSIONS = {"HTTP/1.1": "1.1", "HTTP/1.0": "1.0"}


class RequestParser:
    """Turns the bytes of one connection into request events (see the module doc)."""

    __slots__ = (
        "limits", "_buf", "_state", "_eof", "_error", "_scan", "_line_seen", "_empty_lines",
        "_keep_alive", "_remaining", "_body_total", "_head_bytes", "_head_fields",
    )

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self._buf = bytearray()
        self._state = _HEAD
        self._eof = False
        self._error: ProtocolError | None = None
        self._scan = 0  # how far the buffer has been searched for the end of the head
        self._line_seen = False  # whether the request line's CRLF has been seen
        self._empty_lines = 0
        self._keep_alive = True
        self._remaining = 0  # body bytes left (CL) or chunk bytes left (chunked)
        self._body_total = 0  # sum of chunk sizes so far
        self._head_bytes = 0  # size of the head, so trailers count towards the same limit
        self._head_fields = 0

    # -- public API -------------------------------------------------------------------

    @property
    def buffered(self) -> int:
        """Bytes fed but not consumed yet."""
        return len(self._buf)

    @property
    def pending_body(self) -> bool:
        """True between a Request that has a body and its EndOfMessage."""
        return _CL_BODY <= self._state <= _TRAILERS

    def take_leftover(self) -> bytes:
        """The bytes fed but not consumed, handed over and forgotten here: on a connection
        that switches protocols (a WebSocket), what the client sent behind the request."""
        leftover = bytes(self._buf)
        self._buf = bytearray()
        return leftover

    def __repr__(self) -> str:
        return f"<RequestParser state={_STATE_NAMES[self._state]} buffered={len(self._buf)}>"

    def feed(self, data: bytes) -> None:
        """Add bytes received from the client; ``b""`` means the client closed (EOF)."""
        if not data:
            self._eof = True
        elif self._state < _DONE and not self._eof and self._error is None:
            # After the last request (or an error) input is dropped, so a client cannot
            # make a closing connection buffer without bound.
            self._buf += data

    def next_event(self) -> Request | Data | EndOfMessage | ConnectionClosed | object:
        """The next event, or NEED_DATA. Raises ProtocolError on bad input, and keeps
        raising it: after an error the byte stream can no longer be trusted."""
        if self._error is not None:
            raise self._error
        try:
            state = self._state
            if state == _HEAD:
                if not self._buf and not self._eof:
                    return NEED_DATA  # between two requests: nothing to look at yet
                if C_HEAD is not None:  # the everyday head, in C (see C_HEAD)
                    request = C_HEAD(self)
                    if request is not None:  # a Request, or NEED_DATA
                        return request
                return self._next_head()
            if state == _CL_BODY:
                return self._next_cl_data()
            if state == _EOM:
                if self._keep_alive:  # (the everyday end, without a call)
                    self._state = _HEAD
                    return _NO_TRAILERS
                return self._end_of_message([])
            if state == _DONE:
                return NEED_DATA
            if state == _CLOSED:
                return ConnectionClosed()
            return self._next_chunked()
        except ProtocolError as exc:
            self._failed(exc)
            raise

    def _failed(self, exc: ProtocolError) -> None:
        """Keep ``exc`` to raise again, and drop the input (it can no longer be trusted)."""
        if self._state == _HEAD and self._buf:  # a head refused before it was whole
            _note_wishes(exc, self._buf)
        self._error = exc
        self._buf = bytearray()

    # -- the request head: found, then parsed in four steps (as h11 reads it) -----------
    #    request line (RFC 9112 §3) → fields (§5) → target (§3.2) → framing (§6)

    def _next_head(self) -> Request | ConnectionClosed | object:
        raw = self._take_head()
        if type(raw) is not bytearray:
            return raw  # NEED_DATA or ConnectionClosed
        try:  # (free in Python 3.11 when nothing is raised)
            head = raw.decode("latin-1")
            limits = self.limits
            head_len = len(head) + 4
            lines = head.split("\r\n")
            line = lines[0]
            if len(line) > limits.max_request_line:
                raise TargetTooLong(
                    f"request line longer than {limits.max_request_line} bytes", offending=line[:100]
                )
            if head_len > limits.max_header_bytes:
                raise HeadersTooLarge(
                    f"request head larger than {limits.max_header_bytes} bytes", offending=head[:100]
                )
            method, target, version = _request_line(line)
            del lines[0]
            if len(lines) > limits.max_headers:
                raise HeadersTooLarge(
                    f"more than {limits.max_headers} header fields", offending=head[:100]
                )
            headers, special = (_fastpath.known_lines(lines) or _learn_fields(raw, lines)
                                if lines else ([], []))  # fmt: skip
            host, content_length, te, keep_alive, expect_continue, forwarded = _read_fields(
                special, version
            )
            if target[0] == "/" and host is not None and method != "CONNECT":
                path, _, query = target.partition("?")  # origin-form and Host: the everyday case
            else:
                path, query, host = _target(method, target, version, host, line)
            chunked = False  # no framing field: no body, the everyday case
            if te is not None or content_length is not None:
                chunked = _framing(version, te, content_length, line, limits)
            # What comes next: a chunked body, a Content-Length body, or the EndOfMessage.
            self._keep_alive = keep_alive
            self._head_bytes = head_len
            self._head_fields = len(headers)
            if chunked:
                self._state = _CHUNK_SIZE
                self._body_total = 0
            elif content_length:
                self._state = _CL_BODY
                self._remaining = content_length
            else:
                self._state = _EOM
            return Request(
                method, target, version, headers, path, query, host, keep_alive, content_length,
                chunked, expect_continue, forwarded,
            )  # fmt: skip
        except ProtocolError as exc:  # the fields may still say what the client wants
            _note_wishes(exc, raw)
            raise

    def _take_head(self) -> bytearray | ConnectionClosed | object:
        """The request head's bytes (without its final CRLF CRLF), taken out of the
        buffer; or NEED_DATA while it is incomplete, ConnectionClosed at a clean EOF."""
        buf = self._buf
        if not buf or buf[0] not in _TCHAR_BYTES:  # (an index, not startswith: per request)
            early = self._before_head()
            if early is not None:
                return early
        scan = self._scan
        end = buf.find(b"\r\n\r\n", scan - 3 if scan > 3 else 0)
        if end < 0:
            self._head_incomplete()
            return NEED_DATA
        head = buf[:end]
        del buf[: end + 4]
        if scan or self._empty_lines:  # (three stores saved on the everyday head)
            self._scan = 0
            self._line_seen = False
            self._empty_lines = 0
        return head

    def _before_head(self) -> ConnectionClosed | object | None:
        """The buffer is empty or does not start with a method: skip empty lines, see a
        clean EOF, or reject a byte that cannot start a request line. None: go on."""
        buf = self._buf
        if buf and buf[0] == _CR:
            self._skip_empty_lines()
        if not buf:
            if self._eof:
                self._state = _CLOSED
                return ConnectionClosed()
            return NEED_DATA
        if buf[0] not in _TCHAR_BYTES and buf[0] != _CR:
            raise BadRequest(
                f"a request line must start with a method, got byte {buf[0]:#04x}",
                offending=bytes(buf[:40]),
            )
        return None

    def _skip_empty_lines(self) -> None:
        """RFC 9112 §2.2: ignore (a bounded number of) empty lines before the request line."""
        buf = self._buf
        while buf.startswith(b"\r\n"):
            del buf[:2]
            self._scan = 0
            self._line_seen = False
            self._empty_lines += 1
            if self._empty_lines > MAX_EMPTY_LINES:
                raise BadRequest(
                    f"more than {MAX_EMPTY_LINES} empty lines before the request line",
                    offending=b"\r\n",
                )

    def _head_incomplete(self) -> None:
        """No CRLF CRLF yet: enforce the limits on what has arrived, or explain EOF."""
        buf = self._buf
        limits = self.limits
        old_scan = self._scan
        size = len(buf)
        self._scan = size
        if not self._line_seen:
            crlf = buf.find(b"\r\n", old_scan - 1 if old_scan > 0 else 0)
            if crlf >= 0:
                self._line_seen = True
                if crlf > limits.max_request_line:
                    raise TargetTooLong(
                        f"request line longer than {limits.max_request_line} bytes",
                        offending=bytes(buf[:100]),
                    )
            elif size > limits.max_request_line + 1 or (
                size == limits.max_request_line + 1 and buf[-1] != _CR
            ):
                raise TargetTooLong(
                    f"request line longer than {limits.max_request_line} bytes",
                    offending=bytes(buf[:100]),
                )
        if size > limits.max_header_bytes + 3:
            raise HeadersTooLarge(
                f"request head larger than {limits.max_header_bytes} bytes",
                offending=bytes(buf[:100]),
            )
        bare = g.BARE_LF.search(buf, old_scan - 1 if old_scan > 0 else 0)
        if bare is not None:
            start = bare.start()
            raise BadRequest(
                "line ends with a bare LF; HTTP/1.1 lines end with CRLF (RFC 9112 §2.2)",
                offending=bytes(buf[max(0, start - 40) : start + 1]),
            )
        if self._eof:
            raise BadRequest("incomplete request: connection closed inside the request head",
                             offending=bytes(buf[:100]))

    # -- bodies -----------------------------------------------------------------------

    def _next_cl_data(self) -> Data | object:
        buf = self._buf
        if not buf:
            if self._eof:
                raise BadRequest(
                    f"incomplete request: connection closed with {self._remaining} body "
                    "bytes still expected"
                )
            return NEED_DATA
        data = self._take_body_bytes()
        if self._remaining == 0:
            self._state = _EOM
        return Data(data)

    def _take_body_bytes(self) -> bytes:
        """Up to ``_remaining`` bytes from the buffer (all there is, if fewer), at most
        :data:`MAX_PIECE`: a piece of a Content-Length body or of a chunk's data."""
        buf = self._buf
        take = min(self._remaining, MAX_PIECE)
        if len(buf) <= take:
            data = bytes(buf)
            buf.clear()
        else:
            data = bytes(buf[:take])
            del buf[:take]  # (from the front of a bytearray: no copy of the rest)
        self._remaining -= len(data)
        return data

    def _next_chunked(self) -> Data | EndOfMessage | object:
        """RFC 9112 §7.1: chunk-size line, chunk data, CRLF, ... a last chunk of size 0,
        then the trailer section. Each step consumes what it can and says whether it did."""
        while True:
            state = self._state
            if state == _CHUNK_DATA:
                if not self._buf:
                    break
                data = self._take_body_bytes()
                if self._remaining == 0:
                    self._state = _CHUNK_CRLF
                return Data(data)
            if state == _CHUNK_SIZE:
                if not self._chunk_size_line():
                    break
            elif state == _CHUNK_CRLF:
                if not self._chunk_crlf():
                    break
            else:  # _TRAILERS
                trailers = self._trailers()
                if trailers is None:
                    break
                return self._end_of_message(trailers)
        if self._eof:
            raise BadRequest("incomplete request: connection closed inside a chunked body")
        return NEED_DATA

    def _chunk_size_line(self) -> bool:
        """``chunk-size [ chunk-ext ] CRLF``: the next chunk's size (0: the last chunk)."""
        buf = self._buf
        limits = self.limits
        end = buf.find(b"\r\n", 0, limits.max_chunk_line + 2)
        if end < 0:
            if len(buf) > limits.max_chunk_line + 1:
                raise BadRequest(
                    f"chunk-size line longer than {limits.max_chunk_line} bytes",
                    offending=bytes(buf[:100]),
                )
            return False
        line = bytes(buf[:end])
        m = g.CHUNK_LINE.fullmatch(line)
        if m is None:
            raise BadRequest(f"invalid chunk-size line {line[:60]!r}", offending=line)
        size = int(m.group(1), 16)
        del buf[: end + 2]
        if size == 0:
            self._state = _TRAILERS
            return True
        self._body_total += size
        if self._body_total > limits.max_body:
            raise BodyTooLarge(
                f"chunked body larger than the limit of {limits.max_body} bytes", offending=line
            )
        self._remaining = size
        self._state = _CHUNK_DATA
        return True

    def _chunk_crlf(self) -> bool:
        """The CRLF after a chunk's data (anything else: the chunk size was wrong)."""
        buf = self._buf
        if len(buf) < 2:
            if buf and buf[0] != _CR:
                raise BadRequest("chunk data not followed by CRLF", offending=bytes(buf[:20]))
            return False
        if buf[:2] != b"\r\n":
            raise BadRequest(
                "chunk data not followed by CRLF (wrong chunk size?)", offending=bytes(buf[:20])
            )
        del buf[:2]
        self._state = _CHUNK_SIZE
        return True

    def _trailers(self) -> list[tuple[str, str]] | None:
        """``trailer-section = *( field-line CRLF ) CRLF`` (RFC 9112 §7.1.2), counted
        against the head's limits; None while incomplete."""
        buf = self._buf
        limits = self.limits
        if buf.startswith(b"\r\n"):
            del buf[:2]
            return []
        old_scan = self._scan
        end = buf.find(b"\r\n\r\n", old_scan - 3 if old_scan > 3 else 0)
        budget = limits.max_header_bytes - self._head_bytes
        too_large = f"request head and trailers larger than {limits.max_header_bytes} bytes"
        if end < 0:
            self._scan = len(buf)
            if len(buf) > budget + 3:
                raise HeadersTooLarge(too_large, offending=bytes(buf[:100]))
            if g.BARE_LF.search(buf, old_scan - 1 if old_scan > 0 else 0) is not None:
                raise BadRequest("trailer line ends with a bare LF", offending=bytes(buf[:100]))
            return None
        if end + 4 > budget:
            raise HeadersTooLarge(too_large, offending=bytes(buf[:100]))
        raw = buf[:end]
        block = raw.decode("latin-1")
        del buf[: end + 4]
        self._scan = 0
        lines = block.split("\r\n")
        if len(lines) + self._head_fields > limits.max_headers:
            raise HeadersTooLarge(
                f"more than {limits.max_headers} header and trailer fields", offending=block[:100]
            )
        return _parse_fields(raw, lines, len(lines) - 1, "trailer")

    def _end_of_message(self, trailers: list[tuple[str, str]]) -> EndOfMessage:
        self._state = _HEAD if self._keep_alive else _DONE
        if not self._keep_alive:
            self._buf = bytearray()
        # Without trailers (nearly always) one shared message: nobody changes a message,
        # and making one is a class call per request.
        return EndOfMessage(trailers) if trailers else _NO_TRAILERS


_NO_TRAILERS = EndOfMessage([])


# -- the steps of a request head --------------------------------------------------------


def _request_line(line: str) -> tuple[str, str, str]:
    """RFC 9112 §3: ``method SP request-target SP HTTP-version`` → (method, target, "1.x").

    The everyday line ("GET /path HTTP/1.1") is checked with str methods: a regex match
    allocates over a kilobyte of matcher state, for every request (Hop §3.1). Everything
    else takes the regex, so the two paths accept exactly the same lines: the target is
    1*VCHAR, i.e. ASCII, printable and without the spaces split() removed."""
    try:
        method, target, version = line.split(" ")
    except ValueError:  # not three parts
        return _request_line_regex(line)
    minor = _VERSIONS.get(version)
    if (
        minor is not None
        and method in _COMMON_METHODS
        and target
        and target.isascii()
        and target.isprintable()
    ):
        return method, target, minor
    return _request_line_regex(line)


def _request_line_regex(line: str) -> tuple[str, str, str]:
    """:func:`_request_line` for the lines its fast path does not take."""
    m = g.REQUEST_LINE.fullmatch(line)
    if m is None:
        _explain_request_line(line)
    method, target, major, minor = m.groups()
    if major != "1":
        raise VersionNotSupported(
            f"HTTP version {major}.{minor} is not supported (only HTTP/1.x)", offending=line
        )
    # RFC 9110 §6.2: a higher 1.x minor version is treated as the highest we support.
    return method, target, "1.0" if minor == "0" else "1.1"


Fields = tuple[str | None, int | None, list[str] | None, bool, bool, bool]
"""What :func:`_read_fields` finds: (host, content_length, te, keep_alive, expect_continue,
forwarded)."""


def _read_fields(headers: list[tuple[str, str]], version: str) -> Fields:
    """What the parser itself reads from the header fields (every other field is just
    passed along): Host, the framing fields (``te``: the Transfer-Encoding codings, every
    field's list joined; None without one), keep-alive, ``Expect: 100-continue``, and
    whether an ``X-Forwarded-For``, ``-Proto`` or ``Forwarded`` field is there. A function returning a
    tuple, not an object: a third cheaper, on every request."""
    host: str | None = None
    content_length: int | None = None
    te: list[str] | None = None
    close = keep_alive_option = expect = forwarded = False
    for name, value in headers:
        if name not in _SPECIAL:
            continue
        if name == "host":
            if host is not None:
                raise BadRequest("more than one Host header field", offending=value)
            if value not in GOOD_HOSTS.entries:  # a server sees the same few hosts again and again
                if g.HOST.fullmatch(value) is None:
                    raise BadRequest(f"invalid Host header field {value!r}", offending=value)
                GOOD_HOSTS.add(value, value)
            host = value
        elif name == "content-length":
            n = _content_length(value)
            if content_length is not None and n != content_length:
                raise BadRequest("Content-Length fields with different values", offending=value)
            content_length = n
        elif name == "transfer-encoding":
            te = (te or []) + value.split(",")
        elif name == "connection":
            says_close, says_keep_alive = _connection_options(value)
            close = close or says_close
            keep_alive_option = keep_alive_option or says_keep_alive
        elif name[0] == "x" or name == "forwarded":  # X-Forwarded-*, RFC 7239's Forwarded
            forwarded = True
        else:  # Expect (RFC 9110 §10.1.1)
            expect = expect or _expects_continue(value)
    # RFC 9112 §9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive".
    # RFC 9110 §10.1.1: Expect is ignored in HTTP/1.0 requests.
    keep_alive = not close if version == "1.1" else keep_alive_option and not close
    return host, content_length, te, keep_alive, expect and version == "1.1", forwarded


def _expects_continue(value: str) -> bool:
    """Whether an ``Expect`` field's list holds ``100-continue`` (case-insensitive)."""
    value = value.lower()
    return "100-continue" in value and any(
        e.strip(" \t") == "100-continue" for e in value.split(",")
    )


def _connection_options(value: str) -> tuple[bool, bool]:
    """RFC 9110 §7.6.1: ``Connection = #connection-option``, case-insensitive: whether it
    says ``close``, whether it says ``keep-alive``."""
    close = keep_alive = False
    for option in value.lower().split(","):
        option = option.strip(" \t")
        if option == "close":
            close = True
        elif option == "keep-alive":
            keep_alive = True
    return close, keep_alive


def _target(
    method: str, target: str, version: str, host: str | None, line: str
) -> tuple[str, str, str]:
    """RFC 9112 §3.2: the request-target's form → (path, query, host). origin-form
    (``/path?query``) and ``OPTIONS *`` are served; absolute-form's authority replaces
    Host (§3.2.2); authority-form (CONNECT) is not implemented."""
    if target[0] == "/":
        path, _, query = target.partition("?")
    elif target == "*":
        if method != "OPTIONS":
            raise BadRequest(
                f"asterisk-form target '*' is only allowed with OPTIONS, not {method}",
                offending=line,
            )
        path, query = "*", ""
    elif method != "CONNECT":
        path, query, authority = _absolute_form(target, line)
        if host is None and version == "1.1":
            raise BadRequest("missing Host header field (HTTP/1.1, RFC 9112 §3.2)")
        host = authority
    if method == "CONNECT":
        raise NotImplementedByServer("CONNECT is not implemented", offending=line)
    if host is None:
        if version == "1.1":
            raise BadRequest("missing Host header field (HTTP/1.1, RFC 9112 §3.2)")
        host = ""
    return path, query, host


def _absolute_form(target: str, line: str) -> tuple[str, str, str]:
    """``http://authority/path?query`` (RFC 9112 §3.2.2) → (path, query, authority)."""
    am = g.ABSOLUTE_FORM.fullmatch(target)
    if am is None:
        if g.AUTHORITY_FORM.fullmatch(target):
            raise BadRequest(
                f"authority-form target {target!r} is only allowed with CONNECT", offending=line
            )
        raise BadRequest(f"invalid request target {target!r}", offending=line)
    authority = am.group(2)
    if "@" in authority or g.HOST.fullmatch(authority) is None:
        # RFC 9110 §4.2.4: userinfo in an http(s) URI is to be treated as an error.
        raise BadRequest(f"invalid authority in target {target!r}", offending=line)
    path, _, query = (am.group(3) or "/").partition("?")
    return path or "/", query, authority


def _framing(
    version: str, te: list[str] | None, content_length: int | None, line: str, limits: Limits
) -> bool:
    """RFC 9112 §6: how the body is delimited. Returns True for chunked (Content-Length
    otherwise, or no body); refuses ambiguous framing and bodies over the limit."""
    if te is not None:
        if version == "1.0":
            # RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0 means the framing is faulty.
            raise BadRequest("Transfer-Encoding in an HTTP/1.0 request", offending=line)
        if content_length is not None:
            raise BadRequest(
                "both Content-Length and Transfer-Encoding (request smuggling?)",
                offending=", ".join(te),
            )
        _check_transfer_coding(te)
        return True
    if content_length is not None and content_length > limits.max_body:
        raise BodyTooLarge(
            f"Content-Length {content_length} exceeds the limit of {limits.max_body} bytes",
            offending=str(content_length),
        )
    return False


# -- helpers (cold paths: only run for unusual or bad input) ---------------------------

_WISH = re.compile(rb"^(accept|content-type)[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\r?$", re.I | re.M)


def _note_wishes(exc: ProtocolError, head: bytes | bytearray) -> None:
    """Keep on a refused request's error its ``Accept`` and ``Content-Type`` values (the
    first of each), read from the raw head: the server answers an API client's error as
    JSON (:mod:`pyweb.protocol.negotiation`) even when the head could not be parsed."""
    if exc.accept or exc.content_type:
        return
    for match in _WISH.finditer(head):
        name = match.group(1).lower()
        value = match.group(2).decode("latin-1")
        if name == b"accept" and not exc.accept:
            exc.accept = value
        elif name == b"content-type" and not exc.content_type:
            exc.content_type = value


def _content_length(value: str) -> int:
    """RFC 9110 §8.6: Content-Length = 1*DIGIT. A list of identical values ("5, 5") is
    accepted as that value (the MAY in §8.6; h11 does the same); anything else is 400."""
    if g.DIGITS.fullmatch(value) is None:
        parts = [p.strip(" \t") for p in value.split(",")]
        if len(parts) < 2 or any(g.DIGITS.fullmatch(p) is None for p in parts):
            raise BadRequest(f"invalid Content-Length {value!r}", offending=value)
        if len(set(p.lstrip("0") for p in parts)) != 1:
            raise BadRequest(f"Content-Length list with different values {value!r}",
                             offending=value)
        value = parts[0]
    digits = value.lstrip("0")
    if len(digits) > 19:
        # Far beyond any limit; don't even convert it (int() refuses > 4300 digits).
        raise BodyTooLarge(f"Content-Length {value[:30]}... is too large", offending=value[:40])
    return int(digits) if digits else 0


def _check_transfer_coding(codings: list[str]) -> None:
    """RFC 9112 §6.1, §6.3: only a final "chunked" frames a request body. Chunked not last
    (or applied twice) → 400; other codings (gzip, identity, ...) are not implemented → 501."""
    names = [c.strip(" \t").lower() for c in codings]
    if any(not n or g.TOKEN.fullmatch(n) is None for n in names):
        raise BadRequest(f"invalid Transfer-Encoding {', '.join(codings)!r}",
                         offending=", ".join(codings))
    if names[-1] != "chunked" or names.count("chunked") > 1:
        if "chunked" in names:
            raise BadRequest(
                f"Transfer-Encoding {', '.join(names)!r}: chunked must be the final coding "
                "and appear once (RFC 9112 §6.3)",
                offending=", ".join(codings),
            )
        raise NotImplementedByServer(
            f"Transfer-Encoding {', '.join(names)!r} is not implemented (only chunked)",
            offending=", ".join(codings),
        )
    if len(names) > 1:
        raise NotImplementedByServer(
            f"Transfer-Encoding {', '.join(names)!r}: only chunked alone is implemented",
            offending=", ".join(codings),
        )


def _explain_request_line(line: str) -> NoReturn:
    """The request line failed the fast regex: raise the most helpful error."""
    for ch, name in (("\n", "a bare LF"), ("\r", "a bare CR"), ("\x00", "NUL")):
        if ch in line:
            raise BadRequest(f"request line contains {name}", offending=line[:200])
    parts = line.split(" ")
    if len(parts) == 3 and all(parts):
        method, target, version = parts
        vm = g.HTTP_VERSION_LOOSE.fullmatch(version)
        if vm is not None and vm.group(1).lstrip("0") != "1":
            raise VersionNotSupported(
                f"HTTP version {version[5:]!r} is not supported (only HTTP/1.x)",
                offending=line,
            )
        if g.TOKEN.fullmatch(method) is None:
            raise BadRequest(f"invalid method {method!r}", offending=line)
        if any(not 0x21 <= ord(c) <= 0x7E for c in target):
            raise BadRequest(f"invalid character in request target {target!r}",
                             offending=line)
        raise BadRequest(f"malformed HTTP version {version!r}", offending=line)
    raise BadRequest(
        "malformed request line (expected: METHOD SP target SP HTTP/1.1, single spaces)",
        offending=line[:200],
    )


_CTL = re.compile("[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]").search
"""Control characters that no field line may hold (HTAB, CR and LF are checked apart)."""


def _learn_fields(
    raw: bytearray, lines: list[str]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The header fields of a head the fast path did not know (``_fastpath.known_lines``):
    every line checked, then remembered; and those of them the parser reads itself."""
    fields = _parse_fields(raw, lines, len(lines), "header")
    _fastpath.learn_lines(lines, fields, _SPECIAL)
    return fields, [field for field in fields if field[0] in _SPECIAL]


def _parse_fields(
    raw: bytearray, lines: list[str], crlfs: int, what: str
) -> list[tuple[str, str]]:
    """Validate field lines (RFC 9112 §5, RFC 9110 §5.5) and return (lower name, value).

    ``raw`` is the block the lines were decoded and split from on CRLF (``crlfs`` of
    them). Each line must match the grammar's ``field-line``; a line that does not is
    explained (:func:`_explain_field_line`). Names already proven to be tokens skip the
    regex (``_fastpath.known_names``).
    """
    fields = _fastpath.known_names(raw, lines, crlfs)
    if fields is not None:
        return fields
    fields = []
    for line in lines:
        m = g.FIELD_LINE.fullmatch(line)
        if m is None:
            _explain_field_line(line, what)
        name, value = m.groups()
        fields.append((name.lower(), value))
    _fastpath.learn_names(lines)
    return fields


def _explain_field_line(line: str, what: str) -> NoReturn:
    """A field line failed the grammar: say what is wrong with it."""
    if line[:1] in (" ", "\t"):
        raise BadRequest(
            f"obsolete line folding (a {what} line starting with whitespace) is not "
            "allowed (RFC 9112 §5.2)",
            offending=line,
        )
    name, colon, value = line.partition(":")
    if not colon:
        raise BadRequest(f"{what} line without a colon: {line[:60]!r}", offending=line)
    if name != name.rstrip(" \t"):
        raise BadRequest(
            f"whitespace between {what} field name {name.strip()!r} and colon "
            "(RFC 9112 §5.1)",
            offending=line,
        )
    if g.TOKEN.fullmatch(name) is None:
        raise BadRequest(f"invalid {what} field name {name[:60]!r}", offending=line)
    for ch, desc in (("\x00", "NUL"), ("\r", "a bare CR"), ("\n", "a bare LF")):
        if ch in value:
            raise BadRequest(f"{what} field {name!r} contains {desc} (RFC 9110 §5.5)",
                             offending=line)
    control = _CTL(value)
    if control:
        raise BadRequest(
            f"{what} field {name!r} contains the control character "
            f"U+{ord(control.group()):04X} (RFC 9110 §5.5: only HTAB is allowed)",
            offending=line,
        )
    raise BadRequest(f"invalid character in {what} field {name!r}: {value[:60]!r}",
                     offending=line)


# -- the C fast path ---------------------------------------------------------------------


C_HEAD: Callable[[RequestParser], object] | None = _fastpath.c_head(
    RequestParser, Limits, Request, NEED_DATA, _EOM, _CL_BODY
)
"""``pyweb_regions._head.parse_head``: the request head in C, for the heads real clients
send (a common method, an origin-form target, HTTP/1.1 or 1.0, plain printable fields, a
reg-name Host, at most one small Content-Length, no Transfer-Encoding or Expect, within
the limits). Given the parser, it returns the Request (the parser's state set, the head's
bytes consumed, all exactly as :meth:`RequestParser._next_head` would), NEED_DATA when the
head is incomplete (after calling ``_head_incomplete``, as ``_take_head`` does), or None:
declined, and the Python code above parses the head and raises the errors. None here: the
Python path alone (``PYWEB_REGIONS=python``, or not built); tests set it to None to compare
the two (tests/protocol/test_c_head.py). Measured in docs/performance.md, "The C request head"."""
