"""The trio seam of pyweb.events: the only module here that calls trio.

CML (Reppy 1991, §4) implements ``sync`` with first-class continuations: a
blocked thread is a saved continuation that a partner later throws a value to.
Trio gives us the same two moves through ``trio.lowlevel``:

* **park** the current task (``wait_task_rescheduled``) with an abort callback
  that trio calls if the task is cancelled while parked;
* **unpark** a parked task (``reschedule``) so that it resumes.

Everything else the event machinery needs from the event loop is listed here
too (the current task, the clock, a checkpoint, a background task, a cancel
scope with a deadline), so that a second runtime (asyncio, say) would replace
this file and nothing else.  The commit logic in ``_core`` never imports trio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio
from trio.lowlevel import (
    Abort,
    cancel_shielded_checkpoint,
    checkpoint_if_cancelled,
    current_task,
    reschedule,
    spawn_system_task,
    wait_task_rescheduled,
)

__all__ = [
    "Cancelled",
    "DeadlineScope",
    "cancel_shielded_checkpoint",
    "checkpoint_if_cancelled",
    "current_task",
    "now",
    "park",
    "spawn_background",
    "unpark",
]


Cancelled = trio.Cancelled
CancelScope = trio.CancelScope
DeadlineScope = trio.CancelScope  # used as ``with DeadlineScope(deadline=d) as scope``
now: Callable[[], float] = trio.current_time


async def park(on_abort: Callable[[], None]) -> None:
    """Suspend the current task until :func:`unpark` or a cancellation.

    ``on_abort`` runs synchronously, inside trio's scheduler, when the parked
    task is cancelled; it must withdraw the task's offers.  After it returns
    the task resumes by raising ``trio.Cancelled``.
    """

    def abort(_raise_cancel: Any) -> Abort:
        on_abort()
        return Abort.SUCCEEDED

    await wait_task_rescheduled(abort)


def unpark(task: Any) -> None:
    """Make a parked task runnable again (it resumes from :func:`park`).

    It resumes with no value (trio's default ``Value(None)``): the result of
    the sync travels in the sync's state object.
    """
    reschedule(task)


def spawn_background(fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
    """Run ``fn(*args)`` in trio's system nursery.

    Used for the helpers that wait on a socket for ``readable_evt`` and for
    async abort actions of ``wrap_abort``.  An exception escaping a system task
    crashes the whole ``trio.run`` (``TrioInternalError``): loud on purpose.
    """
    spawn_system_task(fn, *args)


# Socket readiness (the paper's syncOnInput / syncOnOutput); objects with a
# fileno() or plain file descriptors, as trio accepts them.
wait_readable = trio.lowlevel.wait_readable
wait_writable = trio.lowlevel.wait_writable
BusyResourceError = trio.BusyResourceError
