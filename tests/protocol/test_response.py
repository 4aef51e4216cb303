"""Tests for the response writer (RFC 9112 §6, §7; RFC 9110 §6.4.1, §8.6, §15).

Every framed response is read back by h11 acting as the client, the oracle for "a
conforming client can tell where this response ends and whether the connection stays".
"""

from __future__ import annotations

import h11
import pytest

from pyweb.protocol import (
    CONTINUE_100,
    LAST_CHUNK,
    NEED_DATA,
    Request,
    RequestParser,
    encode_chunk,
    frame_response,
    http_date,
)

pytestmark = pytest.mark.usefixtures("framer")  # with the C framer and without it


def parse_request(method: str = "GET", version: str = "1.1", extra: bytes = b"") -> Request:
    p = RequestParser()
    p.feed(f"{method} /x HTTP/{version}\r\nHost: test\r\n".encode() + extra + b"\r\n")
    req = p.next_event()
    assert isinstance(req, Request)
    return req


def read_back(request: Request | None, status: int, headers: list[tuple[str, str]],
              body: bytes | list[bytes], *, keep_alive: bool = True):
    """Frame and serialise a response the way the server does; parse it with h11."""
    streaming = isinstance(body, list)
    length = None if streaming else len(body)
    head = frame_response(request, status, headers, length, keep_alive=keep_alive)
    wire = head.data
    if head.send_body:
        if head.chunked:
            wire += b"".join(encode_chunk(c) for c in body) + LAST_CHUNK
        else:
            wire += b"".join(body) if streaming else body
    client = h11.Connection(h11.CLIENT)
    method = request.method if request is not None else "GET"
    client.send(h11.Request(method=method, target="/x", headers=[("Host", "test")]))
    client.send(h11.EndOfMessage())
    client.receive_data(wire)
    if not head.keep_alive:
        client.receive_data(b"")  # the server closes after this response
    events = []
    while True:
        ev = client.next_event()
        if ev is h11.NEED_DATA or ev is h11.PAUSED:
            break
        events.append(ev)
        if isinstance(ev, h11.EndOfMessage):
            break
    response = events[0]
    assert isinstance(response, h11.Response)
    assert isinstance(events[-1], h11.EndOfMessage), events
    data = b"".join(bytes(e.data) for e in events if isinstance(e, h11.Data))
    hdrs = {n.decode(): v.decode() for n, v in response.headers}
    return head, response, hdrs, data, client


def test_bytes_body_gets_content_length_and_keeps_alive() -> None:
    head, resp, hdrs, data, client = read_back(parse_request(), 200, [("Content-Type", "text/plain")],
                                               b"hello")
    assert resp.status_code == 200 and data == b"hello"
    assert hdrs["content-length"] == "5" and "transfer-encoding" not in hdrs
    assert head.keep_alive and not head.chunked and head.send_body
    assert client.their_state is h11.DONE  # the connection can carry another request
    assert "date" in hdrs and hdrs["server"] == "pyweb"


def test_head_response_has_no_body_but_the_length() -> None:
    head, resp, hdrs, data, _ = read_back(parse_request("HEAD"), 200, [], b"hello")
    assert not head.send_body and data == b""
    assert hdrs["content-length"] == "5"
    assert head.data.endswith(b"\r\n\r\n")


@pytest.mark.parametrize("status", [204, 304])
def test_204_and_304_have_no_body_and_no_length_rfc9110_s8_6(status: int) -> None:
    head, resp, hdrs, data, client = read_back(parse_request(), status, [], b"")
    assert resp.status_code == status and data == b""
    assert not head.send_body
    assert "content-length" not in hdrs and "transfer-encoding" not in hdrs
    assert client.their_state is h11.DONE


def test_streamed_body_is_chunked_for_http_1_1() -> None:
    chunks = [b"first ", b"", b"second", b"x" * 1000]
    head, resp, hdrs, data, client = read_back(parse_request(), 200, [], chunks)
    assert head.chunked and hdrs["transfer-encoding"] == "chunked"
    assert data == b"".join(chunks)
    assert head.keep_alive and client.their_state is h11.DONE


def test_streamed_body_is_close_delimited_for_http_1_0_rfc9112_s6_3() -> None:
    req = parse_request(version="1.0", extra=b"Connection: keep-alive\r\n")
    head, resp, hdrs, data, client = read_back(req, 200, [], [b"a", b"b"])
    assert not head.chunked and not head.keep_alive
    assert hdrs["connection"] == "close" and "transfer-encoding" not in hdrs
    assert data == b"ab"


def test_http_1_0_keep_alive_is_answered_with_keep_alive() -> None:
    req = parse_request(version="1.0", extra=b"Connection: keep-alive\r\n")
    head = frame_response(req, 200, [], 3)
    assert head.keep_alive and b"\r\nConnection: keep-alive\r\n" in head.data
    req = parse_request(version="1.0")
    head = frame_response(req, 200, [], 3)
    assert not head.keep_alive and b"\r\nConnection: close\r\n" in head.data


def test_connection_close_from_the_client_or_the_server() -> None:
    head, _, hdrs, _, client = read_back(parse_request(extra=b"Connection: close\r\n"), 200, [], b"")
    assert not head.keep_alive and hdrs["connection"] == "close"
    head, _, hdrs, _, client = read_back(parse_request(), 200, [], b"x", keep_alive=False)
    assert not head.keep_alive and hdrs["connection"] == "close"
    assert client.their_state is h11.MUST_CLOSE


def test_no_request_means_close() -> None:
    head, resp, hdrs, data, _ = read_back(None, 400, [], b"bad request")
    assert resp.status_code == 400 and data == b"bad request"
    assert not head.keep_alive and hdrs["connection"] == "close"


def test_handler_framing_headers_are_replaced() -> None:
    head, _, hdrs, data, _ = read_back(
        parse_request(), 200,
        [("Content-Length", "999"), ("Transfer-Encoding", "gzip"), ("Connection", "upgrade")],
        b"abc",
    )
    assert hdrs["content-length"] == "3" and data == b"abc"
    assert "transfer-encoding" not in hdrs and "connection" not in hdrs


@pytest.mark.parametrize("name,value", [
    ("X-Bad", "a\r\nSet-Cookie: evil=1"), ("X-Bad", "a\nb"), ("X-Bad", "a\rb"),
    ("X-Bad", "a\x00b"), ("X Bad", "v"), ("X-Bad:", "v"), ("", "v"), ("X\r\nY", "v"),
])
def test_header_injection_is_refused(name: str, value: str) -> None:
    with pytest.raises(ValueError):
        frame_response(parse_request(), 200, [(name, value)], 0)


def test_date_and_server_given_by_the_handler_are_kept_once() -> None:
    head = frame_response(parse_request(), 200, [("Date", "x"), ("Server", "mine")], 0)
    assert head.data.count(b"Date:") == 1 and head.data.count(b"Server:") == 1
    assert b"Server: mine" in head.data


def test_status_lines() -> None:
    assert frame_response(parse_request(), 404, [], 0).data.startswith(b"HTTP/1.1 404 Not Found\r\n")
    _, resp, _, _, _ = read_back(parse_request(), 599, [], b"")
    assert resp.status_code == 599
    with pytest.raises(ValueError):
        frame_response(parse_request(), 42, [], 0)


def test_encode_chunk_and_constants() -> None:
    assert encode_chunk(b"") == b""
    assert encode_chunk(b"x" * 26) == b"1a\r\n" + b"x" * 26 + b"\r\n"
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="POST", target="/", headers=[("Host", "t"),
                                                             ("Expect", "100-continue"),
                                                             ("Content-Length", "1")]))
    client.receive_data(CONTINUE_100)
    assert isinstance(client.next_event(), h11.InformationalResponse)
    assert client.next_event() is h11.NEED_DATA
    assert NEED_DATA is not h11.NEED_DATA


def test_http_date_is_imf_fixdate() -> None:
    assert http_date(0) == "Thu, 01 Jan 1970 00:00:00 GMT"
    assert http_date().endswith(" GMT") and len(http_date()) == 29
