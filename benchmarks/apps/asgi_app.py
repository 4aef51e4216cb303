"""The raw ASGI app (no framework) that uvicorn and hypercorn serve in the peer benchmark.

It answers the benchmark's four URLs the way a hand-written ASGI app would, with nothing
between the server and the app: the issue compares pyweb with "uvicorn with uvloop+httptools
on a raw ASGI app". ASGI has no static-file machinery of its own, so /static.html opens and
reads the file on every request (a 984-byte file is in the page cache, and a blocking read
that small costs less than handing it to a thread); the ASGI "pathsend" extension is not
used because uvicorn does not implement it.

The site directory comes from the BENCH_SITE_DIR environment variable (the servers' command
lines take no app arguments).
"""

from __future__ import annotations

import os

import page

page.check()
STATIC_PATH = os.path.join(os.environ.get("BENCH_SITE_DIR", "."), page.STATIC_NAME)
RATE_URL = os.environ.get("BENCH_RATE_URL", "")  # the harness's rate server (peers.py)

_TEXT = [(b"content-type", b"text/plain")]
_HTML = [(b"content-type", b"text/html; charset=utf-8")]
_counter = 0


async def app(scope, receive, send):  # noqa: ANN001, ANN201 - the ASGI signature
    if scope["type"] == "lifespan":
        # Answer the lifespan protocol so that hypercorn and uvicorn start without warnings.
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    global _counter
    path = scope["path"]
    status = 200
    if path == "/hello":
        body, headers = page.HELLO, _TEXT
    elif path == "/dynamic":
        _counter += 1
        body, headers = page.render(_counter), _HTML
    elif path == "/page/hello" or path == "/svc/hello":
        body, headers = page.HELLO_PAGE, _HTML
    elif path == "/page/guess" or path == "/svc/guess":
        body, headers = page.guess_page(scope["query_string"].decode("latin-1")), _HTML
    elif path == "/page/exchange":
        query = scope["query_string"].decode("latin-1")
        body, headers = page.exchange_page(query, RATE_URL), _HTML
    elif path == "/" + page.STATIC_NAME:
        with open(STATIC_PATH, "rb") as f:
            body = f.read()
        headers = _HTML
    else:
        status, body, headers = 404, b"Not Found", _TEXT
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
