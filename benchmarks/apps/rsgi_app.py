"""The benchmark's URLs as a raw RSGI app: granian's own interface (``granian --interface rsgi``).

RSGI is granian's alternative to ASGI: the app gets a scope object and a protocol object,
and answers with one call (``response_bytes``, ``response_str``, ``response_file``) instead
of two ASGI messages. This app does the work ``asgi_app.py`` does for the ASGI servers, in
RSGI's idiom, the static file included: it is read on every request, as there. (RSGI's
``response_file`` sends a file from granian's Rust side, but chunked, without a
Content-Length, so its bytes on the wire would differ from every other server's.) Not a
framework: the floor of what granian does on RSGI.

Run: ``granian --interface rsgi rsgi_app:app`` (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import os
from typing import Any

import page

page.check()
STATIC_PATH = os.path.join(os.environ.get("BENCH_SITE_DIR", "."), page.STATIC_NAME)
RATE_URL = os.environ.get("BENCH_RATE_URL", "")  # the harness's rate server (peers.py)

_TEXT = [("content-type", "text/plain")]
_HTML = [("content-type", "text/html; charset=utf-8")]


async def app(scope: Any, proto: Any) -> None:
    path = scope.path
    if path == "/hello":
        proto.response_bytes(200, _TEXT, page.HELLO)
    elif path == "/dynamic":
        proto.response_bytes(200, _HTML, page.next_page())
    elif path == "/page/hello" or path == "/svc/hello":
        proto.response_bytes(200, _HTML, page.HELLO_PAGE)
    elif path == "/page/guess" or path == "/svc/guess":
        proto.response_bytes(200, _HTML, page.guess_page(scope.query_string))
    elif path == "/page/exchange":
        proto.response_bytes(200, _HTML, page.exchange_page(scope.query_string, RATE_URL))
    elif path == "/" + page.STATIC_NAME:
        with open(STATIC_PATH, "rb") as f:  # as asgi_app.py: 984 bytes from the page cache
            proto.response_bytes(200, _HTML, f.read())
    else:
        proto.response_bytes(404, _TEXT, b"Not Found")
