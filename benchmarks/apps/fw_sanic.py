"""The benchmark's URLs as a Sanic user writes them, on Sanic's own server, one worker.

Routes with ``response.raw``/``response.html``, and ``app.static`` for the static file.
Run: ``sanic fw_sanic:app --single-process --no-access-logs`` (BENCH_SITE_DIR: the site).
"""

from __future__ import annotations

import os

import page
from sanic import Request, Sanic, response

page.check()
app = Sanic("bench")
app.config.ACCESS_LOG = False


@app.get("/hello")
async def hello(request: Request) -> response.HTTPResponse:
    return response.raw(page.HELLO, content_type="text/plain")


@app.get("/dynamic")
async def dynamic(request: Request) -> response.HTTPResponse:
    return response.raw(page.next_page(), content_type="text/html; charset=utf-8")


@app.get("/page/hello")
@app.get("/svc/hello", name="svc_hello")
async def hello_page(request: Request) -> response.HTTPResponse:
    return response.raw(page.HELLO_PAGE, content_type="text/html; charset=utf-8")


@app.get("/page/guess")
@app.get("/svc/guess", name="svc_guess")
async def guess(request: Request) -> response.HTTPResponse:
    return response.raw(page.guess_page(request.query_string), content_type="text/html; charset=utf-8")


app.static(
    "/" + page.STATIC_NAME, os.path.join(os.environ.get("BENCH_SITE_DIR", "."), page.STATIC_NAME)
)
