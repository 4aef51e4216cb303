"""Property-testing HTTP/1.1 request parsers: hypothesis strategies and ``check_parser``.

The strategies generate what a server reads from one connection (RFC 9112):

* :func:`requests`: one valid request (HTTP/1.1 or 1.0, any method, the four target forms,
  header sets with repeated fields and odd spacing, bodies framed by ``Content-Length`` or
  ``Transfer-Encoding: chunked`` with chunk extensions and trailers) as a
  :class:`WireRequest`, which holds both the bytes and what a parser must make of them;
* :func:`pipelined`: several of them sent back to back on one connection;
* :func:`split`: the same bytes cut at random boundaries, as ``recv()`` hands them over;
* :func:`invalid_requests`: valid requests with one rule broken, each an
  :class:`InvalidRequest` labelled with the RFC 9112/9110 rule it breaks.

:func:`check_parser` turns them on anyone's parser: a function from a list of byte pieces
to a list of ``(method, target, headers, body)`` tuples. It runs the parser against pyweb's
own (``pyweb.protocol.RequestParser``, itself tested against h11) and, when they disagree,
raises an :class:`AssertionError` that says in plain words what went wrong on the smallest
input hypothesis could find.

pyweb's own protocol tests draw from these same strategies, with h11 as the oracle
(``tests/protocol/test_oracle.py``): one source of truth.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "pyweb.testing.http needs hypothesis: pip install 'pyweb[testing]' (or hypothesis)"
    ) from exc

import h11

from pyweb.protocol import (
    NEED_DATA,
    ConnectionClosed,
    Data,
    EndOfMessage,
    Limits,
    ProtocolError,
    Request,
    RequestParser,
)

__all__ = [
    "WireRequest", "InvalidRequest", "Parsed", "requests", "pipelined", "split",
    "invalid_requests", "RULES", "RFC_ALLOWS", "RFC_REQUIRED", "check_parser", "parse_with_pyweb", "parse_with_h11",
    "run_pyweb", "run_h11", "cut",
]

ParsedTuple = tuple[str, str, list[tuple[str, str]], bytes]
"""What a parser under test returns for one request: method, target, headers, body."""

# --- the pieces of a request (RFC 9110 §5.6.2, RFC 9112 §3, §5) ----------------------------

TCHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# Fields whose meaning the generator controls itself (framing, connection, host).
SPECIAL = {"host", "content-length", "transfer-encoding", "connection", "expect"}
PATH_CHARS = "abcXYZ0189-._~!$&'()*+,;=:@%/"
# field-vchar = VCHAR / obs-text (RFC 9110 §5.5): visible ASCII and bytes 0x80-0xFF, which
# a parser hands on as ISO-8859-1 (latin-1) characters.
VALUE_CHARS = "".join(chr(c) for c in range(0x21, 0x7F)) + "\x80\xa0\xe9\xff"
TARGET_FORMS = ("origin", "absolute", "asterisk", "authority")

tokens = st.text(TCHARS, min_size=1, max_size=12)
methods = st.one_of(
    st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
    tokens.filter(lambda m: m != "CONNECT"),
)
hosts = st.one_of(
    st.sampled_from(["example.org", "localhost:8000", "127.0.0.1", "[::1]:443", "a-b.c_d~e"]),
    st.from_regex(r"[a-z0-9]{1,10}(\.[a-z]{2,5})?(:[0-9]{1,5})?", fullmatch=True),
)
paths = st.text(PATH_CHARS, max_size=30).map(lambda p: "/" + p)
queries = st.one_of(st.just(""), st.text(PATH_CHARS + "?", max_size=20).map(lambda q: "?" + q))
field_names = tokens.filter(lambda n: n.lower() not in SPECIAL)
field_values = st.lists(st.text(VALUE_CHARS, min_size=1, max_size=10), max_size=4).map(" ".join)
# Optional whitespace around a value (RFC 9112 §5.1: OWS, not part of the value).
padding = st.sampled_from(["", " ", "\t", "  ", "\t "])


def _spelled(name: str) -> st.SearchStrategy[str]:
    """A field name in one of several letter cases (field names are case-insensitive)."""
    return st.sampled_from([name, name.lower(), name.upper(), name[0] + name[1:].lower()])


@dataclass(frozen=True)
class WireRequest:
    """One generated request: its bytes (``wire``) and what a parser must report.

    ``headers`` are the fields in order as sent, values without the surrounding
    whitespace; ``body`` is the body as the application sees it (chunked coding removed);
    ``ends_connection`` is true when nothing after this request belongs to the
    conversation (``Connection: close``, HTTP/1.0 without keep-alive, CONNECT).
    """

    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    wire: bytes
    trailers: tuple[tuple[str, str], ...] = ()
    ends_connection: bool = False

    def expected(self) -> ParsedTuple:
        """The ``(method, target, headers, body)`` tuple a parser should return."""
        return (self.method, self.target, list(self.headers), self.body)

    def __bytes__(self) -> bytes:
        return self.wire


@dataclass(frozen=True)
class InvalidRequest:
    """Bytes that hold an invalid request: ``before`` (valid requests sent first, possibly
    none), then one request that breaks ``rule`` (an RFC 9112/9110 rule, in words)."""

    wire: bytes
    rule: str
    before: tuple[WireRequest, ...] = ()

    def __bytes__(self) -> bytes:
        return self.wire


def _head(method: str, target: str, version: str, lines: Sequence[tuple[str, str]]) -> bytes:
    head = f"{method} {target} HTTP/{version}\r\n" + "".join(f"{n}:{v}\r\n" for n, v in lines)
    return head.encode("latin-1") + b"\r\n"


@st.composite
def _chunked(draw: Any) -> tuple[bytes, bytes, list[tuple[str, str]]]:
    """A chunked body (RFC 9112 §7.1): (decoded body, wire bytes, trailer fields)."""
    chunks = draw(st.lists(st.binary(min_size=1, max_size=30), max_size=4))
    wire = b""
    for chunk in chunks:
        size = draw(st.sampled_from(["%x", "%X", "0%x"])) % len(chunk)
        ext = draw(st.sampled_from(["", ";a=b", ';name="quoted value"', ";x"]))
        wire += f"{size}{ext}\r\n".encode() + chunk + b"\r\n"
    wire += b"0" + draw(st.sampled_from([b"", b";end"])) + b"\r\n"
    trailers = draw(st.lists(st.tuples(field_names, field_values), max_size=3))
    wire += b"".join(f"{n}: {v}\r\n".encode("latin-1") for n, v in trailers) + b"\r\n"
    return b"".join(chunks), wire, trailers


@st.composite
def requests(
    draw: Any,
    *,
    versions: Sequence[str] = ("1.1", "1.0"),
    target_forms: Sequence[str] = TARGET_FORMS,
    may_end_connection: bool = True,
) -> WireRequest:
    """A strategy for one valid request (a :class:`WireRequest`).

    ``versions``: the HTTP versions to draw from; ``target_forms``: which of the four
    request-target forms (RFC 9112 §3.2: ``origin``, ``absolute``, ``asterisk``, and
    ``authority``, which goes with CONNECT only); ``may_end_connection=False`` draws only
    requests after which the connection stays open (HTTP/1.1, no ``Connection: close``,
    no CONNECT), as every request but the last of a pipeline must be.
    """
    version = draw(st.sampled_from(list(versions))) if may_end_connection else "1.1"
    forms = [f for f in target_forms if may_end_connection or f != "authority"]
    form = draw(st.sampled_from(forms or ["origin"]))
    method = draw(methods)
    host = draw(hosts)
    if form == "asterisk":
        method, target = "OPTIONS", "*"
    elif form == "authority":
        method, target = "CONNECT", draw(st.sampled_from(["example.org:443", "127.0.0.1:80"]))
        host = target
    elif form == "absolute":
        scheme = draw(st.sampled_from(["http", "https"]))
        target = scheme + "://" + host + draw(paths) + draw(queries)
    else:
        target = draw(paths) + draw(queries)

    fields = draw(st.lists(st.tuples(field_names, field_values), max_size=6))
    if version == "1.1" or draw(st.booleans()):
        fields.insert(draw(st.integers(0, len(fields))), (draw(_spelled("Host")), host))
    if fields and draw(st.booleans()):  # a repeated ordinary field (RFC 9110 §5.3)
        ordinary = [f for f in fields if f[0].lower() != "host"]
        if ordinary:
            fields.append(draw(st.sampled_from(ordinary)))
    ends = version == "1.0" or form == "authority"
    if may_end_connection and draw(st.booleans()):
        close = draw(st.sampled_from(["close", "Close", "foo, close"]))
        fields.append((draw(_spelled("Connection")), close))
        ends = True
    if version == "1.1" and form != "authority" and draw(st.booleans()):
        fields.append(("Expect", "100-continue"))

    framing = "none"
    if form != "authority":
        framing = draw(st.sampled_from(["none", "cl", "chunked"] if version == "1.1"
                                       else ["none", "cl"]))
    body, wire_body, trailers = b"", b"", []
    if framing == "cl":
        body = wire_body = draw(st.binary(max_size=60))
        fields.insert(draw(st.integers(0, len(fields))),
                      (draw(_spelled("Content-Length")), str(len(body))))
    elif framing == "chunked":
        body, wire_body, trailers = draw(_chunked())
        fields.insert(draw(st.integers(0, len(fields))),
                      (draw(_spelled("Transfer-Encoding")), "chunked"))
    spaced = [(n, draw(padding) + v + draw(padding)) for n, v in fields]
    return WireRequest(
        method, target, version, tuple(fields), body,
        _head(method, target, version, spaced) + wire_body, tuple(trailers), ends,
    )


@st.composite
def pipelined(
    draw: Any,
    *,
    max_requests: int = 4,
    versions: Sequence[str] = ("1.1", "1.0"),
    target_forms: Sequence[str] = TARGET_FORMS,
) -> list[WireRequest]:
    """A strategy for several requests sent back to back on one connection.

    Every request but the last keeps the connection open; the last may end it, and then
    more bytes may follow that are no longer part of the conversation (a parser must stop
    at the request that ended the connection). ``b"".join(map(bytes, requests))`` is what
    the client sent.
    """
    count = draw(st.integers(1, max_requests))
    sent = [draw(requests(versions=versions, target_forms=target_forms,
                          may_end_connection=False)) for _ in range(count - 1)]
    sent.append(draw(requests(versions=versions, target_forms=target_forms)))
    if sent[-1].ends_connection and draw(st.booleans()):
        # What a client sent after the end: another request or any bytes at all.
        after = draw(st.one_of(
            requests(versions=versions, target_forms=target_forms).map(bytes),
            st.binary(min_size=1, max_size=20),
        ))
        last = sent[-1]
        sent[-1] = WireRequest(last.method, last.target, last.version, last.headers,
                               last.body, last.wire + after, last.trailers, True)
    return sent


def cut(data: bytes, points: Sequence[int]) -> list[bytes]:
    """``data`` cut at ``points`` (offsets; out-of-range and repeated ones ignored): the
    pieces, none empty."""
    inner = sorted({p for p in points if 0 < p < len(data)})
    bounds = [0, *inner, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def split(data: bytes) -> st.SearchStrategy[list[bytes]]:
    """A strategy for ``data`` cut into pieces at random boundaries (none empty), as the
    network may deliver it: in one piece, a byte at a time, or anything in between.
    Shrinks towards fewer cuts."""
    if len(data) <= 1:
        return st.just([data] if data else [])
    return _split(data)


@st.composite
def _split(draw: Any, data: bytes) -> list[bytes]:
    # Two ways to cut: at a few random points, or densely (a yes/no per byte boundary,
    # one byte at a time at the extreme). Dense costs one draw per byte, so the shrinker,
    # which prefers fewer draws, ends on the fewest cuts that still show a failure.
    if draw(st.booleans()):
        points = [i for i in range(1, len(data)) if draw(st.booleans())]
    else:
        points = draw(st.lists(st.integers(1, len(data) - 1), max_size=8))
    return cut(data, points)


# --- invalid requests: one rule broken, and which ---------------------------------------------

RULES = (
    "RFC 9112 §6.1: Content-Length together with Transfer-Encoding",
    "RFC 9110 §8.6: two Content-Length fields that differ",
    "RFC 9110 §8.6: Content-Length that is not a decimal number",
    "RFC 9112 §3.2: an HTTP/1.1 request without Host",
    "RFC 9112 §3.2: more than one Host field",
    "RFC 9112 §5.1: whitespace between a field name and its colon",
    "RFC 9112 §6.3: Transfer-Encoding whose final coding is not chunked",
    "RFC 9112 §7.1: a chunk size that is not hexadecimal",
    "RFC 9112 §7.1: chunk data longer than its chunk size",
    "RFC 9110 §5.5: NUL, CR or LF inside a field value",
    "RFC 9112 §3: a method that is not a token",
    "RFC 9112 §2.3: an HTTP-version that is not HTTP/DIGIT.DIGIT",
    "RFC 9112 §5: a field line without a colon",
    "RFC 9110 §5.1: a field name that is not a token",
    "RFC 9112 §3.2: a request-target in none of the four forms",
)
"""The rules :func:`invalid_requests` breaks, one per generated request."""

RFC_ALLOWS = {
    RULES[0]: (
        "RFC 9112 §6.1 lets a server reject such a request or process it by "
        "Transfer-Encoding alone; pyweb rejects it (two framings are how requests are "
        "smuggled past a proxy)"
    ),
    RULES[9]: (
        "RFC 9110 §5.5 lets a recipient reject the message or replace each CR, LF or NUL "
        "with a space; pyweb rejects it"
    ),
    RULES[14]: (
        "RFC 9112 §3 says a server SHOULD (not MUST) answer an invalid request-line with "
        "400 or a redirect; pyweb answers 400"
    ),
}
"""The rules of :data:`RULES` that are pyweb's choice where the RFC leaves one: what the
RFC allows instead. :func:`check_parser` holds a parser to them only with ``strict=True``."""

RFC_REQUIRED = tuple(rule for rule in RULES if rule not in RFC_ALLOWS)
"""The rules every parser must enforce: the RFC's MUSTs."""

_BAD_LENGTHS = ["abc", "-1", "+5", "1.5", "0x10", "1 2", ""]
_BAD_VERSIONS = ["HTTP/1", "HTTP/1.1.1", "http/1.1", "HTTP/11", "HTTP/1.x", "HTTPS/1.1"]
_BAD_CHUNK_SIZES = [b"zz", b"-1", b"", b"0x5", b"g"]
_BAD_METHODS = ["GE(T", "P@ST", "GET\x00", 'G"T', "GE[T]"]
_BAD_NAMES = ["X Y", "X@Y", "(X)", "X/Y", "X\tY"]


def _valid_base(draw: Any) -> tuple[str, str, list[tuple[str, str]]]:
    """An ordinary HTTP/1.1 origin-form request to break: method, target, fields."""
    method = draw(st.sampled_from(["GET", "POST", "PUT"]))
    target = draw(paths) + draw(queries)
    fields = [("Host", draw(hosts))] + draw(st.lists(st.tuples(field_names, field_values),
                                                     max_size=3))
    return method, target, fields


@st.composite
def _one_broken(draw: Any, kinds: Sequence[int]) -> tuple[str, bytes]:
    """(rule, bytes) of one request that breaks exactly one rule: ``RULES[kind]``."""
    method, target, fields = _valid_base(draw)
    at = draw(st.integers(0, len(fields)))
    kind = draw(st.sampled_from(kinds))
    if kind == 0:
        rule = RULES[0]
        body, wire, _ = draw(_chunked())
        fields[at:at] = [("Content-Length", str(len(body))), ("Transfer-Encoding", "chunked")]
        return rule, _head("POST", target, "1.1", fields) + wire
    if kind == 1:
        rule = RULES[1]
        n = draw(st.integers(0, 9))
        fields[at:at] = [("Content-Length", str(n)), ("Content-Length", str(n + 1))]
        return rule, _head("POST", target, "1.1", fields) + b"x" * (n + 1)
    if kind == 2:
        rule = RULES[2]
        fields.insert(at, ("Content-Length", " " + draw(st.sampled_from(_BAD_LENGTHS))))
        return rule, _head("POST", target, "1.1", fields) + b"abc"
    if kind == 3:
        rule = RULES[3]
        fields = [f for f in fields if f[0] != "Host"]
        return rule, _head(method, target, "1.1", fields)
    if kind == 4:
        rule = RULES[4]
        fields.insert(at, ("Host", " " + draw(hosts)))
        return rule, _head(method, target, "1.1", fields)
    if kind == 5:
        rule = RULES[5]
        name, value = draw(st.tuples(field_names, field_values))
        fields.insert(at, (name + draw(st.sampled_from([" ", "\t", "  "])), " " + value))
        return rule, _head(method, target, "1.1", fields)
    if kind == 6:
        rule = RULES[6]
        codings = draw(st.sampled_from(["chunked, gzip", "chunked, identity", "chunked, x"]))
        fields.insert(at, ("Transfer-Encoding", " " + codings))
        return rule, _head("POST", target, "1.1", fields) + b"0\r\n\r\n"
    if kind == 7:
        rule = RULES[7]
        size = draw(st.sampled_from(_BAD_CHUNK_SIZES))
        fields.insert(at, ("Transfer-Encoding", " chunked"))
        return rule, _head("POST", target, "1.1", fields) + size + b"\r\nabc\r\n0\r\n\r\n"
    if kind == 8:
        rule = RULES[8]
        data = draw(st.binary(min_size=2, max_size=20).filter(lambda d: d[:2] != b"\r\n"))
        size = draw(st.integers(1, len(data) - 1))
        fields.insert(at, ("Transfer-Encoding", " chunked"))
        chunk = f"{size:x}\r\n".encode() + data + b"\r\n0\r\n\r\n"
        return rule, _head("POST", target, "1.1", fields) + chunk
    if kind == 9:
        rule = RULES[9]
        bad = draw(st.sampled_from(["\x00", "\r", "a\rb", "\x00x"]))
        name, value = draw(st.tuples(field_names, field_values))
        fields.insert(at, (name, " " + value + bad + "v"))
        return rule, _head(method, target, "1.1", fields)
    if kind == 10:
        rule = RULES[10]
        return rule, _head(draw(st.sampled_from(_BAD_METHODS)), target, "1.1", fields)
    if kind == 11:
        rule = RULES[11]
        head = _head(method, target, "1.1", fields)
        return rule, head.replace(b"HTTP/1.1", draw(st.sampled_from(_BAD_VERSIONS)).encode(), 1)
    if kind == 12:
        rule = RULES[12]
        head = _head(method, target, "1.1", fields)
        line = f"{draw(field_names)} {draw(tokens)}\r\n".encode()
        start = head.index(b"\r\n") + 2
        return rule, head[:start] + line + head[start:]
    if kind == 13:
        rule = RULES[13]
        fields.insert(at, (draw(st.sampled_from(_BAD_NAMES)), " v"))
        return rule, _head(method, target, "1.1", fields)
    rule = RULES[14]
    bad = draw(st.sampled_from(["index.html", "*/x", "example.org", "http://user@h/"]))
    return rule, _head("GET", bad, "1.1", fields)


@st.composite
def invalid_requests(draw: Any, *, rules: Sequence[str] = RULES) -> InvalidRequest:
    """A strategy for bytes holding an invalid request (an :class:`InvalidRequest`):
    zero to two valid requests, then one that breaks one rule of RFC 9112 or RFC 9110,
    named in ``rule`` (one of :data:`RULES`; ``rules=`` to draw from fewer). A server must
    reject the broken request with a 400; a parser must raise on it."""
    unknown = set(rules) - set(RULES)
    if unknown or not rules:
        raise ValueError(f"rules must be some of pyweb.testing.http.RULES, got {sorted(unknown)}")
    before = draw(st.lists(requests(versions=("1.1",), target_forms=("origin",),
                                    may_end_connection=False), max_size=2))
    rule, broken = draw(_one_broken([RULES.index(r) for r in rules]))
    return InvalidRequest(b"".join(map(bytes, before)) + broken, rule, tuple(before))


# --- the reference parsers: pyweb's and h11's, driven the same way ----------------------------


@dataclass
class Parsed:
    """One complete request as a parser saw it, normalised for comparison."""

    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    keep_alive: bool = True

    def as_tuple(self) -> ParsedTuple:
        return (self.method, self.target, self.headers, self.body)


def run_pyweb(
    pieces: Sequence[bytes],
    eof: bool = False,
    limits: Limits | None = None,
    max_buffered: int | None = None,
) -> tuple[list[Parsed], ProtocolError | None, bool]:
    """Feed ``pieces`` to pyweb's parser, draining events after each one (and EOF at the
    end if ``eof``): (complete requests, the error raised or None, whether the connection
    was closed). Anything but :class:`ProtocolError` escapes; so does a parser that
    produces events forever or (with ``max_buffered``) buffers too much."""
    parser = RequestParser(limits or Limits())
    done: list[Parsed] = []
    body: list[bytes] = []
    current: list[Parsed] = []
    closed = False

    def drain() -> bool:
        for _ in range(100_000):  # bound: a parser that loops forever fails the test
            event = parser.next_event()
            if event is NEED_DATA:
                return False
            if isinstance(event, Request):
                assert not current, "a Request before the previous EndOfMessage"
                current.append(Parsed(event.method, event.target, event.http_version,
                                      list(event.headers), keep_alive=event.keep_alive))
                body.clear()
            elif isinstance(event, Data):
                assert current and event.data, "an empty Data event, or one outside a body"
                body.append(event.data)
            elif isinstance(event, EndOfMessage):
                request = current.pop()
                request.body, request.trailers = b"".join(body), list(event.trailers)
                done.append(request)
            elif isinstance(event, ConnectionClosed):
                return True
            else:  # pragma: no cover
                raise AssertionError(f"unexpected event {event!r}")
        raise AssertionError("parser produced events forever")

    try:
        for piece in pieces:
            parser.feed(piece)
            closed = drain()
            if max_buffered is not None:
                assert parser.buffered <= max_buffered
            if closed:
                break
        if eof and not closed:
            parser.feed(b"")
            closed = drain()
    except ProtocolError as exc:
        return done, exc, closed
    return done, None, closed


def run_h11(
    pieces: Sequence[bytes], eof: bool = False
) -> tuple[list[Parsed], h11.RemoteProtocolError | None, bool]:
    """Feed ``pieces`` to h11 as a server, as :func:`run_pyweb` does to pyweb.

    h11 needs our side of each cycle: after each request we send a response and call
    ``start_next_cycle()`` so the next pipelined request is read (h11 pauses otherwise)."""
    conn = h11.Connection(h11.SERVER)
    done: list[Parsed] = []
    body: list[bytes] = []
    current: list[Parsed] = []

    def latin1(pairs: Any) -> list[tuple[str, str]]:
        return [(n.decode("latin-1"), v.decode("latin-1")) for n, v in pairs]

    def drain() -> bool:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return False
            if isinstance(event, h11.Request):
                current.append(Parsed(event.method.decode("latin-1"),
                                      event.target.decode("latin-1"),
                                      event.http_version.decode("latin-1"),
                                      latin1(event.headers)))
                body.clear()
            elif isinstance(event, h11.Data):
                body.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                request = current.pop()
                request.body, request.trailers = b"".join(body), latin1(event.headers)
                request.keep_alive = conn.their_state is h11.DONE
                done.append(request)
                # 404, not 2xx: a 2xx answer to CONNECT would switch protocols.
                conn.send(h11.Response(status_code=404, headers=[("content-length", "0")]))
                conn.send(h11.EndOfMessage())
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return False
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed):
                return True

    def must_close() -> bool:
        return h11.MUST_CLOSE in (conn.their_state, conn.our_state)

    closed = False
    try:
        for piece in pieces:
            if must_close():
                break
            conn.receive_data(piece)
            closed = drain()
            if closed:
                break
        if eof and not closed and conn.their_state is not h11.MUST_CLOSE:
            conn.receive_data(b"")
            closed = drain()
    except h11.RemoteProtocolError as exc:
        return done, exc, closed
    return done, None, closed


def parse_with_pyweb(pieces: Sequence[bytes]) -> list[ParsedTuple]:
    """pyweb's parser in :func:`check_parser`'s contract (raises ProtocolError on bad
    input): the reference every other parser is compared with."""
    done, error, _ = run_pyweb(pieces)
    if error is not None:
        raise error
    return [r.as_tuple() for r in done]


def parse_with_h11(pieces: Sequence[bytes]) -> list[ParsedTuple]:
    """h11 in :func:`check_parser`'s contract (raises h11.RemoteProtocolError on bad input).

    h11 is more lenient than pyweb where RFC 9112 leaves the choice to the server, or
    leaves the check to the application: it takes ``Content-Length`` together with
    ``Transfer-Encoding`` (and Transfer-Encoding in HTTP/1.0), and any run of visible
    characters as a request-target. This wrapper rejects those as pyweb does, so that it
    passes :func:`check_parser`.
    """
    done, error, _ = run_h11(pieces)
    if error is not None:
        raise error
    for request in done:
        names = {n.lower() for n, _ in request.headers}
        if "transfer-encoding" in names and ("content-length" in names
                                             or request.version == "1.0"):
            raise ValueError("Transfer-Encoding with Content-Length or in HTTP/1.0")
        if not _target_form_ok(request.method, request.target):
            raise ValueError(f"request-target {request.target!r} is in none of the forms")
    return [r.as_tuple() for r in done]


def _target_form_ok(method: str, target: str) -> bool:
    """RFC 9112 §3.2, roughly: origin-form, asterisk-form (OPTIONS), absolute-form."""
    if target == "*":
        return method == "OPTIONS"
    if target.startswith("/"):
        return True
    scheme, sep, rest = target.partition("://")
    authority = rest.split("/", 1)[0].split("?", 1)[0]
    return bool(sep) and scheme.lower() in ("http", "https") and "@" not in authority \
        and authority != ""


# --- check_parser ---------------------------------------------------------------------------

# CONNECT (authority-form) is left out: pyweb is an origin server and answers it 501.
_CHECKED_FORMS = ("origin", "absolute", "asterisk")


def _show_bytes(data: bytes) -> str:
    return "\n".join(f"    {line!r}" for line in data.splitlines(keepends=True)) or "    b''"


def _show_pieces(pieces: Sequence[bytes]) -> str:
    if len(pieces) == 1:
        return "in one piece"
    ends, total = [], 0
    for piece in pieces[:-1]:
        total += len(piece)
        ends.append(str(total))
    shown = ", ".join(repr(p) for p in pieces)
    after = f"byte {ends[0]}" if len(ends) == 1 else f"bytes {', '.join(ends)}"
    return f"cut into {len(pieces)} pieces, after {after}:\n    [{shown}]"


def _show_requests(found: Sequence[Any]) -> str:
    if not found:
        return "    (no request)"
    return "\n".join(f"    {i}. {r!r}" for i, r in enumerate(found, 1))


def _header_key(pair: Any) -> Any:
    name, value = pair
    return (name.lower(), value) if isinstance(name, str) else pair


def _shape_problem(result: Any) -> str | None:
    """What is wrong with the type of a parser's result, or None."""
    if not isinstance(result, list):
        return f"the parser should return a list, it returned {type(result).__name__}"
    for i, item in enumerate(result, 1):
        if not (isinstance(item, tuple | list) and len(item) == 4):
            return f"request {i} should be a (method, target, headers, body) tuple: {item!r}"
        method, target, headers, body = item
        if not (isinstance(method, str) and isinstance(target, str)):
            return f"request {i}: method and target should be str: {method!r}, {target!r}"
        if not isinstance(body, bytes):
            return f"request {i}: the body should be bytes, got {type(body).__name__}"
        if not (isinstance(headers, list | tuple) and all(
                isinstance(h, tuple | list) and len(h) == 2
                and all(isinstance(x, str) for x in h) for h in headers)):
            return f"request {i}: headers should be a list of (name, value) str pairs"
    return None


def _first_difference(expected: Sequence[ParsedTuple], got: Sequence[Any]) -> str:
    """The first difference between pyweb's requests and the parser's, in words."""
    for i, (want, have) in enumerate(zip(expected, got, strict=False), 1):
        for what, a, b in (("method", want[0], have[0]), ("target", want[1], have[1])):
            if a != b:
                return f"request {i}: the {what} should be {a!r}, your parser says {b!r}"
        want_h, have_h = [_header_key(h) for h in want[2]], [_header_key(h) for h in have[2]]
        if want_h != have_h:
            for j, (a, b) in enumerate(zip(want_h, have_h, strict=False), 1):
                if a != b:
                    return (f"request {i}, header {j}: should be {tuple(want[2][j - 1])!r}, "
                            f"your parser says {tuple(have[2][j - 1])!r} (names are compared "
                            "case-insensitively, values exactly, without surrounding "
                            "whitespace)")
            return (f"request {i}: {len(want_h)} header fields, your parser found "
                    f"{len(have_h)}")
        if want[3] != have[3]:
            return f"request {i}: the body should be {want[3]!r}, your parser says {have[3]!r}"
    if len(expected) > len(got):
        return (f"pyweb found {_requests(len(expected))}, your parser {len(got)}: "
                f"request {len(got) + 1} is missing")
    return (f"pyweb found {_requests(len(expected))}, your parser {len(got)}: request "
            f"{len(expected) + 1} should not be there (nothing after a request that ends "
            "the connection, and no incomplete request, is part of the result)")


def _requests(n: int) -> str:
    return "1 request" if n == 1 else f"{n} requests"


def _valid_failure(data: bytes, pieces: Sequence[bytes], expected: list[ParsedTuple],
                   said: str, why: str) -> AssertionError:
    return AssertionError(
        f"check_parser: your parser gets valid requests wrong.\n{why}.\n\n"
        f"The bytes ({len(data)}):\n{_show_bytes(data)}\n"
        f"arrived {_show_pieces(pieces)}\n"
        f"pyweb parsed:\n{_show_requests(expected)}\n"
        f"your parser said:\n{said}"
    )


def _check_valid(parse: Callable[[list[bytes]], Any], data: bytes,
                 pieces: list[bytes]) -> None:
    expected = parse_with_pyweb(pieces)
    try:
        got = parse(list(pieces))
    except Exception as exc:  # a wrong answer, reported as one
        raise _valid_failure(data, pieces, expected, f"    raised {exc!r}",
                             "It raised an exception on valid bytes") from None
    problem = _shape_problem(got)
    if problem is not None:
        raise _valid_failure(data, pieces, expected, f"    {got!r}", problem)
    want = [(m, t, [_header_key(h) for h in hs], b) for m, t, hs, b in expected]
    have = [(m, t, [_header_key(h) for h in hs], b) for m, t, hs, b in got]
    if want != have:
        raise _valid_failure(data, pieces, expected, _show_requests(got),
                             _first_difference(expected, got))


def _check_invalid(parse: Callable[[list[bytes]], Any], invalid: InvalidRequest,
                   pieces: list[bytes]) -> None:
    try:
        parse_with_pyweb(pieces)
    except ProtocolError as exc:
        pyweb_said = f"pyweb rejects them: {type(exc).__name__}: {exc}"
    else:  # pragma: no cover - pyweb's own tests make sure this cannot happen
        raise RuntimeError(f"pyweb accepts an invalid request ({invalid.rule}): {invalid.wire!r}")
    _, h11_error, _ = run_h11(pieces, eof=True)
    h11_said = "h11 rejects them too" if h11_error else "h11 accepts them (it is more lenient)"
    try:
        got = parse(list(pieces))
    except Exception:
        return  # rejected, as it must be
    if invalid.rule in RFC_ALLOWS:
        whose = (f"This rule is pyweb's choice, held because strict=True: "
                 f"{RFC_ALLOWS[invalid.rule]}.")
    else:
        whose = "This rule is the RFC's: every server must enforce it."
    raise AssertionError(
        f"check_parser: your parser accepts an invalid request.\n"
        f"The last request breaks {invalid.rule}. {whose}\n\n"
        f"The bytes ({len(invalid.wire)}):\n{_show_bytes(invalid.wire)}\n"
        f"arrived {_show_pieces(pieces)}\n"
        f"{pyweb_said}; {h11_said}.\n"
        f"your parser said (it should have raised an exception):\n{_show_requests(got)}"
    )


def check_parser(
    parse: Callable[[list[bytes]], Any], *, max_examples: int = 200, strict: bool = False
) -> None:
    """Property-test ``parse``, a request parser, against pyweb's; raise AssertionError
    with the smallest counterexample found, in plain words.

    ``parse(pieces)`` gets the bytes of one connection as a list of pieces (cut anywhere)
    and returns one ``(method, target, headers, body)`` tuple per complete request:
    ``method`` and ``target`` as ``str``; ``headers`` a list of ``(name, value)`` ``str``
    pairs in the order received (bytes decoded as ISO-8859-1; names compared
    case-insensitively; values without the whitespace around them); ``body`` as
    ``bytes``, chunked coding removed. A request that ends the connection
    (``Connection: close``, HTTP/1.0 without keep-alive) is the last in the result,
    whatever follows it. On bytes holding an invalid request it raises any exception.

    Two properties, ``max_examples`` inputs each: on valid requests (:func:`pipelined`,
    :func:`split` at random) the result equals pyweb's; on invalid ones
    (:func:`invalid_requests`, also split) ``parse`` raises.

    Which invalid requests: by default those that break a rule the RFCs require
    (:data:`RFC_REQUIRED`), so any conforming parser passes, h11 included. With
    ``strict=True`` also those that break a rule where the RFC lets a server choose and
    pyweb chose to reject (:data:`RFC_ALLOWS` says what else the RFC allows). The failure
    message says which kind of rule was broken.
    """
    rules = RULES if strict else RFC_REQUIRED
    config = settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        print_blob=False,
        # No "explain" phase: it reruns the minimal example hundreds of times to say which
        # lines only failing inputs reach, which says little about someone else's parser.
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much],
    )

    @config
    @given(st.data())
    def valid_requests_parse_as_pyweb_parses_them(data: Any) -> None:
        sent = data.draw(pipelined(target_forms=_CHECKED_FORMS), label="requests")
        wire = b"".join(map(bytes, sent))
        _check_valid(parse, wire, data.draw(split(wire), label="pieces"))

    @config
    @given(st.data())
    def invalid_requests_raise(data: Any) -> None:
        invalid = data.draw(invalid_requests(rules=rules), label="invalid")
        _check_invalid(parse, invalid, data.draw(split(invalid.wire), label="pieces"))

    valid_requests_parse_as_pyweb_parses_them()
    invalid_requests_raise()
