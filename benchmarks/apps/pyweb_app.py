"""pyweb's entry in the peer benchmark: a site folder as a user writes it, run by ``pyweb serve``.

pyweb is measured the way its users use it, not through a handler below the page layer:
this file writes a site folder and hands it to ``pyweb serve`` (the same ``main`` the
command line runs), so every request goes through the server, the site's routing,
``conn``, the script run, the region check and the reply, as for any site. The folder has

* ``hello.py``: ``conn.return_(b"Hello, world!", content_type="text/plain")`` (``/hello``);
* ``dynamic.py``: the 984-byte page built per request by ``page.next_page()``, the same
  function every peer calls (``/dynamic``);
* ``static.html``: the dynamic page's output, served from the site folder by pyweb's own
  static-file path (sendfile, ETag, Last-Modified);
* ``page/hello.py``, ``page/guess.py``, ``page/exchange.py``: the example site's scripts,
  and ``hop_services.py``: its services (``/svc/hello``, ``/svc/guess``).

Access logging is off, as for every server in the benchmark (Hop §4.3). The handler-level
entry that used to be here (below the page layer) is ``pyweb_handler.py``.

Usage: python pyweb_app.py --port 8000 [--scheduler one-to-one|pool|nothread]
                          [--loop trio|asyncio]
(the static file is copied from BENCH_SITE_DIR, like the other apps read it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import page

page.check()
# The example pages post forms, so the site signs (CSRF): a key of the benchmark's own.
os.environ.setdefault("PYWEB_SECRET_KEY", "the-benchmark-key-not-a-secret-0123456789")
EXAMPLES = Path(__file__).resolve().parents[2] / "pages"

HELLO_SCRIPT = """\
# The benchmark's hello: 13 bytes of text/plain, written as a user writes a page.
conn.return_(b"Hello, world!", content_type="text/plain")
"""
DYNAMIC_SCRIPT = """\
# The benchmark's 984-byte page, built per request by the function every peer calls.
import page

conn.return_(page.next_page(), content_type="text/html; charset=utf-8")
"""


def make_site(static_from: str) -> str:
    """The site folder: the two benchmark scripts, the static file, the example pages."""
    # Inside the harness's temporary folder when there is one: it goes away with it, even
    # when the server is killed.
    root = Path(tempfile.mkdtemp(prefix="pyweb-site-", dir=static_from if static_from else None))
    (root / "hello.py").write_text(HELLO_SCRIPT)
    (root / "dynamic.py").write_text(DYNAMIC_SCRIPT)
    static = Path(static_from) / page.STATIC_NAME
    if static_from and static.exists():
        shutil.copy(static, root / page.STATIC_NAME)
    else:  # run by hand without the harness: the same bytes
        (root / page.STATIC_NAME).write_bytes(page.render(0))
    (root / "page").mkdir()
    for name in ("hello.py", "guess.py", "exchange.py", "rate.py"):
        shutil.copy(EXAMPLES / name, root / "page" / name)
    shutil.copy(EXAMPLES / "hop_services.py", root / "hop_services.py")
    shutil.copy(EXAMPLES / "_layout.py", root / "_layout.py")  # exchange.py and rate.py use it
    return str(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--scheduler", default="one-to-one")
    parser.add_argument("--loop", default="trio", choices=("trio", "asyncio"))
    args = parser.parse_args()
    site = make_site(os.environ.get("BENCH_SITE_DIR", ""))
    # /page/exchange reads its rate from the harness's rate server (peers.py: BENCH_RATE_URL),
    # else from this server's own /page/rate (pages/exchange.py).
    os.environ["PYWEB_RATE_URL"] = os.environ.get(
        "BENCH_RATE_URL", f"http://127.0.0.1:{args.port}/page/rate"
    )
    os.environ.setdefault("PYWEB_RATE_FILE", os.path.join(site, "rate.txt"))
    from pyweb.cli import main as pyweb_main

    try:
        return pyweb_main(["serve", site, "--host", args.host, "--port", str(args.port),
                           "--scheduler", args.scheduler, "--loop", args.loop,
                           "--access-log", "none"])  # fmt: skip
    finally:
        shutil.rmtree(site, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
