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

Some writes in a GET are meant and harmless when a stranger causes them: a visit counter,
a "last seen" time, an audit log of who read what, a one-time login link marked as used.
A page says so around those writes alone, with the reason, and nothing is refused or
logged inside the block (:func:`allow_writes_in_get`)::

    with db.allow_writes_in_get("a visit counter: a prefetch that counts one does no harm"):
        await db.dml(qq("update visits set n = n + 1 where page = {name}"))

The block is as narrow as the writes it covers: a later ``db.dml`` of the same page is
checked again.
The page being served is :data:`pyweb.forms.current_page` (set by the app for every
request); outside a request (a notebook, a job, a test) there is none and nothing is checked.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pyweb.forms import current_page

from .errors import DbError

__all__ = ["WriteInGet", "allow_writes_in_get", "check_write", "SAFE_METHODS"]

log = logging.getLogger("pyweb.db")

SAFE_METHODS = ("GET", "HEAD")
"""The methods whose pages must not write (OPTIONS and TRACE never reach a page's code)."""

_warned: set[str] = set()
"""The pages already named in the error log (once per page and process)."""


_allowed: ContextVar[str | None] = ContextVar("pyweb_writes_in_get", default=None)
"""The reason given by the :func:`allow_writes_in_get` block the page is in (None: none)."""


@contextmanager
def allow_writes_in_get(reason: str) -> Iterator[None]:
    """``with db.allow_writes_in_get("why"):``: the writes inside the block are meant even
    when the page answers a GET (module doc); ``reason`` says why a stranger's GET may
    cause them, for whoever reads the page next."""
    if not isinstance(reason, str) or not reason.strip():
        raise TypeError(
            "allow_writes_in_get takes the reason a GET may write here, as a sentence: "
            f'allow_writes_in_get("a visit counter"), got {reason!r}'
        )
    token = _allowed.set(reason)
    try:
        yield
    finally:
        _allowed.reset(token)


class WriteInGet(DbError):
    """``db.dml`` while answering a GET, in development mode: a page bug (500)."""

    http_status = 500


def check_write(sql: str) -> None:
    """Before a write: refuse it (``--dev``) or log it once (production) when the page
    being served answers a GET or HEAD; nothing otherwise."""
    page = current_page.get(None)
    method = getattr(page, "method", None)
    if method not in SAFE_METHODS or _allowed.get() is not None:
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
        "the same way (a GET's form is its query, a POST's its body). A write meant to "
        "happen on a GET (a visit counter) goes in a block that says why: "
        'with db.allow_writes_in_get("a visit counter"):'
    )
