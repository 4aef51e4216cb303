"""The un-awaited check: a coroutine the page made and dropped without ``await`` (a
``db.dml(...)`` that never ran) turns the answer into a 500 naming the file and line
(:mod:`pyweb.app.unawaited` notices the coroutines on the page's ``conn``).

Before: nothing (the check is installed once, when the site is made). After: the page's
answer, or the error page explaining what was not awaited.
"""

from __future__ import annotations

from typing import Any

from pyweb.handler import Context
from pyweb.protocol.response import Response

from .. import unawaited as dropped
from ..conn import Conn
from ..errorpages import _log

__all__ = ["before", "after"]


def before() -> None:
    """Nothing per request (``pyweb.app.unawaited.install`` runs once per site)."""


def after(site: Any, ctx: Context, conn: Conn, name: str, response: Response) -> Response:
    """The error page naming what the page did not await (the runner calls this only when
    ``conn.unawaited`` lists something: for any other page the guard has nothing to do)."""
    found = conn.unawaited
    if not found:
        return response
    messages = []
    for item in found:
        message, _line = dropped.explain(item, conn.filename, site.display)
        if message not in messages:
            messages.append(message)
    why = " ".join(messages)
    if not why.startswith(name):  # the message names the page's file and line itself
        why = f"{name}: {why}"
    _log(ctx, why, None)
    return site.error_page(500, detail=why, request=ctx.request)
