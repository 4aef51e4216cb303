"""Traps: the site's code run before every request whose path a pattern covers
(SMLserver's ``registerTrap``; :mod:`pyweb.app.traps` has the patterns and their matching).

The router finds the traps of a path once (on its canonical spelling, so ``/admin.py`` and
``/ADMIN`` meet ``/admin/*``'s trap); here they run in order, and the first that answers
(a redirect to the login page, a 403) ends the request: the page, service, file or
WebSocket upgrade does not run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from ..conn import Conn
from ..traps import Trap

__all__ = ["before", "after"]


def before(
    conn: Conn, traps: Sequence[Trap], run: Callable[[Conn], Awaitable[None]]
) -> Awaitable[None]:
    """The page ``run`` behind ``traps``: an awaitable that runs them, then the page unless
    one answered. (Without traps the runner calls ``run`` itself: no coroutine more.)"""
    return _trapped(conn, traps, run)


async def _trapped(
    conn: Conn, traps: Sequence[Trap], run: Callable[[Conn], Awaitable[None]]
) -> None:
    for trap in traps:
        await trap.run(conn)
        if conn.response is not None:
            return
    await run(conn)


def after() -> None:
    """Nothing to do after the page (a trap's answer is the page's)."""
