"""Work after the reply: ``conn.after(fn, *args)`` runs ``fn`` once the response is sent.

A page that sends a confirmation mail or writes an audit row should not make its visitor
wait for it. SMLserver's answer was a scheduled script (§3, ``Web.schedule``); the
frameworks students meet next (Starlette's ``BackgroundTasks``, Sanic's ``add_task``) let a
page hand a function to the server to run after the reply. pyweb does the same, with the
guarantees the rest of the server gives:

* the work starts only once the reply has gone out (the server calls :meth:`Batch.sent`
  after it wrote the response); a reply that is a server error (5xx: the page failed) drops
  the work, so a crashed page never mails about something it did not store;
* ``fn`` is an ``async def`` (run on the loop) or a plain function (run in a worker thread,
  so it cannot hold the loop);
* an exception is logged with the page's name and the line of its ``conn.after`` call, and
  never reaches the server;
* the number of pieces of work pending in the process is bounded (``after_limit``): past
  it ``conn.after`` raises :class:`AfterWorkFull` (a 503), so a flood of requests cannot
  pile up unbounded work;
* at shutdown the server waits for pending work up to ``after_grace`` seconds, then
  cancels what is left (a thread it cannot stop is abandoned, and said so).

One :data:`WORK` per process; the server sets its limit from the settings.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable
from typing import Any

from pyweb import forms, runtime

__all__ = ["AfterWork", "AfterWorkFull", "Batch", "WORK", "DEFAULT_LIMIT", "DEFAULT_GRACE"]

log = logging.getLogger("pyweb.after")

DEFAULT_LIMIT = 256
"""Pieces of work pending at once in one process (the ``after_limit`` setting)."""
DEFAULT_GRACE = 30.0
"""Seconds a shutdown waits for pending work (the ``after_grace`` setting)."""


class AfterWorkFull(RuntimeError):
    """``conn.after`` when ``after_limit`` pieces of work are already pending (a 503)."""

    http_status = 503


class _Item:
    __slots__ = ("fn", "args", "page", "line", "scope", "conn")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], page: str, line: int | None):
        self.fn = fn
        self.args = args
        self.page = page
        self.line = line
        self.scope: Any = None  # its cancel scope while it runs
        # The page's conn, as current_conn() gave it: the work runs as part of its page, so
        # what a page finds through it (the site's default database) the work finds too.
        self.conn = forms.current_page.get(None)

    def where(self) -> str:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        at = f" line {self.line}" if self.line is not None else ""
        return f"{name}() from {self.page}{at}"


class Batch:
    """The work one request handed over; the server calls :meth:`sent` after its reply."""

    __slots__ = ("work", "items")

    def __init__(self, work: AfterWork) -> None:
        self.work = work
        self.items: list[_Item] = []

    def sent(self, status: int) -> None:
        """The reply (of ``status``) is out: start the work, or drop it after a 5xx."""
        if status >= 500:
            self._drop(f"its page answered {status}")
            return
        items, self.items = self.items, []
        for item in items:
            runtime.spawn_background(self.work._run, item)

    def _drop(self, why: str) -> None:
        items, self.items = self.items, []
        for item in items:
            self.work.pending -= 1
            log.warning("work after the reply dropped: %s; %s", item.where(), why)
        self.work._check_idle()

    def __del__(self) -> None:
        # A reply never sent (the client left, the connection broke): the work is dropped,
        # said so, and no longer counted as pending.
        if self.items:
            self._drop("its reply was never sent (the client left or the connection broke)")


class AfterWork:
    """The process's work after replies: a bound, a count, and the drain at shutdown."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.pending = 0
        """Submitted and not finished (waiting for the reply, or running)."""
        self.running: set[_Item] = set()
        self.failed = 0
        self.done = 0
        self._idle: Any = None  # a runtime Event while drain() waits

    def submit(self, batch: Batch, fn: Callable[..., Any], args: tuple[Any, ...], page: str,
               line: int | None) -> None:  # fmt: skip
        if inspect.iscoroutine(fn):  # conn.after(send(...)): the call made, not handed over
            name = fn.__qualname__
            fn.close()
            raise TypeError(
                f"conn.after takes a function and its arguments, not the result of calling it "
                f"(a coroutine): write conn.after({name}, ...), not conn.after({name}(...))"
            )
        if not callable(fn):
            raise TypeError(f"conn.after takes a function and its arguments, got {fn!r}")
        if self.pending >= self.limit:
            raise AfterWorkFull(
                f"conn.after({getattr(fn, '__qualname__', fn)!s}): {self.pending} pieces of "
                f"work are already pending (after_limit = {self.limit}); try again later"
            )
        self.pending += 1
        batch.items.append(_Item(fn, args, page, line))

    async def _run(self, item: _Item) -> None:
        rt = runtime.current()
        self.running.add(item)
        if item.conn is not None:  # (this task's own context: no other task sees it)
            forms.current_page.set(item.conn)
        try:
            with rt.CancelScope() as scope:
                item.scope = scope
                if inspect.iscoroutinefunction(item.fn):
                    await item.fn(*item.args)
                else:
                    result = await rt.to_thread(item.fn, *item.args, abandon_on_cancel=True)
                    if inspect.isawaitable(result):  # a lambda returning a coroutine
                        await result
            if scope.cancelled_caught:
                log.error("work after the reply cancelled at shutdown: %s", item.where())
            else:
                self.done += 1
        except Exception as exc:  # never to the server: logged with the page and line
            self.failed += 1
            log.error("work after the reply failed: %s", item.where(), exc_info=exc)
        finally:
            self.running.discard(item)
            self.pending -= 1
            self._check_idle()

    def _check_idle(self) -> None:
        if self.pending <= 0 and self._idle is not None:
            self._idle.set()

    async def drain(self, grace: float = DEFAULT_GRACE) -> None:
        """Wait up to ``grace`` seconds for pending work, then cancel what still runs."""
        rt = runtime.current()
        if self.pending > 0:
            self._idle = rt.Event()
            with rt.move_on_after(grace if grace >= 0 else math.inf):
                await self._idle.wait()
            self._idle = None
        for item in list(self.running):
            if item.scope is not None:
                item.scope.cancel()
        # Cancelled work ends at its next wait (a thread is abandoned at once).
        with rt.move_on_after(1.0):
            while self.running:
                await rt.sleep(0.01)

    def status(self) -> dict[str, int]:
        return {"pending": self.pending, "limit": self.limit, "done": self.done,
                "failed": self.failed}  # fmt: skip


WORK = AfterWork()
"""The process's :class:`AfterWork` (``pyweb serve`` sets its ``limit``)."""
