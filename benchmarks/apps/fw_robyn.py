"""The benchmark's URLs as a Robyn user writes them, on Robyn's Rust runtime, one process.

Routes returning Robyn ``Response`` objects, and ``serve_directory`` for the static file.
Run: ``python fw_robyn.py --processes 1 --workers 1 --port N`` (BENCH_SITE_DIR: the site).
"""

from __future__ import annotations

import os

import page
from robyn import Request, Response, Robyn

page.check()
app = Robyn(__file__)
HTML = {"Content-Type": "text/html; charset=utf-8"}


@app.get("/hello")
async def hello(request: Request) -> Response:
    return Response(200, {"Content-Type": "text/plain"}, page.HELLO)


@app.get("/dynamic")
async def dynamic(request: Request) -> Response:
    return Response(200, HTML, page.next_page())


@app.get("/page/hello")
async def page_hello(request: Request) -> Response:
    return Response(200, HTML, page.HELLO_PAGE)


@app.get("/svc/hello")
async def svc_hello(request: Request) -> Response:
    return Response(200, HTML, page.HELLO_PAGE)


app.serve_directory(route="/files", directory_path=os.environ.get("BENCH_SITE_DIR", "."))

if __name__ == "__main__":
    app.start(host=os.environ.get("BENCH_HOST", "127.0.0.1"), port=int(os.environ["BENCH_PORT"]))
