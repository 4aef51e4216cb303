"""The benchmark's URLs as a FastAPI user writes them (uvicorn, as FastAPI's docs deploy it).

A path operation per URL with an explicit response class, and ``StaticFiles`` mounted on
the site folder for the static file, as FastAPI's "Static Files" tutorial shows.
Run: ``uvicorn fw_fastapi:app`` (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import os

import page
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles

page.check()
app = FastAPI()


@app.get("/hello", response_class=PlainTextResponse)
async def hello() -> PlainTextResponse:
    return PlainTextResponse(page.HELLO)


@app.get("/dynamic", response_class=HTMLResponse)
async def dynamic() -> HTMLResponse:
    return HTMLResponse(page.next_page())


@app.get("/page/hello", response_class=HTMLResponse)
@app.get("/svc/hello", response_class=HTMLResponse)
async def hello_page() -> HTMLResponse:
    return HTMLResponse(page.HELLO_PAGE)


@app.get("/page/guess", response_class=HTMLResponse)
@app.get("/svc/guess", response_class=HTMLResponse)
async def guess(request: Request) -> HTMLResponse:
    return HTMLResponse(page.guess_page(request.url.query))


app.mount("/", StaticFiles(directory=os.environ.get("BENCH_SITE_DIR", ".")), name="static")
