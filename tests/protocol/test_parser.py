"""Unit tests for the request parser: one test (or parametrized case) per rule of
RFC 9110/9112 that pyweb enforces, each checking the exact error class and status."""

from __future__ import annotations

import pytest

from pyweb.protocol import (
    NEED_DATA,
    BadRequest,
    BodyTooLarge,
    ConnectionClosed,
    Data,
    EndOfMessage,
    HeadersTooLarge,
    Limits,
    NotImplementedByServer,
    ProtocolError,
    Request,
    RequestParser,
    TargetTooLong,
    VersionNotSupported,
)
from pyweb.protocol.parser import MAX_EMPTY_LINES

from .helpers import DEFAULT_LIMITS, run_pyweb

H = b"Host: example.org\r\n"


def events(data: bytes, limits: Limits = DEFAULT_LIMITS, eof: bool = False) -> list:
    p = RequestParser(limits)
    p.feed(data)
    if eof:
        p.feed(b"")
    out = []
    while True:
        ev = p.next_event()
        if ev is NEED_DATA:
            return out
        out.append(ev)
        if isinstance(ev, ConnectionClosed):
            return out


def error(data: bytes, limits: Limits = DEFAULT_LIMITS, eof: bool = False) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        events(data, limits, eof)
    return info.value


def request(data: bytes) -> Request:
    ev = events(data)[0]
    assert isinstance(ev, Request)
    return ev


# -- request line -----------------------------------------------------------------------


def test_simple_get() -> None:
    evs = events(b"GET /a/b?x=1&y=2 HTTP/1.1\r\n" + H + b"Accept: */*\r\n\r\n")
    req, eom = evs
    assert isinstance(req, Request) and isinstance(eom, EndOfMessage)
    assert (req.method, req.target, req.http_version) == ("GET", "/a/b?x=1&y=2", "1.1")
    assert (req.path, req.query, req.host) == ("/a/b", "x=1&y=2", "example.org")
    assert req.headers == [("host", "example.org"), ("accept", "*/*")]
    assert req.keep_alive and not req.chunked and req.content_length is None
    assert eom.trailers == []


def test_absolute_form_takes_host_from_target_rfc9112_s3_2_2() -> None:
    req = request(b"GET http://other.example:8080/p?q HTTP/1.1\r\n" + H + b"\r\n")
    assert req.host == "other.example:8080"
    assert (req.path, req.query) == ("/p", "q")
    req = request(b"GET https://other.example HTTP/1.1\r\n" + H + b"\r\n")
    assert req.path == "/" and req.host == "other.example"


def test_absolute_form_with_userinfo_is_rejected_rfc9110_s4_2_4() -> None:
    assert isinstance(error(b"GET http://u:p@x/ HTTP/1.1\r\n" + H + b"\r\n"), BadRequest)


def test_asterisk_form_only_for_options() -> None:
    req = request(b"OPTIONS * HTTP/1.1\r\n" + H + b"\r\n")
    assert req.path == "*" and req.target == "*"
    e = error(b"GET * HTTP/1.1\r\n" + H + b"\r\n")
    assert type(e) is BadRequest and "OPTIONS" in e.message


def test_connect_is_not_implemented() -> None:
    e = error(b"CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n")
    assert type(e) is NotImplementedByServer and e.status == 501


def test_authority_form_without_connect_is_400() -> None:
    e = error(b"GET example.org:443 HTTP/1.1\r\n" + H + b"\r\n")
    assert type(e) is BadRequest and "CONNECT" in e.message


@pytest.mark.parametrize("line", [
    b"GET  / HTTP/1.1", b"GET /  HTTP/1.1", b"GET / HTTP/1.1 ", b" GET / HTTP/1.1",
    b"GET\t/ HTTP/1.1", b"GET /", b"GET / HTTP/1.1 extra", b"G(T / HTTP/1.1",
    b"GET /\x7f HTTP/1.1", b"GET /\x80 HTTP/1.1", b"GET / http/1.1", b"GET / HTTP/1",
    b"GET / HTTP/1.10", b"GET / HTTP/1.x", b"GET / HTTPS/1.1", b"GET foo HTTP/1.1",
    b"GET / HTTP/1.1\x00", b"",
])
def test_malformed_request_line_is_400(line: bytes) -> None:
    e = error(line + b"\r\n" + H + b"\r\n")
    assert type(e) is BadRequest, e
    assert e.status == 400


@pytest.mark.parametrize("version", [b"HTTP/2.0", b"HTTP/3.0", b"HTTP/2", b"HTTP/3", b"HTTP/0.9"])
def test_other_major_versions_are_505(version: bytes) -> None:
    e = error(b"GET / " + version + b"\r\n" + H + b"\r\n")
    assert type(e) is VersionNotSupported and e.status == 505
    assert version[5:] in e.offending


def test_higher_minor_version_is_treated_as_1_1_rfc9110_s6_2() -> None:
    assert request(b"GET / HTTP/1.7\r\n" + H + b"\r\n").http_version == "1.1"


def test_method_is_case_sensitive_token() -> None:
    assert request(b"get / HTTP/1.1\r\n" + H + b"\r\n").method == "get"
    assert request(b"M-SEARCH / HTTP/1.1\r\n" + H + b"\r\n").method == "M-SEARCH"


def test_leading_empty_lines_are_ignored_up_to_a_bound_rfc9112_s2_2() -> None:
    req = request(b"\r\n" * MAX_EMPTY_LINES + b"GET / HTTP/1.1\r\n" + H + b"\r\n")
    assert req.method == "GET"
    e = error(b"\r\n" * (MAX_EMPTY_LINES + 1) + b"GET / HTTP/1.1\r\n" + H + b"\r\n")
    assert type(e) is BadRequest


def test_garbage_first_byte_is_rejected_at_once() -> None:
    # A TLS ClientHello sent to the plain-HTTP port: rejected without waiting for CRLF.
    p = RequestParser()
    p.feed(b"\x16\x03\x01\x02\x00\x01")
    with pytest.raises(BadRequest):
        p.next_event()


# -- line endings ------------------------------------------------------------------------


def test_bare_lf_line_endings_are_rejected_rfc9112_s2_2() -> None:
    # Complete LF-only head: rejected at once (not after waiting for CRLF CRLF).
    e = error(b"GET / HTTP/1.1\nHost: a\n\n")
    assert type(e) is BadRequest and "LF" in e.message
    # Mixed: one LF-only field line in an otherwise CRLF head.
    assert type(error(b"GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n")) is BadRequest


def test_bare_cr_is_rejected_rfc9112_s2_2() -> None:
    assert type(error(b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n")) is BadRequest
    assert type(error(b"GET / HTTP/1.1\r" + H + b"\r\n")) is BadRequest


# -- header fields ----------------------------------------------------------------------


def test_field_names_lowercased_values_ows_stripped() -> None:
    req = request(b"GET / HTTP/1.1\r\n" + H + b"X-Thing: \t a  b \t\r\nEMPTY:\r\n\r\n")
    assert req.headers[1:] == [("x-thing", "a  b"), ("empty", "")]
    assert req.header("X-THING") == "a  b"


def test_whitespace_before_colon_is_400_rfc9112_s5_1() -> None:
    e = error(b"GET / HTTP/1.1\r\n" + H + b"X-Thing : a\r\n\r\n")
    assert type(e) is BadRequest and "colon" in e.message and b"X-Thing" in e.offending


def test_obs_fold_is_400_rfc9112_s5_2() -> None:
    e = error(b"GET / HTTP/1.1\r\n" + H + b"X: a\r\n  b\r\n\r\n")
    assert type(e) is BadRequest and "folding" in e.message
    assert type(error(b"GET / HTTP/1.1\r\n\tX: a\r\n" + H + b"\r\n")) is BadRequest


@pytest.mark.parametrize("line", [
    b"X: a\x00b", b"X: a\x0bb", b"X: a\x0cb", b"X-\x01: a", b"X Y: a", b": a", b"X", b"X\x80: a",
    b"(X): a",
])
def test_invalid_field_lines_are_400(line: bytes) -> None:
    e = error(b"GET / HTTP/1.1\r\n" + H + line + b"\r\n\r\n")
    assert type(e) is BadRequest, e


def test_obs_text_and_htab_in_values_are_accepted() -> None:
    req = request(b"GET / HTTP/1.1\r\n" + H + b"Cookie: a\tb\r\nX: \xe9t\xe9\r\n\r\n")
    assert req.headers[1:] == [("cookie", "a\tb"), ("x", "\xe9t\xe9")]


# -- Host ---------------------------------------------------------------------------------


def test_missing_host_in_1_1_is_400_rfc9112_s3_2() -> None:
    e = error(b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n")
    assert type(e) is BadRequest and "Host" in e.message


def test_missing_host_in_1_0_is_fine() -> None:
    req = request(b"GET / HTTP/1.0\r\n\r\n")
    assert req.host == "" and req.http_version == "1.0"


def test_two_hosts_is_400_rfc9112_s3_2() -> None:
    e = error(b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n")
    assert type(e) is BadRequest and "Host" in e.message


@pytest.mark.parametrize("host", [b"a b", b"a/b", b"u@a", b"a?b", b"[::1", b"a:b"])
def test_invalid_host_is_400_rfc9110_s7_2(host: bytes) -> None:
    assert type(error(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")) is BadRequest


@pytest.mark.parametrize("host", [b"example.org", b"example.org:8080", b"127.0.0.1:80",
                                  b"[::1]:8000", b"", b"xn--bcher-kva.example", b"a:"])
def test_valid_hosts(host: bytes) -> None:
    assert request(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n").host == host.decode()


# -- Content-Length ------------------------------------------------------------------------


def test_content_length_body() -> None:
    req, data, eom = events(b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 5\r\n\r\nhello")
    assert req.content_length == 5 and data == Data(b"hello") and isinstance(eom, EndOfMessage)


def test_content_length_zero_means_no_body() -> None:
    req, eom = events(b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 0\r\n\r\n")
    assert req.content_length == 0 and isinstance(eom, EndOfMessage)


@pytest.mark.parametrize("fields", [
    b"Content-Length: 5\r\nContent-Length: 5\r\n", b"Content-Length: 5, 5\r\n",
    b"Content-Length: 005\r\n",
])
def test_identical_content_lengths_are_merged_rfc9110_s8_6(fields: bytes) -> None:
    req, data, _ = events(b"POST / HTTP/1.1\r\n" + H + fields + b"\r\nhello")
    assert req.content_length == 5 and data.data == b"hello"


@pytest.mark.parametrize("value", [
    b"+5", b"-1", b"5.0", b"0x5", b"", b"5, 6", b",5", b"5,", b"five", b"\xb2", b"5 5",
])
def test_invalid_content_length_is_400(value: bytes) -> None:
    e = error(b"POST / HTTP/1.1\r\n" + H + b"Content-Length: " + value + b"\r\n\r\nhello")
    assert type(e) is BadRequest


def test_differing_content_length_fields_are_400() -> None:
    e = error(b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\n")
    assert type(e) is BadRequest


def test_content_length_over_limit_is_413_at_the_head() -> None:
    p = RequestParser(Limits(max_body=10))
    p.feed(b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 11\r\n\r\n")
    with pytest.raises(BodyTooLarge) as info:
        p.next_event()
    assert info.value.status == 413


def test_huge_content_length_is_413_not_a_crash() -> None:
    e = error(b"POST / HTTP/1.1\r\n" + H + b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n")
    assert type(e) is BodyTooLarge


# -- Transfer-Encoding ----------------------------------------------------------------------


def chunked(body: bytes, trailers: bytes = b"") -> bytes:
    return (b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n" + body
            + b"0\r\n" + trailers + b"\r\n")


def test_chunked_body_with_extensions_and_trailers() -> None:
    evs = events(chunked(b"5;name=value\r\nhello\r\nA; x\r\n, world!!!\r\n", b"X-Sum: 1\r\n"))
    req = evs[0]
    assert req.chunked and req.content_length is None
    assert b"".join(e.data for e in evs if isinstance(e, Data)) == b"hello, world!!!"
    assert evs[-1] == EndOfMessage([("x-sum", "1")])


def test_chunk_size_hex_is_case_insensitive() -> None:
    evs = events(chunked(b"a\r\n0123456789\r\nB\r\n0123456789a\r\n"))
    assert sum(len(e.data) for e in evs if isinstance(e, Data)) == 21


@pytest.mark.parametrize("body", [
    b"g\r\nx\r\n", b"5\r\nhelloX\r\n", b" 5\r\nhello\r\n", b"5\nhello\r\n", b"-5\r\nhello\r\n",
    b"\r\n", b"5;a\x00\r\nhello\r\n", b"1" * 21 + b"\r\n",
])
def test_invalid_chunks_are_400(body: bytes) -> None:
    assert type(error(chunked(body), eof=True)) is BadRequest


def test_chunk_line_too_long_is_400() -> None:
    p = RequestParser(Limits(max_chunk_line=20))
    p.feed(b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5;" + b"x" * 40)
    assert isinstance(p.next_event(), Request)
    with pytest.raises(BadRequest) as info:
        p.next_event()
    assert "chunk-size line" in info.value.message


def test_chunked_body_over_limit_is_413() -> None:
    p = RequestParser(Limits(max_body=8))
    p.feed(chunked(b"5\r\nhello\r\n5\r\nhello\r\n"))
    assert isinstance(p.next_event(), Request)
    assert p.next_event() == Data(b"hello")
    with pytest.raises(BodyTooLarge):
        p.next_event()


def test_trailers_count_towards_header_limits() -> None:
    limits = Limits(max_headers=3)
    assert events(chunked(b"", b"A: 1\r\n"), limits)[-1] == EndOfMessage([("a", "1")])
    assert type(error(chunked(b"", b"A: 1\r\nB: 2\r\n"), limits)) is HeadersTooLarge
    limits = Limits(max_header_bytes=80)
    assert type(error(chunked(b"", b"A: " + b"x" * 40 + b"\r\n"), limits)) is HeadersTooLarge


def test_trailers_are_validated_like_fields() -> None:
    assert type(error(chunked(b"", b"A : 1\r\n"))) is BadRequest
    assert type(error(chunked(b"", b"A: 1\r\n b\r\n"))) is BadRequest
    assert type(error(chunked(b"", b"A: 1\nB: 2\n\n"), eof=True)) is BadRequest


def test_content_length_with_transfer_encoding_is_400_rfc9112_s6_1() -> None:
    data = (b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"
            b"\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\n" + H + b"\r\n")
    e = error(data)
    assert type(e) is BadRequest and "smuggling" in e.message


@pytest.mark.parametrize("te,exc", [
    (b"gzip, chunked", NotImplementedByServer),
    (b"identity", NotImplementedByServer),
    (b"gzip", NotImplementedByServer),
    (b"foo", NotImplementedByServer),
    (b"chunked, gzip", BadRequest),
    (b"chunked, chunked", BadRequest),
    (b"", BadRequest),
    (b"chunked;x=1", BadRequest),
])
def test_transfer_codings_other_than_final_chunked_rfc9112_s6_3(te: bytes, exc: type) -> None:
    e = error(b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: " + te + b"\r\n\r\n0\r\n\r\n")
    assert type(e) is exc, e


def test_transfer_encoding_across_two_fields_is_one_list() -> None:
    e = error(b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert type(e) is BadRequest


def test_transfer_encoding_chunked_is_case_insensitive() -> None:
    assert request(b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding:  Chunked \r\n\r\n").chunked


def test_transfer_encoding_in_http_1_0_is_400_rfc9112_s6_1() -> None:
    e = error(b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert type(e) is BadRequest


# -- persistence, Expect, pipelining --------------------------------------------------------------


@pytest.mark.parametrize("version,conn,keep", [
    (b"1.1", None, True), (b"1.1", b"close", False), (b"1.1", b"Upgrade, CLOSE", False),
    (b"1.1", b"keep-alive", True), (b"1.0", None, False), (b"1.0", b"keep-alive", True),
    (b"1.0", b"Keep-Alive, foo", True), (b"1.0", b"keep-alive, close", False),
])
def test_keep_alive_rfc9112_s9_3(version: bytes, conn: bytes | None, keep: bool) -> None:
    head = b"GET / HTTP/" + version + b"\r\n" + H
    if conn is not None:
        head += b"Connection: " + conn + b"\r\n"
    assert request(head + b"\r\n").keep_alive is keep


def test_expect_100_continue() -> None:
    req = request(b"POST / HTTP/1.1\r\n" + H + b"Expect: 100-Continue\r\nContent-Length: 1\r\n\r\n")
    assert req.expect_continue
    assert not request(b"POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n").expect_continue
    assert not request(b"GET / HTTP/1.1\r\n" + H + b"Expect: 200-ok\r\n\r\n").expect_continue


def test_pipelined_requests_come_out_one_by_one() -> None:
    data = (b"GET /1 HTTP/1.1\r\n" + H + b"\r\n"
            b"POST /2 HTTP/1.1\r\n" + H + b"Content-Length: 3\r\n\r\nabc"
            b"POST /3 HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n"
            b"GET /4 HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n"
            b"GET /ignored HTTP/1.1\r\n" + H + b"\r\n")
    kinds = [(type(e).__name__, getattr(e, "target", getattr(e, "data", None)))
             for e in events(data)]
    assert kinds == [
        ("Request", "/1"), ("EndOfMessage", None),
        ("Request", "/2"), ("Data", b"abc"), ("EndOfMessage", None),
        ("Request", "/3"), ("Data", b"de"), ("EndOfMessage", None),
        ("Request", "/4"), ("EndOfMessage", None),
    ]


def test_after_a_non_keep_alive_request_need_data_forever() -> None:
    p = RequestParser()
    p.feed(b"GET / HTTP/1.0\r\n\r\n")
    assert isinstance(p.next_event(), Request)
    assert isinstance(p.next_event(), EndOfMessage)
    p.feed(b"GET / HTTP/1.0\r\n\r\n")
    assert p.next_event() is NEED_DATA and p.next_event() is NEED_DATA
    assert p.buffered == 0


def test_byte_by_byte_feeding_gives_the_same_events() -> None:
    data = (b"POST /x?y HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
            b"3;e=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\n"
            b"\r\nPUT /z HTTP/1.1\r\n" + H + b"Content-Length: 4\r\n\r\nwxyz")
    whole, err, _ = run_pyweb([data])
    bytewise, err2, _ = run_pyweb([data[i:i + 1] for i in range(len(data))])
    assert err is None and err2 is None
    assert whole == bytewise and len(whole) == 2
    assert whole[0].body == b"abc0123456789abcdef" and whole[0].trailers == [("t", "1")]


def test_pending_body_and_buffered() -> None:
    p = RequestParser()
    p.feed(b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 4\r\n\r\nab")
    assert p.buffered > 0 and not p.pending_body
    assert isinstance(p.next_event(), Request)
    assert p.pending_body and p.buffered == 2
    assert p.next_event() == Data(b"ab")
    assert p.next_event() is NEED_DATA and p.pending_body
    p.feed(b"cd")
    assert p.next_event() == Data(b"cd")
    assert isinstance(p.next_event(), EndOfMessage) and not p.pending_body


def test_body_bytes_are_handed_out_as_they_arrive() -> None:
    p = RequestParser()
    p.feed(b"POST / HTTP/1.1\r\n" + H + b"Content-Length: 1000000\r\n\r\n")
    assert isinstance(p.next_event(), Request)
    for _ in range(100):
        p.feed(b"x" * 10_000)
        assert p.next_event() == Data(b"x" * 10_000)
        assert p.buffered == 0
    assert isinstance(p.next_event(), EndOfMessage)


# -- limits ---------------------------------------------------------------------------------------


def test_request_line_too_long_is_414_without_waiting_for_crlf() -> None:
    p = RequestParser(Limits(max_request_line=100))
    p.feed(b"GET /" + b"a" * 95)  # exactly 100 bytes: could still be fine
    assert p.next_event() is NEED_DATA
    p.feed(b"a")  # 101 bytes and no CRLF: too long, before any CRLF arrives
    with pytest.raises(TargetTooLong) as info:
        p.next_event()
    assert info.value.status == 414


def test_request_line_at_the_limit_is_fine() -> None:
    line = b"GET /" + b"a" * 86 + b" HTTP/1.1"
    assert len(line) == 100
    assert isinstance(events(line + b"\r\n" + H + b"\r\n", Limits(max_request_line=100))[0],
                      Request)
    assert type(error(b"GET /a" + line[5:] + b"\r\n" + H + b"\r\n",
                      Limits(max_request_line=100))) is TargetTooLong


def test_header_block_too_large_is_431() -> None:
    limits = Limits(max_header_bytes=200)
    p = RequestParser(limits)
    p.feed(b"GET / HTTP/1.1\r\n" + H)
    assert p.next_event() is NEED_DATA
    p.feed(b"X: " + b"y" * 300)
    with pytest.raises(HeadersTooLarge) as info:
        p.next_event()
    assert info.value.status == 431


def test_too_many_header_fields_is_431() -> None:
    fields = b"".join(b"X-%d: v\r\n" % i for i in range(10))
    assert isinstance(events(b"GET / HTTP/1.1\r\n" + H + fields + b"\r\n", Limits(max_headers=11))[0],
                      Request)
    e = error(b"GET / HTTP/1.1\r\n" + H + fields + b"\r\n", Limits(max_headers=10))
    assert type(e) is HeadersTooLarge


def test_buffer_stays_bounded_under_a_slow_flood() -> None:
    limits = Limits(max_request_line=1000, max_header_bytes=4000)
    p = RequestParser(limits)
    p.feed(b"GET / HTTP/1.1\r\n")
    with pytest.raises(HeadersTooLarge):
        for _ in range(10_000):
            p.feed(b"X-A: " + b"b" * 95 + b"\r\n")
            assert p.next_event() is NEED_DATA
            assert p.buffered <= limits.max_header_bytes + 102


# -- EOF and errors ------------------------------------------------------------------------------------


def test_eof_at_a_boundary_is_connection_closed() -> None:
    evs = events(b"GET / HTTP/1.1\r\n" + H + b"\r\n", eof=True)
    assert [type(e) for e in evs] == [Request, EndOfMessage, ConnectionClosed]
    assert [type(e) for e in events(b"", eof=True)] == [ConnectionClosed]
    assert [type(e) for e in events(b"\r\n", eof=True)] == [ConnectionClosed]


@pytest.mark.parametrize("data", [
    b"GET / HTTP/1.1\r\nHost: a\r\n",
    b"G",
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhel",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: 1\r\n",
])
def test_eof_inside_a_request_is_400_incomplete(data: bytes) -> None:
    e = error(data, eof=True)
    assert type(e) is BadRequest and "incomplete" in e.message


def test_errors_are_sticky() -> None:
    p = RequestParser()
    p.feed(b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n")
    with pytest.raises(BadRequest) as first:
        p.next_event()
    p.feed(b"GET / HTTP/1.1\r\n" + H + b"\r\n")
    with pytest.raises(BadRequest) as second:
        p.next_event()
    assert first.value is second.value
    assert b"Bad Header" in first.value.offending


def test_error_messages_name_the_offending_thing() -> None:
    e = error(b"GET / HTTP/1.1\r\n" + H + b"Content-Length: abc\r\n\r\n")
    assert "abc" in e.message and e.offending == b"abc"


# -- the request line's fast path (str methods) and the regex accept the same lines --------


def _outcome(line: bytes) -> object:
    """What the parser makes of ``line`` with a Host field: the request's fields, or the
    error's class, status and message."""
    try:
        (ev, *_) = events(line + b"\r\n" + H + b"\r\n")
    except ProtocolError as err:
        return (type(err), err.status, err.message)
    return (ev.method, ev.target, ev.http_version, ev.path, ev.query, ev.host)


@pytest.mark.parametrize(
    "line",
    [
        b"GET /a HTTP/1.1",
        b"GET /a?x=1&y HTTP/1.0",
        b"PATCH /a HTTP/1.1",
        b"get /a HTTP/1.1",  # a token, but not a common method: the regex decides
        b"GET /a HTTP/1.2",  # a higher minor version counts as 1.1
        b"GET /a HTTP/2.0",  # 505
        b"GET /a http/1.1",
        b"GET  /a HTTP/1.1",  # two spaces
        b"GET /a HTTP/1.1 ",
        b"GET /a\tb HTTP/1.1",
        b"GET /a\x7fb HTTP/1.1",
        b"GET /\xe9 HTTP/1.1",  # obs-text is not VCHAR
        b"GET /a\x0bb HTTP/1.1",
        b"GET * HTTP/1.1",
        b"OPTIONS * HTTP/1.1",
        b"GET http://example.org/a?b HTTP/1.1",
        b"GET example.org:80 HTTP/1.1",
        b"CONNECT example.org:80 HTTP/1.1",
    ],
)
def test_request_line_fast_path_agrees_with_the_regex(
    line: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _outcome(line)
    monkeypatch.setattr("pyweb.protocol.parser._COMMON_METHODS", frozenset())  # regex only
    assert _outcome(line) == fast


def test_host_cache_remembers_only_valid_hosts() -> None:
    for _ in range(2):  # the second time from the cache (good) or the regex again (bad)
        (req, *_) = events(b"GET / HTTP/1.1\r\nHost: cached.example:8080\r\n\r\n")
        assert req.host == "cached.example:8080"
        with pytest.raises(BadRequest, match="invalid Host"):
            events(b"GET / HTTP/1.1\r\nHost: bad host\r\n\r\n")


def test_take_leftover_hands_over_the_bytes_behind_a_request() -> None:
    # An upgrade's client may send its first WebSocket frame right behind the handshake.
    parser = RequestParser()
    parser.feed(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n\x81\x05hello")
    event = parser.next_event()
    assert isinstance(event, Request) and event.target == "/ws"
    assert parser.buffered == 7
    assert parser.take_leftover() == b"\x81\x05hello"
    assert parser.buffered == 0 and parser.take_leftover() == b""
