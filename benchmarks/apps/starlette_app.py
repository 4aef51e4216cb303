"""The benchmark's URLs written as a Starlette user would write them (uvicorn + Starlette).

Where ``asgi_app.py`` is the raw ASGI app (no framework, the floor of what an ASGI server
does), this is the framework row: a route per URL, request objects, response classes, and
Starlette's own ``StaticFiles`` mounted on the site folder for the static file (it sends
files from a worker thread, as Starlette does for every file). It is the asyncio peer that
does what pyweb's pages do: route, give the page a request, build a reply. The database
pages' Starlette app is ``db_starlette.py``.

Run: ``uvicorn starlette_app:app`` (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import os

import page
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

page.check()
SITE_DIR = os.environ.get("BENCH_SITE_DIR", ".")
RATE_URL = os.environ.get("BENCH_RATE_URL", "")  # the harness's rate server (peers.py)


async def hello(request: Request) -> Response:
    return PlainTextResponse(page.HELLO)


async def dynamic(request: Request) -> Response:
    return HTMLResponse(page.next_page())


async def hello_page(request: Request) -> Response:
    return HTMLResponse(page.HELLO_PAGE)


async def guess(request: Request) -> Response:
    return HTMLResponse(page.guess_page(request.url.query))


async def exchange(request: Request) -> Response:
    return HTMLResponse(page.exchange_page(request.url.query, RATE_URL))


app = Starlette(
    routes=[
        Route("/hello", hello),
        Route("/dynamic", dynamic),
        Route("/page/hello", hello_page),
        Route("/svc/hello", hello_page),
        Route("/page/guess", guess),
        Route("/svc/guess", guess),
        Route("/page/exchange", exchange),
        Mount("/", StaticFiles(directory=SITE_DIR)),
    ]
)
