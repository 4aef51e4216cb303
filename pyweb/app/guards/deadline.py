"""The page deadline: a page that awaits gets ``page_timeout`` seconds, then a 503 (Marlow
§4's timeout on a handler; the ``--page-timeout`` setting).

Before: the cancel scope the page runs in (trio's ``move_on_after``, through the runtime
seam), kept on ``conn`` so that a page waiting on purpose (a long poll) can lift it. After:
a page stopped at its deadline is answered 503 with ``Retry-After``. Only a page that
awaits can be stopped at an await; one that never awaits gets no scope (and costs none).
A page that holds the loop instead (a CPU loop, a blocking call) is stopped where it runs
by :mod:`pyweb.app.interrupt` and answered the same way (:func:`interrupted`).
"""

from __future__ import annotations

from typing import Any

from pyweb import runtime
from pyweb.handler import Context
from pyweb.protocol.response import Response

from .. import interrupt
from ..conn import Conn
from ..errorpages import _log

__all__ = ["before", "after", "interrupted"]

_TOO_LONG = "The page took too long to answer, so the server stopped it."


def before(site: Any, conn: Conn, timed: bool) -> Any:
    """The cancel scope for the page (a context manager), or None: no deadline."""
    if not timed or site.page_timeout is None:
        return None
    scope = conn.deadline_scope = runtime.current().move_on_after(site.page_timeout)
    return scope


def after(site: Any, ctx: Context, conn: Conn, name: str, scope: Any) -> Response | None:
    """The 503 for a page stopped at its deadline; None for one that ended in time."""
    conn.deadline_scope = None
    if not scope.cancelled_caught:
        return None
    why = (
        f"{name} took longer than {site.page_timeout:g} s (--page-timeout) and was "
        "stopped. A page that waits long on purpose (a long poll) waits on its own "
        "events: conn.client_gone_evt() / conn.shutdown_evt()"
    )
    _log(ctx, why, None)
    page_503: Response = site.error_page(
        503, detail=why, sentence=_TOO_LONG, request=ctx.request
    )
    page_503.headers.append(("Retry-After", "1"))
    return page_503


def interrupted(
    site: Any, ctx: Context, conn: Conn, filename: str | None, exc: interrupt.PageInterrupted
) -> Response:
    """The 503 of a page stopped where it held the loop: logged once (the watchdog's own
    note of the same hold is dropped), the page and its line on the dev page."""
    from ..runner import _from_the_page  # (the runner imports this module)

    conn.watchdog = conn.held = None  # (the watchdog no longer looks at this page)
    why = interrupt.describe(exc, site.display)
    _log(ctx, why, None)
    _from_the_page(exc, filename)
    page_503: Response = site.error_page(
        503, detail=why, exc=exc, sentence=_TOO_LONG, request=ctx.request
    )
    page_503.headers.append(("Retry-After", "1"))
    return page_503
