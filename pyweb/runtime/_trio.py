"""The trio implementation of :mod:`pyweb.runtime` (the default, and the teaching model).

Everything here is a thin name for something trio already has: trio's ``lowlevel`` module
gives exactly CML's two moves (park a task with an abort callback, unpark it), its cancel
scopes are the deadlines, and its worker threads run blocking calls.  See the package
docstring for what each name promises.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

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
Semaphore = trio.Semaphore
WouldBlock = trio.WouldBlock
BusyResourceError = trio.BusyResourceError
now: Callable[[], float] = trio.current_time
sleep = trio.sleep
sleep_forever = trio.sleep_forever
wait_readable = trio.lowlevel.wait_readable
wait_writable = trio.lowlevel.wait_writable

__all__ = [
    "BusyResourceError",
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
    "now",
    "park",
    "run_asyncio",
    "sleep",
    "sleep_forever",
    "spawn_background",
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
    """Run ``fn(*args)`` in trio's system nursery (an escaping exception ends the run:
    loud on purpose)."""
    spawn_system_task(fn, *args)


async def to_thread(fn: Callable[..., T], *args: Any, abandon_on_cancel: bool = False) -> T:
    """Run the blocking ``fn(*args)`` in a worker thread."""
    return await trio.to_thread.run_sync(fn, *args, abandon_on_cancel=abandon_on_cancel)


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


async def acquire_within(semaphore: trio.Semaphore, seconds: float) -> bool:
    """Take a unit of ``semaphore``, waiting at most ``seconds``; whether one was taken."""
    with trio.move_on_after(seconds):
        await semaphore.acquire()
        return True
    return False


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
