"""Micro-benchmark: pyweb's request parser beside h11 and httptools (RFC 9112 parsing).

Three request kinds, one benchmark group each: a typical browser GET with 10 header
fields, a small POST with a Content-Length body, and a pipelined batch of 10 small GETs
in one buffer. Every contender does the same work: turn the bytes into method, target,
headers and body. Run with

    .venv/bin/python -m pytest benchmarks/bench_parse.py --benchmark-only -p no:timeout
"""

from __future__ import annotations

import h11
import httptools
import pytest

from pyweb.protocol import NEED_DATA, Data, EndOfMessage, Request, RequestParser

BROWSER_GET = (
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
SMALL_POST = (
    b"POST /guestbook/add HTTP/1.1\r\n"
    b"Host: www.example.org\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\n"
    b"Content-Length: 37\r\n"
    b"\r\n"
    b"name=Ada+Lovelace&comment=hello+world"
)
PIPELINED = b"".join(
    b"GET /item/%d HTTP/1.1\r\nHost: www.example.org\r\nAccept: */*\r\n\r\n" % i
    for i in range(10)
)
KINDS = {"browser_get": (BROWSER_GET, 1), "small_post": (SMALL_POST, 1),
         "pipelined_10": (PIPELINED, 10)}


def parse_pyweb(data: bytes) -> list:
    p = RequestParser()
    p.feed(data)
    out = []
    body = []
    while True:
        ev = p.next_event()
        if ev is NEED_DATA:
            return out
        if type(ev) is Request:
            req = ev
        elif type(ev) is Data:
            body.append(ev.data)
        elif type(ev) is EndOfMessage:
            out.append((req.method, req.target, req.headers, b"".join(body)))
            body = []


def parse_h11(data: bytes) -> list:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data)
    out = []
    body = []
    while True:
        ev = conn.next_event()
        if ev is h11.NEED_DATA or ev is h11.PAUSED:
            return out
        if type(ev) is h11.Request:
            req = ev
        elif type(ev) is h11.Data:
            body.append(ev.data)
        elif type(ev) is h11.EndOfMessage:
            out.append((req.method, req.target, list(req.headers), b"".join(body)))
            body = []
            # h11 needs the response sent before it reads the next pipelined request.
            conn.send(h11.Response(status_code=204, headers=[]))
            conn.send(h11.EndOfMessage())
            conn.start_next_cycle()


class _HttptoolsCollector:
    """httptools calls back; collect the same things the others return."""

    __slots__ = ("out", "url", "headers", "body", "parser")

    def __init__(self) -> None:
        self.out: list = []
        self.headers: list = []
        self.body: list = []
        self.url = b""

    def on_url(self, url: bytes) -> None:
        self.url = url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.out.append((self.parser.get_method(), self.url, self.headers, b"".join(self.body)))
        self.headers = []
        self.body = []


def parse_httptools(data: bytes) -> list:
    c = _HttptoolsCollector()
    c.parser = httptools.HttpRequestParser(c)
    c.parser.feed_data(data)
    return c.out


PARSERS = {"pyweb": parse_pyweb, "h11": parse_h11, "httptools": parse_httptools}


@pytest.mark.parametrize("parser", list(PARSERS))
@pytest.mark.parametrize("kind", list(KINDS))
def test_parse(benchmark, kind: str, parser: str) -> None:
    data, count = KINDS[kind]
    benchmark.group = kind
    fn = PARSERS[parser]
    result = benchmark(fn, data)
    assert len(result) == count
    assert len(result[0][2]) >= 2
