"""The benchmark's URLs as an Emmett user writes them, served by ``emmett serve`` (granian
RSGI), one worker. Routes with an output type, and Emmett's static folder for the file.
Run: ``emmett --app fw_emmett serve`` (BENCH_SITE_DIR: the site; its file is copied into
static/, since Emmett serves only what lies inside that folder, links resolved).
"""

from __future__ import annotations

import os
import shutil

import page
from emmett import App, response

page.check()
app = App(__name__)
# Emmett serves the app's static/ folder at /static/: the site's file is copied there.
_static = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
os.makedirs(_static, exist_ok=True)
shutil.copyfile(
    os.path.join(os.environ.get("BENCH_SITE_DIR", "."), page.STATIC_NAME),
    os.path.join(_static, page.STATIC_NAME),
)


@app.route("/hello", output="bytes")
async def hello() -> bytes:
    response.content_type = "text/plain"
    return page.HELLO


@app.route("/dynamic", output="bytes")
async def dynamic() -> bytes:
    response.content_type = "text/html; charset=utf-8"
    return page.next_page()


@app.route("/page/hello", output="bytes")
async def page_hello() -> bytes:
    response.content_type = "text/html; charset=utf-8"
    return page.HELLO_PAGE


@app.route("/svc/hello", output="bytes")
async def svc_hello() -> bytes:
    response.content_type = "text/html; charset=utf-8"
    return page.HELLO_PAGE
