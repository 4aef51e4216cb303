"""pyweb.events: Concurrent ML's first-class synchronous events, on trio or asyncio.

From Reppy, "CML: A Higher-order Concurrent Language" (PLDI 1991), §2-§5.
An *event* is a value that describes a synchronous operation; ``sync``
performs it; ``choose``, ``wrap``, ``guard``, ``with_nack`` build new events
from old ones, so a protocol (an RPC, a buffered channel) can be packaged as
an event and still be used in a selective communication.

    from pyweb.events import Channel, sync, choose, wrap, timeout

    reply = await sync(choose(
        wrap(ch.recv_evt(), lambda v: ("got", v)),
        wrap(timeout(5), lambda _: ("timeout", None)),
    ))

How pyweb differs from Reppy's CML
----------------------------------
* Names are Pythonic: ``recv_evt``/``send_evt`` for ``receive``/``transmit``,
  ``recv``/``send`` for ``accept``/``send``, ``at_time`` for ``waitUntil``,
  ``task_done_evt`` for ``wait``, ``readable_evt``/``writable_evt`` for
  ``syncOnInput``/``syncOnOutput``, ``wrap_abort``/``wrap_handler`` for
  ``wrapAbort``/``wrapHandler``, ``Mailbox`` for the buffered channel.
* ``sync``, ``select``, ``poll``, ``send`` and ``recv`` are coroutines
  (``await sync(e)``); wrappers, guards and ``with_nack`` functions may be
  plain or async functions.
* No threads: CML threads are tasks (trio's or asyncio's), spawned in a
  nursery or task group (:func:`spawn`); events work between tasks of one
  loop.  From another thread, go through the loop:
  ``trio.from_thread.run(ch.send, v)``, ``asyncio.run_coroutine_threadsafe``.
  Calling any of this from outside the loop's thread is not safe.
* The loop is reached only through :mod:`pyweb.runtime` (park and unpark a
  task, the clock, deadlines), which picks trio or asyncio by the loop the
  calling task runs on: the same events run on both.
* There is no pre-emption: a task runs until its next ``await``, which is
  what makes the commit atomic without locks.
* ``poll(e)`` is not an event (``'a option event``) but a coroutine that
  returns at once: the value if ``e`` can commit now, else ``None``
  (ambiguous when ``e`` may itself produce ``None``).
* ``with_nack`` (CML's later ``withNack``) is the primitive; ``wrap_abort`` is
  built on it.  Nacks fire in the task that ran the sync, just after its
  commit (or cancellation).
* Cancellation is the loop's (trio's cancel scopes, asyncio's
  ``Task.cancel``): a cancelled ``sync`` withdraws all its offers and fires
  all its nacks; nothing committed is lost.  ``timeout``/``at_time`` use the
  loop's clock, so ``trio.testing.MockClock`` (and
  :class:`pyweb.runtime.testing.VirtualClockLoop` on asyncio) work.
* Several enabled branches: chosen uniformly at random (``seed(n)`` to
  reproduce a run), as CML's non-deterministic choice.
* CML's synchronizing variables are :class:`IVar` (write once), :class:`MVar` (one-place
  buffer) and :class:`Latch` (a flag set once); a full variable's ``put`` raises
  :class:`PutError` (CML's ``Put``).
* Threads are not garbage-collected when blocked forever: a task blocked on
  a channel nobody else holds stays blocked until its nursery is cancelled.
"""

from __future__ import annotations

from ._core import (
    BaseEvent,
    Event,
    always,
    at_time,
    choose,
    guard,
    never,
    poll,
    seed,
    select,
    sync,
    timeout,
    with_nack,
    wrap,
    wrap_abort,
    wrap_handler,
)
from .channels import Channel
from .library import RPC, Mailbox, Multicast, Port, Request
from .sources import (
    TaskCancelled,
    TaskHandle,
    readable_evt,
    spawn,
    task_done_evt,
    writable_evt,
)
from .syncvar import ClientGoneEvt, IVar, Latch, MVar, PutError, Watcher

__all__ = [
    "RPC",
    "BaseEvent",
    "Channel",
    "ClientGoneEvt",
    "Event",
    "IVar",
    "Latch",
    "MVar",
    "Mailbox",
    "Multicast",
    "Port",
    "PutError",
    "Request",
    "TaskCancelled",
    "TaskHandle",
    "always",
    "at_time",
    "choose",
    "guard",
    "never",
    "poll",
    "readable_evt",
    "seed",
    "select",
    "spawn",
    "sync",
    "task_done_evt",
    "timeout",
    "with_nack",
    "wrap",
    "wrap_abort",
    "Watcher",
    "wrap_handler",
    "writable_evt",
]
