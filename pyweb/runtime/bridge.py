"""The bridge from trio to asyncio drivers: one asyncio loop (uvloop) in a thread of its own.

asyncpg and aiomysql are asyncio libraries; pyweb's server is trio, and calling them from a
trio task fails at once ("no running event loop"). Measured while building pyweb:
trio-asyncio works but had the worst tail latency (p99
195-260 ms) and changes asyncio's loop policy for the whole process; a dedicated thread
running an asyncio loop on uvloop, owning the driver's connections, with trio tasks
handing it *whole queries*, reached about 65% of native throughput with a short tail.
That is this module.

One call is one crossing each way, never one per row:

1. the trio task schedules ``create_task(coro)`` on the loop (``call_soon_threadsafe``);
2. the loop runs the query; the task's done-callback wakes the trio task through its
   :class:`trio.lowlevel.TrioToken` (no worker thread blocks on a future);
3. the trio task takes the result or the exception.

Cancellation: if the trio task is cancelled while waiting, it cancels the asyncio task and
then waits, shielded and bounded, until that task has *really* finished: its clean-up
(asyncpg's cancel request to the server, aiomysql's close and ``KILL QUERY``) has run and
the connection is no longer in use before the pool sees it again.

The loop is created by naming its class (``uvloop.new_event_loop()``, else
``asyncio.SelectorEventLoop()``), never through the global policy, which other libraries
(trio-asyncio) may have replaced.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import trio

__all__ = ["LoopThread", "loop_thread"]

T = TypeVar("T")

CANCEL_GRACE = 5.0
"""Seconds a cancelled query's asyncio task gets to clean up before trio moves on."""


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop comes with the postgresql/mysql extras
        return asyncio.SelectorEventLoop()
    return uvloop.new_event_loop()


def _shorten_switch_interval() -> None:
    """Let the loop thread get the GIL back quickly (Python's default switch interval of
    5 ms made a page that renders 500 rows wait for its rows; 0.5 ms is pyweb's setting,
    only ever lowered)."""
    if sys.getswitchinterval() > 0.0005:
        sys.setswitchinterval(0.0005)


class _Call:
    """One query handed to the loop: its asyncio task, and the trio task waiting for it.

    The trio task parks itself (``wait_task_rescheduled``) and the loop's done-callback
    reschedules it through the run's token: a ``trio.Event`` per query cost about a fifth
    of a whole crossing (docs/performance.md). An Event is made only after a cancellation,
    to wait for the asyncio task's clean-up."""

    __slots__ = ("task", "waiter", "parked", "finished", "event")

    def __init__(self, waiter: trio.lowlevel.Task) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.waiter = waiter
        self.parked = False
        self.finished = False
        self.event: trio.Event | None = None

    def finish(self) -> None:
        """In the trio run, when the asyncio task is done: wake whoever waits for it."""
        self.finished = True
        if self.parked:
            self.parked = False
            trio.lowlevel.reschedule(self.waiter)
        if self.event is not None:
            self.event.set()

    def abort(self, _raise_cancel: object) -> trio.lowlevel.Abort:
        """The trio task is cancelled while parked: it stops waiting (see LoopThread.call)."""
        self.parked = False
        return trio.lowlevel.Abort.SUCCEEDED

    def finished_event(self) -> trio.Event:
        """An Event set when the asyncio task is done (made on demand)."""
        if self.event is None:
            self.event = trio.Event()
            if self.finished:
                self.event.set()
        return self.event


class LoopThread:
    """An asyncio event loop running forever in a daemon thread, started on first use."""

    def __init__(self, name: str = "pyweb-db-loop") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is not None:
            return loop
        with self._lock:
            if self._loop is None:
                _shorten_switch_interval()
                loop = _new_loop()
                ready = threading.Event()
                loop.call_soon(ready.set)
                thread = threading.Thread(target=loop.run_forever, name=self.name, daemon=True)
                thread.start()
                ready.wait()
                self._thread = thread
                self._loop = loop
            return self._loop

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for it from trio (see the module doc)."""
        loop = self.loop
        token = trio.lowlevel.current_trio_token()
        call = _Call(trio.lowlevel.current_task())

        def wake(_task: object) -> None:
            try:
                token.run_sync_soon(call.finish)
            except trio.RunFinishedError:  # the trio run is gone: nobody to wake
                pass

        def start() -> None:
            call.task = loop.create_task(coro)
            call.task.add_done_callback(wake)

        # A fresh context: the trio task's context variables (sniffio's "this is trio"
        # among them) must not follow the query onto the asyncio loop.
        loop.call_soon_threadsafe(start, context=contextvars.Context())
        call.parked = True
        try:
            await trio.lowlevel.wait_task_rescheduled(call.abort)
        except trio.Cancelled:
            # call_soon_threadsafe keeps order: start() has run before this callback.
            loop.call_soon_threadsafe(lambda: call.task.cancel() if call.task else None)
            with trio.CancelScope(shield=True), trio.move_on_after(CANCEL_GRACE):
                await call.finished_event().wait()
            raise
        task = call.task
        assert task is not None
        if task.cancelled():  # cancelled from the asyncio side (loop shutting down)
            raise trio.BrokenResourceError("the database loop cancelled the query")
        return task.result()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop from any thread, without waiting (closing connections)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


loop_thread = LoopThread()
"""The process's one driver loop, shared by every asyncio-based database."""
