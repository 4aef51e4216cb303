"""The benchmark's pages, shared by every server's app so that all do the same work (Hop §4.3).

Hop compares a 984-byte static file with a 984-byte page computed per request, and the
static file is exactly the dynamic page's output: both tests write the same characters to
the socket, only the way they are obtained differs (from disk, or from a computation).
:func:`render` is that computation: a small HTML table built with loops and a join, whose
cells carry a per-request counter so that no server can answer with a cached constant.
The counter is printed with a fixed width, so every page is exactly :data:`PAGE_SIZE` bytes.
"""

from __future__ import annotations

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
