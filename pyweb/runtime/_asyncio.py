"""The asyncio implementation of :mod:`pyweb.runtime` (the standard loop or uvloop).

asyncio suspends a task on a *future*, so CML's two moves become: park = await a fresh
future, unpark = set its result.  Two differences from trio shape this file:

* **Withdrawing at cancellation.**  trio calls a parked task's abort callback inside the
  scheduler, at the moment it is cancelled, so no partner can commit with a task that is
  already being cancelled.  Here the future's own ``cancel`` does it: ``Task.cancel()``
  calls the awaited future's ``cancel()`` synchronously, and :class:`_Parked` runs the
  abort callback there, before anything else can run.
* **Edge-triggered cancellation.**  asyncio delivers a cancellation once, at the next
  suspension.  If it arrives after a partner has already committed (the future has its
  result, the task has not resumed yet), :func:`park` keeps the committed value and
  re-requests the cancellation, so it is raised at the task's next suspension, which is
  what trio does.

Cancel scopes with deadlines and shielding are anyio's (:class:`anyio.CancelScope`),
which brings trio's level-triggered scopes to asyncio; ``asyncio.timeout`` has no
``cancel()`` from another task and no shield.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import math
import socket
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import anyio

T = TypeVar("T")

name = "asyncio"

Cancelled = asyncio.CancelledError
CancelScope = anyio.CancelScope
move_on_after = anyio.move_on_after
Event = asyncio.Event
Lock = asyncio.Lock
INF = math.inf

_current_task = asyncio.current_task
_get_running_loop = asyncio.get_running_loop

__all__ = [
    "BusyResourceError",
    "ClosedResourceError",
    "acquire_within",
    "asyncio_loop",
    "CancelScope",
    "Cancelled",
    "Event",
    "Lock",
    "Semaphore",
    "WouldBlock",
    "cancel_shielded_checkpoint",
    "checkpoint_if_cancelled",
    "current_task",
    "loop_alive",
    "loop_id",
    "move_on_after",
    "name",
    "notify_closing",
    "now",
    "park",
    "run_asyncio",
    "sleep",
    "sleep_forever",
    "spawn_background",
    "thread_handoff",
    "to_thread",
    "unpark",
    "wait_readable",
    "wait_writable",
    "waiter",
]


class WouldBlock(Exception):
    """Raised by :meth:`Semaphore.acquire_nowait` when no unit is free."""


class BusyResourceError(Exception):
    """Two tasks waited on the same socket at once (as trio's error of that name)."""


class ClosedResourceError(Exception):
    """The socket a task waited on was closed under it (:func:`notify_closing`), as
    trio's error of that name."""


def now() -> float:
    """The running loop's clock (``loop.time()``)."""
    return _get_running_loop().time()


sleep = asyncio.sleep


async def sleep_forever() -> None:
    """Suspend until cancelled."""
    await _get_running_loop().create_future()


def current_task() -> Any:
    return _current_task()


async def checkpoint_if_cancelled() -> None:
    """Nothing to do: a pending asyncio cancellation is raised at the next suspension."""


@functools.cache
def _bare_yield() -> Any:
    import types

    @types.coroutine
    def yield_once() -> Any:
        yield  # a bare yield: the task goes back to the end of the ready queue

    return yield_once


async def cancel_shielded_checkpoint() -> None:
    """Let other tasks run once; a cancellation that arrives meanwhile is kept for the
    task's next suspension (the caller has just committed something it must not lose)."""
    try:
        await _bare_yield()()
    except asyncio.CancelledError:
        _rearm_cancel()


def _rearm_cancel() -> None:
    # The cancellation was consumed by a wait that had already succeeded: ask for it again
    # (uncancel first so that asyncio.timeout's bookkeeping counts it once).
    task = _current_task()
    if task is not None:
        task.uncancel()
        task.cancel()


class _Parked(asyncio.Future):
    """The future a parked task waits on.  Its ``cancel`` withdraws the task's offers
    first, synchronously, as trio's abort callback does."""

    on_abort: Callable[[], None] | None = None

    def cancel(self, msg: Any = None) -> bool:
        if self.done():
            return False
        on_abort = self.on_abort
        if on_abort is not None:
            self.on_abort = None
            on_abort()
        return super().cancel(msg=msg)


def waiter() -> _Parked:
    """A fresh future for the current task's next :func:`park`."""
    return _Parked(loop=_get_running_loop())


async def park(fut: _Parked, on_abort: Callable[[], None]) -> None:
    """Suspend until :func:`unpark` (``fut`` gets its result) or a cancellation (then
    ``on_abort()`` has run before ``CancelledError`` is raised here)."""
    fut.on_abort = on_abort
    try:
        await fut
    except asyncio.CancelledError:
        if fut.cancelled():
            raise
        # Unparked (committed) before the cancellation reached us: keep the value.
        _rearm_cancel()


def unpark(fut: _Parked) -> None:
    """Make a parked task runnable again."""
    fut.on_abort = None
    fut.set_result(None)


_background: set[asyncio.Task[Any]] = set()


def spawn_background(fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
    """Run ``fn(*args)`` as a task of the running loop; an escaping exception is logged
    (``pyweb.runtime``) and goes no further, as on trio."""
    task: asyncio.Task[Any] = _get_running_loop().create_task(
        fn(*args), name=getattr(fn, "__qualname__", None)  # type: ignore[arg-type]
    )
    _background.add(task)
    task.add_done_callback(_background_done)


def _background_done(task: asyncio.Task[Any]) -> None:
    _background.discard(task)
    if not task.cancelled() and (exc := task.exception()) is not None:
        logging.getLogger("pyweb.runtime").error(
            "background task %s failed (the server goes on)", task.get_name(), exc_info=exc
        )


async def to_thread(fn: Callable[..., T], *args: Any, abandon_on_cancel: bool = False) -> T:
    """Run the blocking ``fn(*args)`` in the loop's default executor, in a copy of the
    caller's context (as trio does).  Unless ``abandon_on_cancel``, a cancellation waits
    for the thread to finish first."""
    context = contextvars.copy_context()
    fut = _get_running_loop().run_in_executor(None, functools.partial(context.run, fn, *args))
    if abandon_on_cancel:
        return await fut
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        while not fut.done():
            try:
                await asyncio.wait([fut])
            except asyncio.CancelledError:
                continue
        raise


def thread_handoff() -> Callable[[Callable[[], object]], object]:
    """How another thread hands a call to this loop: its ``call_soon_threadsafe``."""
    return _get_running_loop().call_soon_threadsafe


def loop_id() -> object:
    """The running loop itself."""
    return _get_running_loop()


def loop_alive(loop: Any) -> bool:
    return not loop.is_closed()


async def run_asyncio(coro: Coroutine[Any, Any, T]) -> T:
    """A driver's coroutine runs natively here: no bridge, no thread."""
    return await coro


def asyncio_loop() -> asyncio.AbstractEventLoop:
    """The running loop: drivers' objects live here."""
    return _get_running_loop()


# -- sockets ------------------------------------------------------------------------------------


class _FdWait(asyncio.Future):
    """Waiting for a descriptor; cancelling unregisters it at once (so it can be waited
    on again right away, as in trio)."""

    fd = -1
    writing = False

    def cancel(self, msg: Any = None) -> bool:
        if self.done():
            return False
        _unregister(self)
        return super().cancel(msg=msg)


_waiting: dict[tuple[int, bool], _FdWait] = {}


def _unregister(w: _FdWait) -> None:
    key = (w.fd, w.writing)
    if _waiting.get(key) is w:
        del _waiting[key]
        loop = w.get_loop()
        if w.writing:
            loop.remove_writer(w.fd)
        else:
            loop.remove_reader(w.fd)


def _ready(w: _FdWait) -> None:
    _unregister(w)
    if not w.done():
        w.set_result(None)


async def _wait_fd(sock: socket.socket | int, writing: bool) -> None:
    fd = sock if isinstance(sock, int) else sock.fileno()
    if fd < 0:
        raise OSError(9, "socket is closed")
    key = (fd, writing)
    if key in _waiting:
        raise BusyResourceError(f"another task is already waiting on descriptor {fd}")
    loop = _get_running_loop()
    w = _FdWait(loop=loop)
    w.fd, w.writing = fd, writing
    _waiting[key] = w
    if writing:
        loop.add_writer(fd, _ready, w)
    else:
        loop.add_reader(fd, _ready, w)
    try:
        await w
    finally:
        _unregister(w)


async def wait_readable(sock: socket.socket | int) -> None:
    """Suspend until ``sock`` has data (or EOF) to read."""
    await _wait_fd(sock, False)


async def wait_writable(sock: socket.socket | int) -> None:
    """Suspend until ``sock`` can be written without blocking."""
    await _wait_fd(sock, True)


def notify_closing(sock: socket.socket | int) -> None:
    """``sock`` is about to be closed: every task waiting on it through this module wakes
    with :class:`ClosedResourceError` (its wait is unregistered first, so the loop never
    watches a closed descriptor)."""
    fd = sock if isinstance(sock, int) else sock.fileno()
    for writing in (False, True):
        w = _waiting.get((fd, writing))
        if w is not None:
            _unregister(w)
            if not w.done():
                w.set_exception(ClosedResourceError(f"descriptor {fd} was closed"))


async def acquire_within(semaphore: Semaphore, seconds: float) -> bool:
    """Take a unit of ``semaphore``, waiting at most ``seconds``; whether one was taken."""
    return await semaphore.acquire_within(seconds)


# -- a semaphore with trio's interface ---------------------------------------------------------


class Semaphore:
    """A counting semaphore with ``value``, ``acquire_nowait`` and FIFO waiters (the part of
    ``trio.Semaphore`` that pyweb's database pools use)."""

    def __init__(self, value: int) -> None:
        self._value = value
        self._waiters: deque[asyncio.Future[bool]] = deque()

    @property
    def value(self) -> int:
        return self._value

    def acquire_nowait(self) -> None:
        if self._value <= 0:
            raise WouldBlock
        self._value -= 1

    async def acquire(self) -> None:
        await self.acquire_within(INF)

    async def acquire_within(self, seconds: float) -> bool:
        """Take a unit, waiting at most ``seconds``; whether one was taken.

        The wait is bounded by one timer of the loop, not by a cancel scope: anyio's
        ``move_on_after`` around the wait cost a database page about 80k instructions per
        wait, the timer about a tenth of that (docs/performance.md).
        """
        if self._value > 0 and not self._waiters:
            self._value -= 1
            return True
        loop = _get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(fut)
        timer = loop.call_later(seconds, self._give_up, fut) if seconds < INF else None
        try:
            return await fut  # True: release() handed its unit to us; False: timed out
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled() and fut.result():
                self.release()  # handed over just as we were cancelled: pass it on
            elif fut in self._waiters:
                # Not there when a release() ran between the cancellation and now: it
                # skipped this cancelled future and dropped it from the queue already.
                self._waiters.remove(fut)
            raise
        finally:
            if timer is not None:
                timer.cancel()

    def _give_up(self, fut: asyncio.Future[bool]) -> None:
        if not fut.done():
            self._waiters.remove(fut)
            fut.set_result(False)

    def release(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(True)
                return
        self._value += 1
