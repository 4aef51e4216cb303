"""The C request head (``parser.C_HEAD``, ``pyweb_regions._head``) against the Python path.

The C function takes the everyday head and declines the rest; for what it takes it must
produce exactly what the Python path produces. So:

1. differential (hypothesis): heads built from the parts the C path reads (methods,
   targets, versions, Host, Content-Length, Connection, Expect, Transfer-Encoding, OWS,
   name case) and from pyweb.testing's valid requests, then mutated (bytes changed,
   inserted, deleted), under default and small limits, fed whole and in random pieces:
   the same events, the same error (class, status, message, offending bytes) and the same
   parser state after every piece, with the C path and without it;
2. the heads real clients send (wrk, curl, ab, a browser, a form POST) are taken by the C
   path (a Request, not a decline), the unusual ones are declined, an incomplete head is
   reported as such and the parser's own checks on it still run;
3. the Request made in C is a normal Request, and parsing many heads leaks nothing.

(The rest of tests/protocol runs with the C path on and off: conftest.py.)
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import os
import subprocess
import sys
import tracemalloc

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pyweb.protocol import (
    NEED_DATA,
    ConnectionClosed,
    Limits,
    ProtocolError,
    Request,
    RequestParser,
    TargetTooLong,
)
from pyweb.protocol import parser as P
from pyweb.testing import http

from .conftest import BUILT
from .test_oracle import SMALL, mutations, pipelines

pytestmark = [
    pytest.mark.timeout(3600 if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else 300),
    pytest.mark.skipif(
        BUILT is None, reason="pyweb_regions._head is not built (or PYWEB_REGIONS=python)"
    ),
]


@pytest.fixture(scope="module", autouse=True)
def head_path() -> str:
    """These tests choose the path themselves (conftest.py's runs them once, not twice)."""
    return "both"


def state_of(parser: RequestParser) -> tuple:
    """Every slot of the parser but its error (the error is compared by what it says)."""
    return tuple(
        bytes(value) if isinstance(value, bytearray) else value
        for value in (getattr(parser, name) for name in RequestParser.__slots__
                      if name != "_error")
    )


def outcome(pieces: list[bytes], limits: Limits, c_head: object) -> list:
    """Everything the parser does with ``pieces`` then EOF, with ``c_head`` as its C path:
    each event, its state after each piece, and its error."""
    saved = P.C_HEAD
    P.C_HEAD = c_head  # type: ignore[assignment]
    try:
        parser = RequestParser(limits)
        seen: list = []
        try:
            for piece in [*pieces, b""]:
                parser.feed(piece)
                for _ in range(1000):
                    ev = parser.next_event()
                    if ev is NEED_DATA:
                        break
                    seen.append(ev)
                    if isinstance(ev, ConnectionClosed):
                        return seen
                seen.append(state_of(parser))
        except ProtocolError as err:
            seen.append((type(err), err.status, err.message, err.offending))
        return seen
    finally:
        P.C_HEAD = saved  # type: ignore[assignment]


DEFAULT = Limits()


def taken_by_c(data: bytes, limits: Limits = DEFAULT) -> bool:
    """Whether the C path takes the first head of ``data`` (a Request: not declined, not
    incomplete, not an error from the parser's checks on an incomplete head)."""
    parser = RequestParser(limits)
    parser.feed(data)
    try:
        return type(BUILT(parser)) is Request  # type: ignore[misc]
    except ProtocolError:
        return False


def assert_agree(pieces: list[bytes], limits: Limits) -> None:
    assert outcome(pieces, limits, BUILT) == outcome(pieces, limits, None)


def assert_agree_and_say(pieces: list[bytes], limits: Limits) -> None:
    """:func:`assert_agree`, and tell hypothesis's statistics whether the C path took the
    first head (so a run shows both kinds were tried)."""
    assert_agree(pieces, limits)
    taken = taken_by_c(b"".join(pieces), limits)
    event("the C path takes the first head" if taken else "the C path declines the first head")


# -- 1. the differential test -----------------------------------------------------------

ODD = 7
"""(Not 0: hypothesis draws 0, the simplest integer, more often than one in ten.)"""


def mostly(usual: list, odd: list) -> st.SearchStrategy:
    """One of ``usual`` nine times in ten, else one of ``odd``: most heads are the kind the
    C path takes, and the rest probe where it must decline."""
    return st.integers(0, 9).flatmap(
        lambda i: st.sampled_from(odd) if i == ODD else st.sampled_from(usual)
    )


METHODS = mostly(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"],
                 ["CONNECT", "get", "PROPFIND", "G ET", ""])
TARGETS = st.integers(0, 9).flatmap(
    lambda i: st.sampled_from(["*", "http://example.org/a?b", "example.org:80", "/a b", "/\x7f",
                               "/caf\xe9", ""])
    if i == ODD
    else st.builds(
        lambda path, query: "/" + path + query,
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20),
        st.sampled_from(["", "?", "?a=1&b=2", "?q=%20x?y"]),
    )
)
VERSIONS = mostly(["HTTP/1.1", "HTTP/1.0"], ["HTTP/1.2", "HTTP/2.0", "http/1.1", "HTTP/1.1 ",
                                              "HTTP/1"])
HOSTS = mostly([("Host", "127.0.0.1:8080"), ("Host", "www.example.org"), ("Host", "")],
               [("Host", "[::1]:80"), ("Host", "a b"), ("Host", "a:b"), ("Host", "x:"),
                ("Host", "h\xe9"), ("Host", "a%2e~!$&'()*+,;=-_.b:0")])
FIELDS = mostly(
    [("Content-Length", "0"), ("Content-Length", "5"), ("Content-Length", "007"),
     ("Connection", "close"), ("Connection", "keep-alive"), ("Connection", "Keep-Alive, Upgrade"),
     ("Connection", " CLOSE ,\tfoo"), ("Connection", ""), ("Connection", ",,close,"),
     ("X-Forwarded-For", "1.2.3.4"), ("X-Forwarded-Proto", "https"),
     ("User-Agent", "curl/8.5.0"), ("Accept", "*/*"), ("Accept-Language", "en-GB,en;q=0.7"),
     ("Cookie", "a=b; c=d"), ("X-Empty", ""), ("X-Tab", "a\tb"), ("X-Spaces", "a  b")],
    [("Content-Length", "5, 5"), ("Content-Length", "123456789012345678901"),
     ("Content-Length", "-1"), ("Content-Length", "2000"), ("Content-Length", "x"),
     ("Expect", "100-continue"), ("Transfer-Encoding", "chunked"), ("X-Obs", "caf\xe9"),
     ("X-Ctl", "a\x01b"), ("X-Del", "a\x7f"), ("Bad Name", "x"), ("", "x"),
     ("X-Fold", "a\r\n b"), ("Host", "second.example")],
)
OWS = st.sampled_from([": ", ":", ":\t", ":  ", ": \t"])
TRAIL = st.sampled_from(["", "", " ", "\t", " \t "])


def spell(name: str, flags: list[bool]) -> str:
    """``name`` with the letters chosen by ``flags`` in upper case (names are
    case-insensitive, RFC 9110 §5.1)."""
    return "".join(c.upper() if f else c.lower() for c, f in zip(name, flags + [False] * 99, strict=False))


@st.composite
def heads(draw: st.DrawFn) -> bytes:
    """A request head from the parts the C path reads, and a body when it has a length."""
    line = f"{draw(METHODS)} {draw(TARGETS)} {draw(VERSIONS)}"
    fields = draw(st.lists(st.tuples(FIELDS, OWS, TRAIL, st.lists(st.booleans())), max_size=6))
    if draw(st.integers(0, 9)) != ODD:  # a Host, somewhere among the fields
        fields.insert(draw(st.integers(0, len(fields))),
                      (draw(HOSTS), draw(OWS), draw(TRAIL), draw(st.lists(st.booleans()))))
    lines = [line]
    for (name, value), ows, trail, case in fields:
        lines.append(f"{spell(name, case)}{ows}{value}{trail}")
    body = draw(st.binary(max_size=8))
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    if draw(st.integers(0, 9)) == ODD:  # empty lines first (RFC 9112 §2.2)
        data = draw(st.sampled_from([b"\r\n", b"\r\n\r\n"])) + data
    return data


@st.composite
def mutated(draw: st.DrawFn, source: st.SearchStrategy[bytes]) -> bytes:
    """``source`` with a few bytes changed, inserted or deleted."""
    data = bytearray(draw(source))
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
        pos = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["flip", "insert", "delete"]))
        if kind == "flip" and data:
            data[min(pos, len(data) - 1)] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from([b"\r", b"\n", b"\r\n", b" ", b"\t", b":",
                                                  b"\x00", b"\x80", b"?", b","])
                                 | st.binary(min_size=1, max_size=3))
        else:
            del data[pos : pos + draw(st.integers(1, 3))]
    return bytes(data)


LIMITS = st.sampled_from([Limits(), Limits(), SMALL]) | st.builds(
    Limits,
    max_request_line=st.integers(0, 80),
    max_header_bytes=st.integers(0, 300),
    max_headers=st.integers(0, 6),
    max_body=st.integers(0, 2100),
    max_chunk_line=st.integers(1, 40),
)


PIPELINES = settings(max_examples=settings.default.max_examples // 2)
"""Half the profile's examples for the agreement tests whose example is a whole pipeline
of requests (or a head fed byte by byte): 75 in make test, thousands in make fuzz, which runs
tests/protocol with HYPOTHESIS_PROFILE=fuzz."""


@PIPELINES
@given(st.data(), LIMITS)
def test_c_and_python_agree_on_built_heads(data: st.DataObject, limits: Limits) -> None:
    raw = data.draw(st.lists(mutated(heads()), min_size=1, max_size=3).map(b"".join))
    pieces = data.draw(st.just([raw]) | http.split(raw), label="pieces")
    assert_agree_and_say(pieces, limits)


@PIPELINES
@given(st.data(), LIMITS)
def test_c_and_python_agree_on_generated_requests(data: st.DataObject, limits: Limits) -> None:
    raw = data.draw(pipelines() | mutations() | mutated(pipelines()))
    pieces = data.draw(st.just([raw]) | http.split(raw), label="pieces")
    assert_agree_and_say(pieces, limits)


@PIPELINES
@given(st.data())
def test_c_and_python_agree_byte_by_byte(data: st.DataObject) -> None:
    # The incremental search (parser._scan) across many small reads.
    raw = data.draw(mutated(heads()) | pipelines())
    assert_agree_and_say([raw[i : i + 1] for i in range(len(raw))], Limits())


# -- 2. what the C path takes and declines ----------------------------------------------

WRK = b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"
CURL = (b"GET /api/items?page=2 HTTP/1.1\r\nHost: localhost:8000\r\nUser-Agent: curl/8.5.0\r\n"
        b"Accept: */*\r\n\r\n")
AB = (b"GET / HTTP/1.0\r\nHost: 127.0.0.1:8000\r\nUser-Agent: ApacheBench/2.3\r\n"
      b"Accept: */*\r\n\r\n")
BROWSER = (
    b"GET /static/css/site.css?v=42 HTTP/1.1\r\n"
    b"Host: www.example.org\r\n"
    b"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:126.0) Gecko/20100101 Firefox/126.0\r\n"
    b"Accept: text/css,*/*;q=0.1\r\n"
    b"Accept-Language: en-GB,en;q=0.7,de;q=0.3\r\n"
    b"Accept-Encoding: gzip, deflate, br, zstd\r\n"
    b"Referer: https://www.example.org/index.html\r\n"
    b"Connection: keep-alive\r\n"
    b"Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark\r\n"
    b"Sec-Fetch-Dest: style\r\n"
    b"Sec-Fetch-Mode: no-cors\r\n"
    b"\r\n"
)
FORM_POST = (b"POST /guestbook/add HTTP/1.1\r\nHost: www.example.org\r\n"
             b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 37\r\n\r\n"
             b"name=Ada+Lovelace&comment=hello+world")
PROXIED = (b"GET /a HTTP/1.1\r\nHost: example.org\r\nX-Forwarded-For: 10.0.0.1\r\n"
           b"X-Forwarded-Proto: https\r\nConnection: close\r\n\r\n")
EVERYDAY = {"wrk": WRK, "curl": CURL, "ab": AB, "browser": BROWSER, "form-post": FORM_POST,
            "proxied": PROXIED}


@pytest.mark.parametrize("name", EVERYDAY)
def test_the_c_path_takes_everyday_heads(name: str) -> None:
    data = EVERYDAY[name]
    assert taken_by_c(data)
    assert_agree([data], Limits())
    assert_agree([data * 3], Limits())  # pipelined


H = b"Host: a.example\r\n"
DECLINED = {
    "empty line first": b"\r\nGET / HTTP/1.1\r\n" + H,
    "lower-case method": b"get / HTTP/1.1\r\n" + H,
    "other method": b"PROPFIND / HTTP/1.1\r\n" + H,
    "CONNECT": b"CONNECT a.example:443 HTTP/1.1\r\n" + H,
    "asterisk": b"OPTIONS * HTTP/1.1\r\n" + H,
    "absolute-form": b"GET http://a.example/ HTTP/1.1\r\n" + H,
    "HTTP/1.2": b"GET / HTTP/1.2\r\n" + H,
    "HTTP/2.0": b"GET / HTTP/2.0\r\n" + H,
    "two spaces": b"GET  / HTTP/1.1\r\n" + H,
    "obs-text in target": b"GET /caf\xe9 HTTP/1.1\r\n" + H,
    "obs-text in value": b"GET / HTTP/1.1\r\n" + H + b"X: caf\xe9\r\n",
    "control in value": b"GET / HTTP/1.1\r\n" + H + b"X: a\x01b\r\n",
    "bare CR": b"GET / HTTP/1.1\r\n" + H + b"X: a\rb\r\n",
    "bare LF": b"GET / HTTP/1.1\r\n" + H + b"X: a\nb\r\n",
    "obs-fold": b"GET / HTTP/1.1\r\n" + H + b"X: a\r\n b\r\n",
    "space before colon": b"GET / HTTP/1.1\r\n" + H + b"X : a\r\n",
    "no colon": b"GET / HTTP/1.1\r\n" + H + b"X\r\n",
    "no Host in 1.1": b"GET / HTTP/1.1\r\nAccept: */*\r\n",
    "two Hosts": b"GET / HTTP/1.1\r\n" + H + H,
    "IPv6 Host": b"GET / HTTP/1.1\r\nHost: [::1]:8000\r\n",
    "bad Host": b"GET / HTTP/1.1\r\nHost: a b\r\n",
    "Transfer-Encoding": b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n",
    "Expect": b"POST / HTTP/1.1\r\n" + H + b"Expect: 100-continue\r\nContent-Length: 1\r\n",
    "Content-Length list": b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 5, 5\r\n",
    "two Content-Lengths": b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 5\r\n",
    "long Content-Length": b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1234567890123456789\r\n",
    "body over max_body": b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 16777217\r\n",
}


@pytest.mark.parametrize("name", DECLINED)
def test_the_c_path_declines_unusual_heads(name: str) -> None:
    data = DECLINED[name] + b"\r\n"
    parser = RequestParser()
    parser.feed(data)
    before = state_of(parser)
    assert BUILT(parser) is None  # type: ignore[misc]
    assert state_of(parser) == before  # nothing consumed, nothing set
    assert_agree([data], Limits())


@pytest.mark.parametrize(
    ("limits", "data"),
    [
        (Limits(max_request_line=10), WRK),  # 414 from the Python path
        (Limits(max_header_bytes=len(WRK) - 1), WRK),  # 431
        (Limits(max_headers=1), CURL),  # 431
        (Limits(max_body=36), FORM_POST),  # 413
    ],
)
def test_the_c_path_declines_at_the_limits(limits: Limits, data: bytes) -> None:
    assert not taken_by_c(data, limits)
    assert taken_by_c(data, Limits(max_request_line=len(data.split(b"\r\n")[0]),
                                   max_header_bytes=data.index(b"\r\n\r\n") + 4,
                                   max_headers=data.count(b"\r\n") - 2,
                                   max_body=37))
    assert_agree([data], limits)


def test_an_incomplete_head_is_reported_and_checked() -> None:
    parser = RequestParser(Limits(max_request_line=20))
    parser.feed(b"GET /hello HTTP/1.1\r\nHost: a")
    assert BUILT(parser) is NEED_DATA  # type: ignore[misc]
    assert parser.buffered == parser._scan == 28  # searched, as _take_head searches
    # The parser's own checks on what has arrived still run: a request line over the
    # limit is 414 before its CRLF comes, ...
    parser = RequestParser(Limits(max_request_line=20))
    parser.feed(b"GET /" + b"a" * 30)
    with pytest.raises(TargetTooLong):
        BUILT(parser)  # type: ignore[misc]
    # ... and EOF inside a head is 400.
    parser = RequestParser()
    parser.feed(b"GET / HTTP/1.1\r\nHost: a\r\n")
    parser.feed(b"")
    with pytest.raises(ProtocolError, match="incomplete request"):
        BUILT(parser)  # type: ignore[misc]


# -- 3. the Request made in C -----------------------------------------------------------


def test_the_request_made_in_c_is_a_normal_request() -> None:
    parser = RequestParser()
    parser.feed(CURL)
    request = BUILT(parser)  # type: ignore[misc]
    assert type(request) is Request
    expected = outcome([CURL], Limits(), None)[0]
    assert request == expected and repr(request) == repr(expected)
    assert request.header("User-Agent") == "curl/8.5.0"
    assert dataclasses.asdict(request) == dataclasses.asdict(expected)
    assert dataclasses.replace(request, path="/x").path == "/x"
    assert copy.deepcopy(request) == request
    assert gc.is_tracked(request)
    request.host = "changed"  # a plain mutable dataclass, like the Python path's
    assert request.host == "changed"


def test_many_heads_leak_nothing() -> None:
    parser = RequestParser()

    def parse(n: int) -> None:
        for _ in range(n):
            for data in (BROWSER, FORM_POST, PROXIED):
                parser.feed(data)
                while parser.next_event() is not NEED_DATA:
                    pass

    saved, P.C_HEAD = P.C_HEAD, BUILT
    try:
        parse(100)
        tracemalloc.start()
        try:
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            parse(3000)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    finally:
        P.C_HEAD = saved
    # One string kept per request would be 9,000 objects (over 400 KB).
    assert grown < 64 * 1024, grown


def test_pyweb_regions_python_turns_the_c_path_off() -> None:
    code = "from pyweb.protocol import parser; print(parser.C_HEAD)"
    env = {**os.environ, "PYWEB_REGIONS": "python"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "None"
    env.pop("PYWEB_REGIONS")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert "parse_head" in out
