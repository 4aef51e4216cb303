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
2. the loop runs the query; the task's done-callback rings the call's *bell*, a socket
   pair the trio task waits on with ``wait_readable`` (no worker thread blocks on a
   future);
3. the trio task takes the result or the exception.

Why a bell and not the run's :class:`trio.lowlevel.TrioToken`: a token's callback runs in
trio's entry-queue task, which reschedules the waiting task, which runs one scheduler
round later: two rounds of trio's scheduler per query. The bell's socket wakes the waiting
task itself, in one. Under callgrind an empty coroutine's crossing went from about 155k
to about 90k instructions (docs/performance.md). A bell is lent to one call at a time and
kept for the next (up to :data:`IDLE_BELLS` of them), so a query makes no new sockets.

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
import atexit
import concurrent.futures
import contextvars
import socket
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import trio

__all__ = ["LoopThread", "loop_thread"]

T = TypeVar("T")

CANCEL_GRACE = 5.0
"""Seconds a cancelled query's asyncio task gets to clean up before trio moves on."""
IDLE_BELLS = 64
"""Bells kept for the next calls (two sockets each); one more after a burst of
concurrent queries is closed rather than kept, so a burst leaves no lasting file
descriptors behind."""


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


class _Bell:
    """A socket pair: the loop thread rings it when a call's asyncio task is done, the trio
    task waits until it can read it."""

    __slots__ = ("_ear", "_hammer", "fd")

    def __init__(self) -> None:
        self._ear, self._hammer = socket.socketpair()
        self._ear.setblocking(False)
        self._hammer.setblocking(False)
        self.fd = self._ear.fileno()

    def ring(self, _task: object = None) -> None:
        """On the loop thread: the task is done (an asyncio done-callback)."""
        self._hammer.send(b"\0")

    def clear(self) -> None:
        """After the ring was heard: ready to be lent again."""
        self._ear.recv(16)

    def close(self, _task: object = None) -> None:
        self._ear.close()
        self._hammer.close()


class LoopThread:
    """An asyncio event loop running forever in a daemon thread, started on first use."""

    def __init__(self, name: str = "pyweb-db-loop") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._bells: list[_Bell] = []  # idle ones; list.pop/append: safe from any thread
        atexit.register(self._close_bells)  # closed, not left to the interpreter's teardown

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
        try:
            bell = self._bells.pop()
        except IndexError:
            bell = _Bell()
        started: list[asyncio.Task[Any]] = []

        def start() -> None:
            task = loop.create_task(coro)
            task.add_done_callback(bell.ring)
            started.append(task)

        # A fresh context: the trio task's context variables (sniffio's "this is trio"
        # among them) must not follow the query onto the asyncio loop.
        loop.call_soon_threadsafe(start, context=contextvars.Context())
        try:
            await trio.lowlevel.wait_readable(bell.fd)
        except trio.Cancelled:
            # call_soon_threadsafe keeps order: start() has run before this callback.
            loop.call_soon_threadsafe(lambda: started[0].cancel())
            with trio.CancelScope(shield=True), trio.move_on_after(CANCEL_GRACE) as grace:
                await trio.lowlevel.wait_readable(bell.fd)
            if grace.cancelled_caught:
                # It may still ring: the loop closes it once it has (never lent again).
                loop.call_soon_threadsafe(lambda: started[0].add_done_callback(bell.close))
            else:
                self._put_back(bell)
            raise
        self._put_back(bell)
        task = started[0]
        if task.cancelled():  # cancelled from the asyncio side (loop shutting down)
            raise trio.BrokenResourceError("the database loop cancelled the query")
        return task.result()

    def _put_back(self, bell: _Bell) -> None:
        if len(self._bells) >= IDLE_BELLS:
            bell.close()
            return
        bell.clear()
        self._bells.append(bell)

    def _close_bells(self) -> None:
        while self._bells:
            self._bells.pop().close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the loop from any thread, without waiting (closing connections)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)


loop_thread = LoopThread()
"""The process's one driver loop, shared by every asyncio-based database."""
