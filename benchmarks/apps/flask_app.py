"""The Flask app that gunicorn serves in the peer benchmark (one sync worker).

The same four URLs as every other app. Flask is used the way its documentation shows:
a route per URL, ``Response`` objects, and ``send_from_directory`` for the static file
(which gunicorn hands to ``wsgi.file_wrapper``, i.e. sendfile). The site directory comes
from the BENCH_SITE_DIR environment variable.
"""

from __future__ import annotations

import os

import page
from flask import Flask, Response, request, send_from_directory

page.check()
SITE_DIR = os.environ.get("BENCH_SITE_DIR", ".")

app = Flask(__name__, static_folder=None)
_counter = 0


@app.get("/hello")
def hello() -> Response:
    return Response(page.HELLO, mimetype="text/plain")


@app.get("/dynamic")
def dynamic() -> Response:
    global _counter
    _counter += 1
    return Response(page.render(_counter), content_type="text/html; charset=utf-8")


@app.get("/page/hello")
@app.get("/svc/hello")
def hello_page() -> Response:
    return Response(page.HELLO_PAGE, content_type="text/html; charset=utf-8")


@app.get("/page/guess")
@app.get("/svc/guess")
def guess() -> Response:
    query = request.query_string.decode("latin-1")
    return Response(page.guess_page(query), content_type="text/html; charset=utf-8")


@app.get("/page/exchange")
def exchange() -> Response:
    query = request.query_string.decode("latin-1")
    return Response(
        page.exchange_page(query, os.environ.get("BENCH_RATE_URL", "")),
        content_type="text/html; charset=utf-8",
    )


@app.get("/" + page.STATIC_NAME)
def static_file() -> Response:
    return send_from_directory(SITE_DIR, page.STATIC_NAME)
