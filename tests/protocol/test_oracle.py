"""Property-based tests with h11 as the oracle (hypothesis).

The strategies are pyweb's public ones (pyweb.testing.http), so what students check their
parsers with is what pyweb itself is held to.

1. Valid requests (pipelined, split at random byte boundaries): pyweb and h11 agree on
   everything they both report, and pyweb reports what the generator sent.
2. Mutated requests: whenever h11 rejects, pyweb rejects too (pyweb is at least as
   strict), apart from the documented differences in test_differences.py.
3. Arbitrary bytes: pyweb raises nothing but ProtocolError, terminates, and keeps its
   buffer within the limits.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pyweb.protocol import Limits, NotImplementedByServer
from pyweb.testing import http

from .helpers import run_h11, run_pyweb

pytestmark = pytest.mark.timeout(
    3600 if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else 120
)

# CONNECT (authority-form) is checked apart: pyweb answers it 501, h11 hands it on.
FORMS = ("origin", "absolute", "asterisk")


@st.composite
def pipelines(draw) -> bytes:
    return b"".join(map(bytes, draw(http.pipelined(target_forms=FORMS))))


@given(st.data(), st.booleans())
def test_valid_requests_agree_with_h11(data, eof: bool) -> None:
    sent = data.draw(http.pipelined(target_forms=FORMS), label="requests")
    pieces = data.draw(http.split(b"".join(map(bytes, sent))), label="pieces")
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


@given(st.data())
def test_pyweb_reports_what_the_generator_sent(data) -> None:
    # The generator's own model of each request (pyweb.testing.http.WireRequest) is what
    # pyweb reports: check_parser's reference and the strategies agree.
    sent = data.draw(http.pipelined(target_forms=FORMS), label="requests")
    pieces = data.draw(http.split(b"".join(map(bytes, sent))), label="pieces")
    ours = http.parse_with_pyweb(pieces)
    expected = [r.expected() for r in sent]
    for request in ours:
        request[2][:] = [(n.lower(), v) for n, v in request[2]]
    for request in expected:
        request[2][:] = [(n.lower(), v) for n, v in request[2]]
    assert ours == expected
    event(f"{len(sent)} requests")
    if sent[-1].ends_connection:
        event("the last request ends the connection")


@pytest.mark.parametrize("rule", http.RULES)
def test_pyweb_rejects_every_invalid_request(rule: str) -> None:
    # A third of the profile's examples per rule (the fifteen rules together still draw
    # 750 in make test; make fuzz runs tests/protocol with thousands per rule).
    @settings(max_examples=settings.default.max_examples // 3)
    @given(http.invalid_requests(rules=[rule]), st.booleans())
    def rejected(invalid, eof: bool) -> None:
        assert invalid.rule == rule
        done, err, _ = run_pyweb([invalid.wire], eof=eof)
        assert err is not None, invalid.wire
        assert len(done) == len(invalid.before)

    rejected()


@given(http.requests(target_forms=("authority",)))
def test_connect_is_501_while_h11_hands_it_on(request) -> None:
    assert request.method == "CONNECT" and request.ends_connection
    _, err, _ = run_pyweb([request.wire], eof=True)
    assert isinstance(err, NotImplementedByServer)
    theirs, herr, _ = run_h11([request.wire], eof=True)
    assert herr is None and [r.method for r in theirs] == ["CONNECT"]


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


@given(st.data(), st.booleans())
def test_arbitrary_bytes_only_protocol_errors_and_bounded(draw, eof: bool) -> None:
    data = draw.draw(st.one_of(st.binary(max_size=600), mutations(), pipelines()))
    pieces = draw.draw(http.split(data))
    # run_pyweb lets anything but ProtocolError escape, bounds the number of events,
    # and checks the buffer after every piece has been drained.
    run_pyweb(pieces, eof=eof, limits=SMALL, max_buffered=SMALL.max_header_bytes + 3)
