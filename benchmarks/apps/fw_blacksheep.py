"""The benchmark's URLs as a BlackSheep user writes them (uvicorn, as its docs deploy it).

Request handlers returning BlackSheep responses, and ``app.serve_files`` on the site folder.
Run: ``uvicorn fw_blacksheep:app`` (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import os

import page
from blacksheep import Application, Content, Request, Response, get

page.check()
app = Application()
app.serve_files(os.environ.get("BENCH_SITE_DIR", "."))


def _html(body: bytes) -> Response:
    return Response(200, content=Content(b"text/html; charset=utf-8", body))


@get("/hello")
async def hello() -> Response:
    return Response(200, content=Content(b"text/plain", page.HELLO))


@get("/dynamic")
async def dynamic() -> Response:
    return _html(page.next_page())


@get("/page/hello")
async def page_hello() -> Response:
    return _html(page.HELLO_PAGE)


@get("/svc/hello")
async def svc_hello() -> Response:
    return _html(page.HELLO_PAGE)


@get("/page/guess")
async def page_guess(request: Request) -> Response:
    return _html(page.guess_page(request.url.query.decode("latin-1")))


@get("/svc/guess")
async def svc_guess(request: Request) -> Response:
    return _html(page.guess_page(request.url.query.decode("latin-1")))
