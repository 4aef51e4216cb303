"""The watchdog: a page that holds the event loop (a CPU loop, a blocking call) is found
and named (:mod:`pyweb.app.blocking` does the watching; Marlow §4 on a handler that never
yields).

Before: the page's ``conn`` keeps the watchdog of the loop it runs on; the watchdog's
thread finds the page by the runner's frame on the loop's stack (nothing is registered per
request). After: a page the watchdog saw holding the loop is logged once per page and line,
and in development mode its answer carries a banner saying where.
"""

from __future__ import annotations

from typing import Any

from pyweb.handler import Context
from pyweb.protocol.response import Response
from pyweb.regions import _with_banner as with_banner

from .. import blocking
from ..conn import Conn
from ..errorpages import _log

__all__ = ["before", "after"]


before = blocking.current
"""The watchdog of the loop the page runs on, which the runner keeps on the page's ``conn``
(``conn.watchdog = watchdog.before()``): its thread finds conn on the loop's stack
(:data:`pyweb.app.blocking.page_codes`). The step is :func:`pyweb.app.blocking.current`
itself: one call, no wrapper around it."""


def after(site: Any, ctx: Context, conn: Conn, response: Response) -> Response:
    """The answer of a page the watchdog saw holding the loop (the runner calls this only
    when ``conn.held`` says so: for any other page the guard has nothing to do)."""
    run = conn.held
    if run is None:
        return response
    for held in blocking.watchdog().new_reports(run):  # the error log: once per page and line
        _log(ctx, f"{run.page}: {blocking.describe(held, site.display)}", None)
    if not site.dev:
        return response
    messages = "; ".join(blocking.describe(held, site.display) for held in run.blocked)
    return with_banner(response, messages, header="X-Pyweb-Blocking")
