"""pyweb.runtime: the one seam between pyweb and an event loop (Hop §2.4, pluggable schedulers).

Hop answers "which scheduler?" by making schedulers pluggable.  pyweb does the same one
level down: the events (CML), the caches, the databases and the pages never call an event
loop directly; they ask this package, and this package has two implementations:

* :mod:`pyweb.runtime._trio`: trio, the default and the teaching model (structured
  concurrency, cancel scopes);
* :mod:`pyweb.runtime._asyncio`: asyncio, on the standard loop or on uvloop (speed, the
  native database drivers, the ASGI servers).

Which one a call uses is decided by the running loop: :func:`current` returns the
implementation of the loop the calling task runs on (trio marks its runs for ``sniffio``;
otherwise a running asyncio loop means asyncio).  Code that knows its loop may name it:
:func:`get` (``get("asyncio")``).  Hot paths call :func:`current` once and keep what it
returns (``pyweb.events.sync`` does so once per sync); the functions of the same names at
this level (:func:`now`, :func:`sleep`, ...) look it up on each call, for code that runs
rarely.

What a second implementation must provide (the contract; both modules define every name,
and :class:`~pyweb.runtime.contract.Runtime` types it for mypy)
-----------------------------------------------------------------------------------------
``name``
    ``"trio"`` or ``"asyncio"``.
``Cancelled``
    The exception a cancelled task receives (``trio.Cancelled``, ``asyncio.CancelledError``).
``now()``
    The loop's clock in seconds (virtual clocks for tests go through it).
``await sleep(seconds)``, ``await sleep_forever()``
    Suspend for ``seconds``, or until cancelled.
``await checkpoint_if_cancelled()`` / ``await cancel_shielded_checkpoint()``
    Raise now if the task is cancelled / let other tasks run without being cancelled
    (a cancellation that arrives then is raised at the next suspension).
``current_task()``
    An object identifying the running task (for "does this task hold it?").
``waiter()``, ``await park(waiter, on_abort)``, ``unpark(waiter)``
    CML's two moves (Reppy §4: a blocked thread is a saved continuation).  ``waiter()``
    is made by the task that will park; ``park`` suspends it until another task calls
    ``unpark(waiter)``, or until it is cancelled, in which case ``on_abort()`` runs
    *synchronously at the moment of the cancellation*, before any other task can run, so
    that no partner can commit with a task that is going away.  If the cancellation
    arrives after ``unpark``, ``park`` returns normally and the cancellation is raised at
    the next suspension: nothing committed is lost.
``spawn_background(fn, *args)``
    Run ``fn(*args)`` as a task owned by the loop itself (socket watchers, abort actions);
    an exception that escapes it is logged, never raised into the loop. Internal: a page
    hands work to the server with ``conn.after`` (:mod:`pyweb.app.after`).
``CancelScope(deadline=..., shield=...)``, ``move_on_after(seconds)``
    trio's cancel scopes: ``cancel()``, ``cancel_called``, ``cancelled_caught``,
    ``deadline``, ``shield`` (on asyncio, anyio's implementation of them).
``await wait_readable(sock)`` / ``await wait_writable(sock)``
    Suspend until a socket (or descriptor) is ready; cancelling the wait unregisters it at
    once.  ``BusyResourceError`` if another task waits on the same socket.
``notify_closing(sock)``
    Call before closing a socket another task may wait on: that wait ends at once with
    ``ClosedResourceError`` (how shutdown stops an accept loop).
``thread_handoff()``
    A function that another thread (a worker thread, a driver's) calls with a
    synchronous function to have it run soon in the loop's own thread (trio's token's
    ``run_sync_soon``, asyncio's ``call_soon_threadsafe``): state that belongs to the
    loop is then touched by the loop alone.
``await to_thread(fn, *args, abandon_on_cancel=False)``
    Run a blocking call in a worker thread.
``Event()``, ``Lock()``, ``Semaphore(n)`` (with ``value``, ``acquire_nowait`` raising
``WouldBlock``)
    The synchronisation objects of the loop.
``loop_id()``, ``loop_alive(loop_id)``
    A hashable object naming the running loop (one per ``trio.run`` / asyncio loop), and
    whether that loop still runs (per-loop pools are closed when it has ended).
``await run_asyncio(coro)``, ``asyncio_loop()``
    Run an asyncio library's coroutine (asyncpg, aiomysql) to completion: natively on
    asyncio; through one asyncio loop thread on trio (:mod:`pyweb.runtime.bridge`); and
    the asyncio loop those coroutines run on (a driver's connection belongs to it).

The server (``pyweb.server``) is built on trio itself; ``pyweb serve --loop asyncio`` and
:mod:`pyweb.asgi` put the pages on asyncio through this same seam.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import sniffio

from . import _asyncio, _trio
from .contract import Runtime

T = TypeVar("T")

__all__ = [
    "asyncio_loop",
    "current",
    "get",
    "Runtime",
    "loop_id",
    "now",
    "run_asyncio",
    "running_asyncio_loop",
    "sleep",
    "submit_asyncio",
    "to_thread",
    "wait_socket",
]

_sniffio_local = sniffio.thread_local
_get_running_loop = asyncio.get_running_loop  # (one lookup less per call of current())
_BY_NAME: dict[str, Runtime] = {"trio": _trio, "asyncio": _asyncio}  # (mypy checks both)


def current() -> Runtime:
    """The implementation for the loop the calling task runs on.

    ``RuntimeError`` outside any loop (pyweb's async functions must be awaited inside
    ``trio.run`` or an asyncio loop)."""
    if _sniffio_local.name == "trio":
        return _trio
    try:
        _get_running_loop()
    except RuntimeError:  # no asyncio loop runs in this thread: ask sniffio
        try:
            library = sniffio.current_async_library()
        except sniffio.AsyncLibraryNotFoundError:
            raise RuntimeError("pyweb's async calls must run inside trio or asyncio") from None
        return get(library)
    return _asyncio


def running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop running in the calling thread, or None (outside any, or on trio)."""
    try:
        return _get_running_loop()
    except RuntimeError:
        return None


def get(name: str) -> Runtime:
    """The implementation called ``name`` (``"trio"`` or ``"asyncio"``)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"unknown runtime {name!r}: pyweb runs on {' or '.join(sorted(_BY_NAME))}"
        ) from None


# -- the same names, looked up per call (for code that runs rarely) -----------------------------


def now() -> float:
    """The running loop's clock."""
    return current().now()


async def sleep(seconds: float) -> None:
    await current().sleep(seconds)


def loop_id() -> object:
    """An object naming the running loop (waiters of one loop can only be woken by that
    loop's events, so per-loop state is keyed by it)."""
    return current().loop_id()


def spawn_background(fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
    """Internal: a task owned by the loop (socket watchers, abort actions). An exception
    that escapes ``fn`` is logged and goes no further. Pages use ``conn.after``."""
    current().spawn_background(fn, *args)


async def to_thread(fn: Callable[..., T], *args: Any, abandon_on_cancel: bool = False) -> T:
    return await current().to_thread(fn, *args, abandon_on_cancel=abandon_on_cancel)


async def run_asyncio(coro: Coroutine[Any, Any, T]) -> T:
    return await current().run_asyncio(coro)


def asyncio_loop() -> asyncio.AbstractEventLoop:
    """The asyncio loop :func:`run_asyncio` uses from the calling task."""
    return current().asyncio_loop()


def submit_asyncio(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> None:
    """Start ``coro`` on ``loop`` from any thread without waiting for it (closing a
    driver's connection on the loop it belongs to); dropped if that loop is closed."""
    try:
        asyncio.run_coroutine_threadsafe(coro, loop)
    except RuntimeError:  # the loop is closed (its run ended, or the interpreter exits)
        coro.close()


async def wait_socket(sock: socket.socket, *, writable: bool, timeout: float) -> None:
    """Wait until ``sock`` is readable (or writable); ``TimeoutError`` after ``timeout``."""
    rt = current()
    with rt.move_on_after(timeout) as scope:
        if writable:
            await rt.wait_writable(sock)
        else:
            await rt.wait_readable(sock)
    if scope.cancelled_caught:
        raise TimeoutError(f"no answer in {timeout:g} s")
