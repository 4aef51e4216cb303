"""The probe's parser warnings, over a real socket (RFC 9112 §7.1.1, RFC 9110 §5.5): BWS
before ';' in a chunk extension is accepted, whitespace after a chunk size without an
extension is refused, and control characters other than HTAB in a field value are refused."""

from __future__ import annotations

import socket

import pytest

import pyweb.testing
from pyweb.protocol.response import Response

pytestmark = pytest.mark.loops("trio", "asyncio")


async def echo(ctx):
    body = await ctx.body()
    return Response(200, [("Content-Type", "text/plain")], body)


@pytest.fixture(scope="module")
def port(loop):
    with pyweb.testing.serve(echo, loop=loop) as client:
        yield client.server.port


def status_of(port: int, raw: bytes) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data or not data.endswith((b"hello", b">\n")):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


CHUNKED = b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"


def test_bws_before_a_chunk_extension_is_accepted_rfc9112_s7_1_1(port):
    status, data = status_of(port, CHUNKED + b"5 ;ext=1\r\nhello\r\n0\r\n\r\n")
    assert status == 200 and data.endswith(b"hello")


def test_trailing_whitespace_after_a_chunk_size_is_refused_rfc9112_s7_1(port):
    assert status_of(port, CHUNKED + b"5 \r\nhello\r\n0\r\n\r\n")[0] == 400


@pytest.mark.parametrize("ctl", [b"\x01", b"\x1b", b"\x7f"])
def test_control_characters_in_a_field_value_are_refused_rfc9110_s5_5(port, ctl):
    raw = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: a" + ctl + b"b\r\n\r\n"
    assert status_of(port, raw)[0] == 400
    tab = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nCookie: a\tb\r\n\r\n"
    assert status_of(port, tab)[0] == 200
