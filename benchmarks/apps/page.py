"""The benchmark's pages, shared by every server's app so that all do the same work (Hop §4.3).

Hop compares a 984-byte static file with a 984-byte page computed per request, and the
static file is exactly the dynamic page's output: both tests write the same characters to
the socket, only the way they are obtained differs (from disk, or from a computation).
:func:`render` is that computation: a small HTML table built with loops and a join, whose
cells carry a per-request counter so that no server can answer with a cached constant.
The counter is printed with a fixed width, so every page is exactly :data:`PAGE_SIZE` bytes.
"""

from __future__ import annotations

import os
import time
from email.utils import formatdate

HELLO = b"Hello, world!"
PAGE_SIZE = 984
STATIC_NAME = "static.html"

_ROWS = 8
_COLS = 4
_HEAD = "<!DOCTYPE html>\n<html><head><title>pyweb benchmark</title></head>\n<body>\n<table>\n"
_TAIL = "</table>\n</body></html>\n"


def _table(counter: int) -> str:
    stamp = f"{counter % 100_000_000:08d}"  # fixed width: the page length never changes
    rows = []
    for r in range(_ROWS):
        cells = "".join([f"<td>{r}.{c}:{stamp}</td>" for c in range(_COLS)])
        rows.append(f"<tr>{cells}</tr>\n")
    return "".join(rows)


# A comment fills the page up to PAGE_SIZE bytes; computed once so render() stays a loop.
_FILL = PAGE_SIZE - len(_HEAD) - len(_table(0)) - len(_TAIL) - len("<!--  -->\n")
assert _FILL >= 0, "the table grew past PAGE_SIZE"
_PAD = "<!-- " + "." * _FILL + " -->\n"


def render(counter: int) -> bytes:
    """The dynamic page for the ``counter``-th request: exactly PAGE_SIZE bytes of HTML."""
    return (_HEAD + _table(counter) + _PAD + _TAIL).encode("ascii")


def check() -> None:
    """Called by every app at startup: the page really is PAGE_SIZE bytes, whatever the count."""
    for n in (0, 7, 123_456_789):
        assert len(render(n)) == PAGE_SIZE, len(render(n))


# --- pages and services: SMLserver's hello and guessing game ---------------------
# pyweb serves these from the example site's own scripts and services (pages/hello.py,
# pages/guess.py, pages/hop_services.py); every peer answers the same URLs with the same
# work written its own idiomatic way: parse the query, check the numbers as FormVar.getNat
# would, escape what goes into HTML, build the page.

HELLO_PAGE = (
    b"<!DOCTYPE html><html><head><title>Hello</title></head>"
    b"<body><h1>Hello, world!</h1></body></html>"
)
GUESS_QUERY = "n=50&guess=25"  # a "too small" answer: the page with the form again

_NAT_MAX = 2**31 - 1


def _nat(values: list[str] | None) -> int | None:
    """FormVar.wrapOpt FormVar.getNat: the last value, ASCII digits, at most 2**31-1."""
    if not values:
        return None
    text = values[-1]
    if not text or not text.isascii() or not text.isdigit() or len(text) > 10:
        return None
    value = int(text)
    return value if value <= _NAT_MAX else None


def guess_page(query: str) -> bytes:
    """The guessing game's answer to ``query`` (the peers' version of pages/guess.py)."""
    import html
    from urllib.parse import parse_qs

    form = parse_qs(query, keep_blank_values=True)
    n, guess = _nat(form.get("n")), _nat(form.get("guess"))
    if n is None:
        n, title, pic = 42, "Guess a number between 0 and 100", "/img/guess.svg"
    elif guess is None:
        title, pic = "You must type a number - try again", "/img/guess.svg"
    elif guess > n:
        title, pic = "Your guess is too big - try again", "/img/large.svg"
    elif guess < n:
        title, pic = "Your guess is too small - try again", "/img/small.svg"
    else:
        title, pic = "Congratulations!", "/img/yes.svg"
    t = html.escape(title)
    body = (
        f'<form action="/guess" method="post">\n'
        f'  <input type="hidden" name="n" value="{html.escape(str(n))}">\n'
        f'  <input type="text" name="guess" autofocus>\n'
        f'  <input type="submit" value="Guess">\n</form>'
    )
    return (
        f"<!DOCTYPE html>\n<html><head><title>{t}</title>"
        f'<link rel="stylesheet" href="/style.css"></head>\n<body><center>\n<h2>{t}</h2>\n'
        f'<img src="{html.escape(pic)}" alt="" width="120" height="120">\n{body}\n'
        f'<p><i>Served by <a href="/">pyweb</a></i></p>\n</center></body></html>'
    ).encode()


# --- the currency exchange (SMLserver §3), for the peers ------------------------------------

RATE_PAGE = b"<table><tr><td>USDDKK</td><td>6.4321</td></tr></table>"
"""The foreign site's page: what peers.py's rate server answers (as pages/rate.py does)."""
RATE_TTL = 300.0  # TimeOut(300), as pages/exchange.py
_rates: dict[str, tuple[float | None, float]] = {}


def exchange_rate(url: str) -> float | None:
    """The dollar rate from ``url``, cached 300 s like pyweb's TimeOut(300) cache; None when
    the site is down (also cached, as in the paper). A miss blocks on urllib: a peer's
    simplest way, and with the cache warm it never happens while the benchmark measures."""
    import re
    import time
    import urllib.request

    now = time.monotonic()
    hit = _rates.get(url)
    if hit is not None and hit[1] > now:
        return hit[0]
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            text = reply.read(100_000).decode("utf-8", "replace")
        m = re.search(r"USDDKK\D+([0-9]+)\.([0-9]+)", text)
        rate = float(f"{m[1]}.{m[2]}") if m else None
    except OSError:
        rate = None
    _rates[url] = (rate, now + RATE_TTL)
    return rate


def exchange_page(query: str, rate_url: str) -> bytes:
    """The currency exchange's answer to ``query`` (the peers' version of pages/exchange.py)."""
    import html
    from urllib.parse import parse_qs

    form = ('<form method="post" action="/exchange">\n  <b>Dollar amount</b><br>'
            '<input type="text" name="a">\n  <input type="submit" value="Value in Danish'
            ' Kroner">\n</form>')  # fmt: skip
    values = parse_qs(query).get("a")
    try:
        a = float(values[-1]) if values else None
    except ValueError:
        a = None
    if a is None:
        body = form
    else:
        rate = exchange_rate(rate_url)
        if rate is None:
            body = "<p>The service is currently not available</p>"
        else:
            body = f"<p>{html.escape(repr(a))} USD gives {a * rate:.2f} DKK.</p>{form}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Currency '
        f"Exchange Service</title></head>\n<body><h1>Currency Exchange Service</h1>{body}"
        "</body></html>"
    ).encode()


# --- the raw servers' answers (raw_trio.py and raw_uvloop.py share them) -----------------

_TEXT, _HTML = b"text/plain", b"text/html; charset=utf-8"
_date, _date_second, _raw_counter = b"", -1, 0
_STATIC_PATH = os.path.join(os.environ.get("BENCH_SITE_DIR", "."), STATIC_NAME)
_RATE_URL = os.environ.get("BENCH_RATE_URL", "")  # the harness's rate server (peers.py)


def next_page() -> bytes:
    """The dynamic page for the next request of this process (the counter every app keeps)."""
    global _raw_counter
    _raw_counter += 1
    return render(_raw_counter)


def raw_response(target: bytes, close: bool) -> bytes:
    """The raw servers' whole response to ``GET target`` (head and body), one bytes object
    so that it goes out in one send. The site directory comes from BENCH_SITE_DIR and the
    exchange page's rate server from BENCH_RATE_URL, as for every app."""
    global _date, _date_second
    now = int(time.time())
    if now != _date_second:  # RFC 9110 §6.6.1: an origin server with a clock sends Date
        _date, _date_second = formatdate(now, usegmt=True).encode(), now
    status, ctype = b"200 OK", _HTML
    path, _, query = target.partition(b"?")
    if path == b"/hello":
        body, ctype = HELLO, _TEXT
    elif path == b"/dynamic":
        body = next_page()
    elif path == b"/page/hello" or path == b"/svc/hello":
        body = HELLO_PAGE
    elif path == b"/page/guess" or path == b"/svc/guess":
        body = guess_page(query.decode("latin-1"))
    elif path == b"/page/exchange":
        body = exchange_page(query.decode("latin-1"), _RATE_URL)
    elif path == b"/" + STATIC_NAME.encode():
        with open(_STATIC_PATH, "rb") as f:  # 984 bytes from the page cache: read, no sendfile
            body = f.read()
    else:
        status, body, ctype = b"404 Not Found", b"Not Found", _TEXT
    return b"".join(
        [
            b"HTTP/1.1 ",
            status,
            b"\r\nDate: ",
            _date,
            b"\r\nContent-Type: ",
            ctype,
            b"\r\nContent-Length: ",
            str(len(body)).encode(),
            b"\r\nConnection: close\r\n\r\n" if close else b"\r\n\r\n",
            body,
        ]
    )


def parse_head(buf: bytes, end: int) -> tuple[bytes, bool, int]:
    """The raw servers' reading of the head ``buf[:end]``: (target, close, body length).
    No validation at all: enough for wrk and the harness's checks, nothing else."""
    head = buf[:end].lower()
    line = head.split(b"\r\n", 1)[0]
    length = 0
    if (i := head.find(b"\r\ncontent-length:")) >= 0:
        j = head.find(b"\r\n", i + 2)
        length = int(head[i + 17 : j if j >= 0 else len(head)])
    close = b"\r\nconnection: close" in head or line.endswith(b"http/1.0")
    return buf[:end].split(b" ", 2)[1], close, length
