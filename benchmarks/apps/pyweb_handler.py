"""pyweb below the page layer: pyweb.server.Server with a handler for the benchmark URLs.

/page/hello, /page/guess, /page/exchange, /svc/hello and /svc/guess are served by a :class:`pyweb.app.Site`
over a copy of the example site's own files: the scripts ``pages/hello.py`` and
``pages/guess.py`` (under ``page/``) and the service module ``pages/hop_services.py``; so
those scenarios measure pyweb's pages as a student writes them (routing, ``conn``, form
variables, quotations, the script run per request).

/hello and /dynamic are handler code (the dynamic page is computed per request by the same
``page.render`` every app uses); /static.html goes through pyweb's own static-file
machinery, ``StaticFiles`` (sendfile, ETag, Last-Modified), from the site directory the
benchmark made, so the static/dynamic pair is Hop's §4.3 comparison. Access logging is
off, as for every server in the benchmark (Hop §4.3 did the same). The peer benchmark's
``pyweb-handler`` and ``pyweb-asyncio-handler`` rows run it beside ``pyweb_app.py`` (the
same URLs as script pages): the difference between the two is what the page layer costs
on /hello and /dynamic.

``/spin?n=N`` answers /hello's text after an empty loop of N turns, work that touches no
memory (``bench_spin.py``: what a microsecond of Python on the path costs the server under
load). With ``BENCH_TIMINGS=1`` the loop and the site are timed inside the server, and
``/timings`` gives the means.

Usage: python pyweb_handler.py --port 8000 [--scheduler one-to-one|pool|nothread]
                          [--loop trio|asyncio]
(site directory from BENCH_SITE_DIR, like the other apps).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from itertools import repeat
from pathlib import Path
from time import perf_counter_ns

import page
import trio

from pyweb.app.site import Site
from pyweb.app.static import StaticFiles
from pyweb.protocol.response import Response
from pyweb.server import RequestContext, Server, ServerConfig

page.check()
# The example pages post forms, so the site signs (CSRF): a key of the benchmark's own.
os.environ.setdefault("PYWEB_SECRET_KEY", "the-benchmark-key-not-a-secret-0123456789")
SITE_DIR = os.environ.get("BENCH_SITE_DIR", ".")

_TEXT = [("content-type", "text/plain")]
_HTML = [("content-type", "text/html; charset=utf-8")]
_NOT_FOUND = Response(404, _TEXT, b"Not Found")
_static = StaticFiles(SITE_DIR)
_counter = 0


def make_page_site() -> str:
    """A site holding the example pages measured by the page and service scenarios."""
    pages = Path(__file__).resolve().parents[2] / "pages"
    root = Path(tempfile.mkdtemp(prefix="pyweb-bench-site-"))
    (root / "page").mkdir()
    for name in ("hello.py", "guess.py", "exchange.py", "rate.py"):
        shutil.copy(pages / name, root / "page" / name)
    shutil.copy(pages / "hop_services.py", root / "hop_services.py")
    shutil.copy(pages / "_layout.py", root / "_layout.py")  # exchange.py and rate.py use it
    return str(root)


_site = Site(make_page_site())


def make_rate_dir() -> str:
    return tempfile.mkdtemp(prefix="pyweb-bench-rate-")


_TIMED = os.environ.get("BENCH_TIMINGS") == "1"
"""``bench_spin.py`` sets it: the loop and the site are timed inside the server, and
``/timings`` answers the mean ns of each since the last ask (off for ``peers.py``)."""
_spans: dict[str, list[int]] = {}  # "spin" or "site" -> [ns in all, how many]


def _note(name: str, started: int) -> None:
    span = _spans.setdefault(name, [0, 0])
    span[0] += perf_counter_ns() - started
    span[1] += 1


def _timings() -> Response:
    """The mean ns of each timed span since the last ask, as JSON; then start again."""
    means = {name: ns / count for name, (ns, count) in _spans.items()}
    _spans.clear()
    return Response(200, [("content-type", "application/json")], json.dumps(means).encode())


_spins: dict[str, int] = {}  # query string -> turns


def _spin(query: str) -> repeat[None]:
    """The loop of ``/spin?n=N``: N times None (a range past 256 would make an int a turn)."""
    turns = _spins.get(query)
    if turns is None:
        turns = _spins[query] = int(query.removeprefix("n=") or 0)
    return repeat(None, turns)


async def handler(ctx: RequestContext) -> Response:
    global _counter
    path = ctx.request.path
    if path == "/hello":
        return Response(200, _TEXT, page.HELLO)
    if path == "/dynamic":
        _counter += 1
        return Response(200, _HTML, page.render(_counter))
    if path == "/spin":  # bench_spin.py: N turns of an empty loop, then /hello's answer
        started = perf_counter_ns()  # (read timed or not: the same work either way)
        for _ in _spin(ctx.request.query):
            pass
        if _TIMED:
            _note("spin", started)
        return Response(200, _TEXT, page.HELLO)
    if path.startswith("/page/") or path.startswith("/svc/"):
        if not _TIMED:
            return await _site(ctx)
        started = perf_counter_ns()
        response = await _site(ctx)
        _note("site", started)
        return response
    if path == "/timings" and _TIMED:
        return _timings()
    response = _static.respond(ctx.request)
    return _NOT_FOUND if response is None else response


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--scheduler", default="one-to-one")
    parser.add_argument("--pool-size", type=int, default=16)
    parser.add_argument("--loop", default="trio", choices=("trio", "asyncio"))
    args = parser.parse_args()
    # /page/exchange reads its rate from this server's /page/rate (pages/exchange.py)
    # (peers.py runs one rate server for every server under test: BENCH_RATE_URL)
    os.environ["PYWEB_RATE_URL"] = os.environ.get(
        "BENCH_RATE_URL", f"http://127.0.0.1:{args.port}/page/rate"
    )
    os.environ.setdefault("PYWEB_RATE_FILE", os.path.join(make_rate_dir(), "rate.txt"))
    config = ServerConfig(
        host=args.host,
        port=args.port,
        scheduler=args.scheduler,
        pool_size=args.pool_size,
        access_log=None,
        error_log="-",
    )
    if args.loop == "asyncio":  # pyweb serve --loop asyncio: the Protocol server
        from pyweb.server.asyncio import serve_asyncio

        raise SystemExit(serve_asyncio(config, handler, SITE_DIR))
    try:
        trio.run(Server(config, handler).serve)
    except* KeyboardInterrupt:
        pass  # Ctrl-C or the benchmark's SIGINT: stop quietly
