"""The benchmark's URLs as a Litestar user writes them (uvicorn, as Litestar's docs deploy it).

Route handlers with a declared media type, and Litestar's static files router on the site
folder. Run: ``uvicorn fw_litestar:app`` (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import os

import page
from litestar import Litestar, MediaType, Request, get
from litestar.static_files import create_static_files_router

page.check()


@get("/hello", media_type=MediaType.TEXT)
async def hello() -> bytes:
    return page.HELLO


@get("/dynamic", media_type=MediaType.HTML)
async def dynamic() -> bytes:
    return page.next_page()


@get(["/page/hello", "/svc/hello"], media_type=MediaType.HTML)
async def hello_page() -> bytes:
    return page.HELLO_PAGE


@get(["/page/guess", "/svc/guess"], media_type=MediaType.HTML)
async def guess(request: Request) -> bytes:
    return page.guess_page(request.url.query)


app = Litestar(
    route_handlers=[
        hello,
        dynamic,
        hello_page,
        guess,
        create_static_files_router(
            path="/files", directories=[os.environ.get("BENCH_SITE_DIR", ".")]
        ),
    ]
)
