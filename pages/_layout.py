"""The example site's library: one page layout shared by every page (SMLserver §2.1).

A module whose name starts with ``_`` is *library* code: scripts import it, it is
initialised once per process (not per request), and it is never served as a page.

Every page of the example site is ``page(title, *body)``: the site's stylesheet and icon,
a header leading home, the title, the body, and a footer with a "view source" link to the
script that made the page (``/source?file=NAME.py``, shown by ``source.py``). Pages built
from strings or quotations use ``page_html(title, body)``, which gives the same frame.
Above the body, the flash messages a page before kept with ``conn.flash(...)`` (the
post/redirect/get's "Thank you"), shown once.
"""

import os
from functools import lru_cache

from pyweb import current_conn
from pyweb.html import (
    BODY,
    FOOTER,
    H1,
    HEAD,
    HEADER,
    LI,
    LINK,
    MAIN,
    META,
    TITLE,
    UL,
    A,
    P,
    document,
)

SITE = "pyweb examples"
STYLE = LINK(rel="stylesheet", href="/style.css")
ICON = LINK(rel="icon", href="/favicon.ico")
VIEWPORT = META(name="viewport", content="width=device-width, initial-scale=1")
CHARSET = META(charset="utf-8")
HOME = HEADER(A(SITE, href="/"))
# The parts that do not change are built once, here, not on every request: a node is
# immutable and keeps its HTML, so every page shares them (Hop's hello-ast, §2.1).


def source_link():
    """``/source?file=NAME.py`` for the script, service module or template answering now."""
    try:
        filename = current_conn().filename
    except RuntimeError:  # not in a request (a notebook building a page)
        return None
    return _source_link(filename) if filename else None


@lru_cache(maxsize=1024)  # one entry per script of the site
def _source_link(filename):
    name = os.path.basename(filename)
    if os.path.basename(os.path.dirname(filename)) == "templates":
        name = "templates/" + name
    return "/source?file=" + name


@lru_cache(maxsize=1024)  # each script's footer is built once and shared
def _footer(link):
    served = ["Served by ", A("pyweb", href="/"), ", after SMLserver and Hop."]
    if link:
        served += [" ", A("View the source of this page", href=link, class_="source")]
    return FOOTER(P(*served))


def flash_list():
    """The flash messages kept for this page (``conn.flash``), as a list; None if none."""
    try:
        kept = current_conn().flashes()
    except RuntimeError:  # not in a request
        return None
    if not kept:
        return None
    return UL(*(LI(f.message, class_=f"flash {f.category}") for f in kept), class_="flashes")


def page(title, *body, source=None):
    """A whole HTML document: the shared frame around ``body`` (nodes, Quots or text).
    ``source``: the "view source" link's file (default: the script answering now)."""
    link = f"/source?file={source}" if source else source_link()
    return document(
        HEAD(CHARSET, VIEWPORT, TITLE(title), STYLE, ICON),
        BODY(HOME, MAIN(H1(title), flash_list(), *body), _footer(link)),
        lang="en",
    )


