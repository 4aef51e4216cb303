"""The benchmark's URLs as a Falcon user writes them: Falcon's ASGI app on uvicorn.

A resource class per URL with ``on_get``, and ``add_static_route`` on the site folder.
Run: ``uvicorn fw_falcon:app`` (site directory from BENCH_SITE_DIR).
"""

from __future__ import annotations

import os

import falcon
import falcon.asgi
import page

page.check()


class Hello:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        resp.content_type = falcon.MEDIA_TEXT
        resp.data = page.HELLO


class Dynamic:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        resp.content_type = falcon.MEDIA_HTML
        resp.data = page.next_page()


class HelloPage:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        resp.content_type = falcon.MEDIA_HTML
        resp.data = page.HELLO_PAGE


class Guess:
    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        resp.content_type = falcon.MEDIA_HTML
        resp.data = page.guess_page(req.query_string)


app = falcon.asgi.App()
app.add_route("/hello", Hello())
app.add_route("/dynamic", Dynamic())
app.add_route("/page/hello", HelloPage())
app.add_route("/svc/hello", HelloPage(), suffix=None)
app.add_route("/page/guess", Guess())
app.add_route("/svc/guess", Guess())
app.add_static_route("/files", os.path.abspath(os.environ.get("BENCH_SITE_DIR", ".")))
