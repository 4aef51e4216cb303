"""Property-based tests with h11 as the oracle (hypothesis).

1. Valid requests (pipelined, split at random byte boundaries): pyweb and h11 agree on
   everything they both report.
2. Mutated requests: whenever h11 rejects, pyweb rejects too (pyweb is at least as
   strict), apart from the documented differences in test_differences.py.
3. Arbitrary bytes: pyweb raises nothing but ProtocolError, terminates, and keeps its
   buffer within the limits.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyweb.protocol import Limits

from .helpers import run_h11, run_pyweb, split_points

pytestmark = pytest.mark.timeout(
    3600 if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else 120
)

TCHARS = "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
SPECIAL = {"host", "content-length", "transfer-encoding", "connection", "expect"}
PATH_CHARS = "abcXYZ0189-._~!$&'()*+,;=:@%/"
VALUE_CHARS = (
    "".join(chr(c) for c in range(0x21, 0x7F)) + "\x80\xa0\xe9\xff"  # VCHAR, obs-text
)

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
values = st.builds(
    lambda words, lead, trail: lead + " ".join(words) + trail,
    st.lists(st.text(VALUE_CHARS, min_size=1, max_size=10), max_size=4),
    st.sampled_from(["", " ", "\t", "  "]),
    st.sampled_from(["", " ", "\t "]),
)
fields = st.lists(st.tuples(field_names, values), max_size=8)


@st.composite
def requests(draw, last: bool) -> dict:
    """One valid request as a dict, with its serialisation under "wire"."""
    version = draw(st.sampled_from(["1.1", "1.1", "1.0"])) if last else "1.1"
    method = draw(methods)
    form = draw(st.sampled_from(["origin", "origin", "absolute", "asterisk"]))
    host = draw(hosts)
    if form == "asterisk":
        method, target = "OPTIONS", "*"
    elif form == "absolute":
        target = draw(st.sampled_from(["http", "https"])) + "://" + host + draw(paths) + draw(queries)
    else:
        target = draw(paths) + draw(queries)
    headers = draw(fields)
    if version == "1.1" or draw(st.booleans()):
        headers.insert(draw(st.integers(0, len(headers))), ("Host", host))
    if draw(st.booleans()) and headers:  # duplicate an ordinary field
        headers.append(draw(st.sampled_from([h for h in headers if h[0] != "Host"] or [("X", "y")])))
    if last and draw(st.booleans()):
        headers.append(("Connection", draw(st.sampled_from(["close", "Close", "foo, close"]))))
    if version == "1.1" and draw(st.booleans()):
        headers.append(("Expect", "100-continue"))
    framing = draw(st.sampled_from(["none", "cl", "chunked"] if version == "1.1" else ["none", "cl"]))
    body = b""
    trailers: list[tuple[str, str]] = []
    wire_body = b""
    if framing == "cl":
        body = draw(st.binary(max_size=60))
        headers.append(("Content-Length", str(len(body))))
        wire_body = body
    elif framing == "chunked":
        headers.append(("Transfer-Encoding", "chunked"))
        chunks = draw(st.lists(st.binary(min_size=1, max_size=30), max_size=4))
        body = b"".join(chunks)
        for chunk in chunks:
            size = draw(st.sampled_from(["%x", "%X", "0%x"])) % len(chunk)
            ext = draw(st.sampled_from(["", ";a=b", ';name="quoted value"', ";x"]))
            wire_body += f"{size}{ext}\r\n".encode() + chunk + b"\r\n"
        wire_body += b"0" + draw(st.sampled_from([b"", b";end"])) + b"\r\n"
        trailers = draw(st.lists(st.tuples(field_names, values), max_size=3))
        wire_body += b"".join(f"{n}: {v}\r\n".encode("latin-1") for n, v in trailers) + b"\r\n"
    head = f"{method} {target} HTTP/{version}\r\n" + "".join(f"{n}: {v}\r\n" for n, v in headers)
    wire = head.encode("latin-1") + b"\r\n" + wire_body
    return {"wire": wire, "body": body, "method": method, "target": target}


@st.composite
def pipelines(draw) -> bytes:
    count = draw(st.integers(1, 4))
    reqs = [draw(requests(last=i == count - 1)) for i in range(count)]
    return b"".join(r["wire"] for r in reqs)


cuts = st.lists(st.integers(0, 10_000), max_size=8)


@given(pipelines(), cuts, st.booleans())
def test_valid_requests_agree_with_h11(data: bytes, cut: list[int], eof: bool) -> None:
    pieces = split_points(data, cut)
    ours, err, _ = run_pyweb(pieces, eof=eof)
    theirs, herr, _ = run_h11(pieces, eof=eof)
    assert herr is None, herr  # the generator makes only valid requests
    assert err is None, err
    assert len(ours) == len(theirs) >= 1
    for a, b in zip(ours, theirs, strict=True):
        assert (a.method, a.target, a.version) == (b.method, b.target, b.version)
        assert a.headers == b.headers
        assert a.body == b.body
        assert a.trailers == b.trailers
        assert a.keep_alive == b.keep_alive


INSERTS = [b"\r", b"\n", b"\x00", b" ", b":", b"\t", b"\r\n", b"\r\n ", b",", b"\x0b"]
CONFLICTS = [b"Content-Length: 3\r\n", b"Transfer-Encoding: chunked\r\n",
             b"Content-Length: 7\r\n", b"Host: other\r\n", b"Transfer-Encoding: gzip\r\n"]


@st.composite
def mutations(draw) -> bytes:
    data = bytearray(draw(pipelines()))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "dup_line", "conflict"]))
        pos = draw(st.integers(0, len(data)))
        if kind == "flip" and data:
            data[min(pos, len(data) - 1)] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.sampled_from(INSERTS) | st.binary(min_size=1, max_size=3))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 4))]
        elif kind == "dup_line":
            start = data.rfind(b"\r\n", 0, pos) + 2
            end = data.find(b"\r\n", pos)
            if end > start:
                data[end + 2:end + 2] = data[start:end + 2]
        else:
            end = data.find(b"\r\n")
            if end >= 0:
                data[end + 2:end + 2] = draw(st.sampled_from(CONFLICTS))
    return bytes(data)


# h11 messages for the documented cases where pyweb accepts what h11 rejects
# (see test_differences.py): an empty line before a request line (RFC 9112 §2.2).
KNOWN_H11_ONLY_REJECTIONS = ("no request line received",)


@given(mutations())
def test_whatever_h11_rejects_pyweb_rejects(data: bytes) -> None:
    theirs, herr, _ = run_h11([data], eof=True)
    ours, err, _ = run_pyweb([data], eof=True)
    if herr is not None and err is None:
        assert str(herr) in KNOWN_H11_ONLY_REJECTIONS, (herr, ours)
    if herr is None and err is None:
        # Both accepted: they must have seen the same requests.
        assert [(r.method, r.target, r.body) for r in ours][: len(theirs)] == [
            (r.method, r.target, r.body) for r in theirs
        ][: len(ours)]


SMALL = Limits(max_request_line=64, max_header_bytes=256, max_headers=8, max_body=1000,
               max_chunk_line=32)


@given(st.one_of(st.binary(max_size=600), mutations(), pipelines()), cuts, st.booleans())
def test_arbitrary_bytes_only_protocol_errors_and_bounded(data: bytes, cut: list[int],
                                                          eof: bool) -> None:
    pieces = split_points(data, cut)
    # run_pyweb lets anything but ProtocolError escape, bounds the number of events,
    # and checks the buffer after every piece has been drained.
    run_pyweb(pieces, eof=eof, limits=SMALL, max_buffered=SMALL.max_header_bytes + 3)
