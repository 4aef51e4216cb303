"""The trio implementation of :mod:`pyweb.runtime` (the default, and the teaching model).

Everything here is a thin name for something trio already has: trio's ``lowlevel`` module
gives exactly CML's two moves (park a task with an abort callback, unpark it), its cancel
scopes are the deadlines, and its worker threads run blocking calls.  See the package
docstring for what each name promises.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import outcome
import trio
from trio.lowlevel import (
    Abort,
    cancel_shielded_checkpoint,
    checkpoint_if_cancelled,
    current_task,
    current_trio_token,
    reschedule,
    spawn_system_task,
    wait_task_rescheduled,
)

T = TypeVar("T")

name = "trio"

Cancelled = trio.Cancelled
CancelScope = trio.CancelScope
move_on_after = trio.move_on_after
Event = trio.Event
Lock = trio.Lock
WouldBlock = trio.WouldBlock
BusyResourceError = trio.BusyResourceError
ClosedResourceError = trio.ClosedResourceError
now: Callable[[], float] = trio.current_time
sleep = trio.sleep
sleep_forever = trio.sleep_forever
wait_readable = trio.lowlevel.wait_readable
wait_writable = trio.lowlevel.wait_writable
notify_closing = trio.lowlevel.notify_closing

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

# The waiter of a parked task is the task itself: trio reschedules tasks, not futures.
waiter = current_task


async def park(_waiter: Any, on_abort: Callable[[], None]) -> None:
    """Suspend the current task until :func:`unpark` or a cancellation (then ``on_abort()``
    runs inside trio's scheduler, before the task resumes by raising ``trio.Cancelled``)."""

    def abort(_raise_cancel: Any) -> Abort:
        on_abort()
        return Abort.SUCCEEDED

    await wait_task_rescheduled(abort)


def unpark(task: Any) -> None:
    """Make a parked task runnable again; it resumes with no value."""
    reschedule(task)


def spawn_background(fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
    """Run ``fn(*args)`` in trio's system nursery. An exception that escapes ``fn`` is
    logged (``pyweb.runtime``) and goes no further: in a system task it would end the
    whole ``trio.run`` (``TrioInternalError``), that is, stop the server."""
    spawn_system_task(_guarded, fn, *args, name=getattr(fn, "__qualname__", None))


async def _guarded(fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
    try:
        await fn(*args)
    except Exception as exc:
        name = getattr(fn, "__qualname__", repr(fn))
        logging.getLogger("pyweb.runtime").error(
            "background task %s failed (the server goes on)", name, exc_info=exc
        )


async def to_thread(fn: Callable[..., T], *args: Any, abandon_on_cancel: bool = False) -> T:
    """Run the blocking ``fn(*args)`` in a worker thread."""
    return await trio.to_thread.run_sync(fn, *args, abandon_on_cancel=abandon_on_cancel)


def thread_handoff() -> Callable[[Callable[[], object]], object]:
    """How another thread hands a call to this run: the run's token's ``run_sync_soon``."""
    return current_trio_token().run_sync_soon


def loop_id() -> object:
    """The running ``trio.run``'s token (hashable, one per run)."""
    return current_trio_token()


def loop_alive(token: Any) -> bool:
    """Is the run that ``token`` names still going?"""
    try:
        token.run_sync_soon(_nothing)
    except trio.RunFinishedError:
        return False
    return True


def _nothing() -> None:
    pass


async def acquire_within(semaphore: Semaphore, seconds: float) -> bool:
    """Take a unit of ``semaphore``, waiting at most ``seconds``; whether one was taken."""
    return await semaphore.acquire_within(seconds)


# -- a semaphore whose waits are bounded by one timer task ---------------------------------


class _Waiter:
    """A task waiting for a unit, and when it gives up."""

    __slots__ = ("deadline", "task")

    def __init__(self, task: Any, deadline: float) -> None:
        self.task = task
        self.deadline = deadline


class Semaphore:
    """A counting semaphore with ``value``, ``acquire_nowait`` and FIFO waiters whose waits
    are bounded (:meth:`acquire_within`), for the database pools.

    ``trio.Semaphore`` inside ``trio.move_on_after`` does the same, but a cancel scope with a
    deadline costs about 59k instructions per wait (entered, registered, left), and under
    load most requests wait for a handle. Here a waiter parks itself in a queue
    (``wait_task_rescheduled``) and :meth:`release` hands its unit to the first waiter
    directly; the deadlines are kept by *one* timer task per semaphore (a trio system
    task, made at the first wait and ended with the run), which sleeps until the earliest
    deadline and then tells every waiter whose time has passed that it gave up. With one
    timeout for all waits (a pool's), that task wakes about once per timeout, not once per
    wait (docs/performance.md, "Database pages").

    The queue holds exactly the tasks still waiting: a task leaves it when it is handed a
    unit, when it gives up, or when it is cancelled (trio calls the abort callback at the
    moment of the cancellation, and never after the task was rescheduled), so a unit is
    never handed to a task that has gone, and no task is woken twice.
    """

    def __init__(self, value: int) -> None:
        if value < 0:
            raise ValueError("a semaphore's initial value must be >= 0")
        self._value = value
        self._waiters: deque[_Waiter] = deque()
        self._timer: Any = None  # the timer task, once made
        self._timer_parked = False  # it waits for a waiter (none queued when it looked)
        self._timer_scope: trio.CancelScope | None = None  # its sleep, while it sleeps

    @property
    def value(self) -> int:
        """Units free now."""
        return self._value

    def acquire_nowait(self) -> None:
        """Take a unit now, or raise ``trio.WouldBlock``."""
        if self._value <= 0:
            raise trio.WouldBlock
        self._value -= 1

    async def acquire(self) -> None:
        """Take a unit, waiting as long as it takes."""
        await self.acquire_within(INF)

    async def acquire_within(self, seconds: float) -> bool:
        """Take a unit, waiting at most ``seconds``; whether one was taken.

        A free unit is taken without a checkpoint (the caller's next step, a query, has
        one). ``True`` means the unit is the caller's even if it is cancelled just after
        (the cancellation is raised at its next checkpoint): nothing handed over is lost.
        """
        if self._value > 0:  # units are free only while nobody waits (release hands over)
            self._value -= 1
            return True
        deadline = trio.current_time() + seconds if seconds < INF else INF
        waiter = _Waiter(current_task(), deadline)
        self._waiters.append(waiter)
        if deadline < INF:
            self._arm(deadline)

        def abort(_raise_cancel: Any) -> Abort:
            self._waiters.remove(waiter)  # cancelled: still queued (see the class doc)
            return Abort.SUCCEEDED

        return await wait_task_rescheduled(abort)

    def release(self) -> None:
        """Give a unit back: to the first waiter if there is one, else to the count."""
        if self._waiters:
            reschedule(self._waiters.popleft().task, outcome.Value(True))
        else:
            self._value += 1

    def _arm(self, deadline: float) -> None:
        """Make sure the timer task will wake by ``deadline``."""
        if self._timer is None:
            self._timer = spawn_system_task(self._expire, name="pyweb semaphore timer")
        elif self._timer_parked:
            self._timer_parked = False
            reschedule(self._timer)
        elif self._timer_scope is not None and deadline < self._timer_scope.deadline:
            self._timer_scope.deadline = deadline  # a shorter timeout than the others'

    async def _expire(self) -> None:
        """The timer task: sleep until the earliest deadline of the queue, then give up
        every waiter whose deadline has passed; park while nobody waits with a deadline."""
        while True:
            soonest = min((w.deadline for w in self._waiters), default=INF)
            if soonest == INF:
                self._timer_parked = True
                await wait_task_rescheduled(_abort_always)  # _arm wakes it
                continue
            with trio.CancelScope(deadline=soonest) as scope:
                self._timer_scope = scope
                await trio.sleep_forever()
            self._timer_scope = None
            now = trio.current_time()
            if any(w.deadline <= now for w in self._waiters):
                keep: deque[_Waiter] = deque()
                for w in self._waiters:
                    if w.deadline <= now:
                        reschedule(w.task, outcome.Value(False))
                    else:
                        keep.append(w)
                self._waiters = keep


def _abort_always(_raise_cancel: Any) -> Abort:
    return Abort.SUCCEEDED


async def run_asyncio(coro: Coroutine[Any, Any, T]) -> T:
    """Run an asyncio coroutine (a database driver's) to completion from trio: on the
    process's asyncio loop thread (:mod:`pyweb.runtime.bridge`)."""
    from .bridge import loop_thread

    return await loop_thread.call(coro)


def asyncio_loop() -> Any:
    """The asyncio loop that :func:`run_asyncio` runs coroutines on: the bridge's."""
    from .bridge import loop_thread

    return loop_thread.loop


INF = math.inf
