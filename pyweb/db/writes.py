"""A write to the database from a GET: refused in development mode, logged in production.

A GET must change nothing (RFC 9110 §9.2.1: it is a *safe* method). Browsers prefetch
links, crawlers follow them, an ``<img src>`` on another site sends one with the visitor's
cookies, and a GET carries no CSRF token (:mod:`pyweb.app.csrf` checks POSTs only). A page
that writes when it is opened can be made to write by anyone. SMLserver's ``FormVar``
reads a GET's form as well as a POST's, so nothing in the page itself says which method
came: this check does, at the one place every write passes, ``db.dml``.

* development mode (``--dev``): ``db.dml`` in a GET or HEAD raises :class:`WriteInGet`,
  whose message says why and what to write instead; the page's traceback shows it.
* production: the write runs (refusing it would break a site that worked yesterday), and
  the error log says so once per page and process, with the same sentence.

Work after the reply (``conn.after``) and scheduled jobs run outside the request: they may
write.
The page being served is :data:`pyweb.forms.current_page` (set by the app for every
request); outside a request (a notebook, a job, a test) there is none and nothing is checked.
"""

from __future__ import annotations

import logging

from pyweb.forms import current_page

from .errors import DbError

__all__ = ["WriteInGet", "check_write", "SAFE_METHODS"]

log = logging.getLogger("pyweb.db")

SAFE_METHODS = ("GET", "HEAD")
"""The methods whose pages must not write (OPTIONS and TRACE never reach a page's code)."""

_warned: set[str] = set()
"""The pages already named in the error log (once per page and process)."""


class WriteInGet(DbError):
    """``db.dml`` while answering a GET, in development mode: a page bug (500)."""

    http_status = 500


def check_write(sql: str) -> None:
    """Before a write: refuse it (``--dev``) or log it once (production) when the page
    being served answers a GET or HEAD; nothing otherwise."""
    page = current_page.get(None)
    method = getattr(page, "method", None)
    if method not in SAFE_METHODS:
        return
    name = str(getattr(page, "page", "the page"))
    why = why_not(name, method)
    if getattr(page, "dev", False):
        raise WriteInGet(why, sql=sql)
    if name not in _warned:
        _warned.add(name)
        log.warning("%s (warned once per page; development mode refuses it)", why)


def why_not(page: str, method: str) -> str:
    """The sentence that teaches why a GET must not write, and what to write instead."""
    return (
        f"{page} called db.dml while answering a {method}: a GET must not change anything. "
        "Anyone can make a browser send a GET (a link, an <img src> on another site, a "
        "prefetch, a crawler), and a GET carries no CSRF token. Make the change a POST: "
        "start the page with conn.require_method(\"POST\") and send it from a "
        "<form method=\"post\"> holding {csrf_field()} (from pyweb import csrf_field); the form's variables are read "
        "the same way (a GET's form is its query, a POST's its body)."
    )
