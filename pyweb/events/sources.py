"""Other synchronous operations (Reppy, CML, §2.3): task termination and I/O.

* ``val wait : thread_id -> unit event`` becomes :func:`spawn` (start a task in
  a nursery or task group, get a :class:`TaskHandle`) and :func:`task_done_evt`
  (enabled when that task has finished; its value is the task's result, or
  the task's exception is raised by ``sync``).
* ``val syncOnInput : int -> unit event`` / ``syncOnOutput`` become
  :func:`readable_evt` / :func:`writable_evt` on a socket (or anything with
  ``fileno()``).  While such a branch waits, a small helper task waits on the
  socket (:mod:`pyweb.runtime`); when the branch loses (another branch commits, or the sync
  is cancelled) the helper is cancelled at once, so the socket is free for
  the next waiter.
"""

from __future__ import annotations

import errno
import select
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from pyweb.runtime import current

from ._core import BaseEvent, Event, Offer, _Failure, _Sync, complete

T = TypeVar("T")

__all__ = ["TaskCancelled", "TaskHandle", "readable_evt", "spawn", "task_done_evt", "writable_evt"]


class TaskCancelled(Exception):
    """Raised by syncing on the ``done_evt`` of a task that was cancelled."""


class TaskHandle(Generic[T]):
    """A task started by :func:`spawn`; ``done_evt()`` is CML's ``wait``."""

    __slots__ = ("name", "_done", "_result", "_waiters")

    def __init__(self, name: str) -> None:
        self.name = name
        self._done = False
        self._result: Any = None
        self._waiters: deque[Offer] = deque()

    def __repr__(self) -> str:
        return f"<TaskHandle {self.name} {'done' if self._done else 'running'}>"

    @property
    def done(self) -> bool:
        return self._done

    def done_evt(self) -> Event[T]:
        """Enabled once the task has finished (forever after)."""
        return _DoneEvt(self)

    async def _run(self, fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> None:
        try:
            value = await fn(*args)
        except Exception as exc:
            self._finish(_Failure(exc))
            raise  # errors are never lost: the nursery sees it too
        except BaseException as exc:
            self._finish(_Failure(TaskCancelled(f"{self.name} was cancelled ({exc!r})")))
            raise
        self._finish(value)

    def _finish(self, value: Any) -> None:
        self._done = True
        self._result = value
        waiters = self._waiters
        while waiters:
            complete(waiters.popleft(), value)


class _DoneEvt(BaseEvent[Any]):
    __slots__ = ("handle",)

    def __init__(self, handle: TaskHandle[Any]) -> None:
        self.handle = handle

    def ready(self) -> bool:
        return self.handle._done

    def commit_now(self) -> Any:
        return self.handle._result

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        queue = self.handle._waiters
        offer = Offer(sync, leaf, queue)
        queue.append(offer)
        sync.offers.append(offer)


def spawn(nursery: Any, fn: Callable[..., Awaitable[T]], *args: Any) -> TaskHandle[T]:
    """``val spawn : (unit -> unit) -> thread_id``, in a nursery.

    Starts ``fn(*args)`` in ``nursery`` (a trio nursery, an anyio task group or an
    ``asyncio.TaskGroup``) and returns its handle.
    If the task raises, the exception also propagates into the nursery (trio's
    rule that errors are never lost); ``sync(handle.done_evt())`` raises it.
    """
    handle: TaskHandle[T] = TaskHandle(getattr(fn, "__qualname__", repr(fn)))
    start_soon = getattr(nursery, "start_soon", None)
    if start_soon is not None:  # a trio nursery or an anyio task group
        start_soon(handle._run, fn, args, name=handle.name)
    else:  # an asyncio.TaskGroup
        nursery.create_task(handle._run(fn, args), name=handle.name)
    return handle


def task_done_evt(handle: TaskHandle[T]) -> Event[T]:
    """``val wait : thread_id -> unit event``: ``handle.done_evt()``."""
    return handle.done_evt()


# --------------------------------------------------------------------------
# I/O readiness


class _IOOffer(Offer):
    __slots__ = ("scope",)

    def __init__(self, sync: _Sync, leaf: int) -> None:
        super().__init__(sync, leaf, None)  # type: ignore[arg-type]
        self.scope = sync.rt.CancelScope()

    def withdraw(self) -> None:
        # Cancelling unregisters the helper's wait synchronously (the runtime
        # calls its abort at once), so the socket can be waited on again right away.
        self.scope.cancel()


def _ready_now(sock: Any, writing: bool) -> bool:
    """Is ``sock`` ready right now?  ``poll(2)`` where it exists, since
    ``select(2)`` fails on descriptors above FD_SETSIZE (1024)."""
    fd = sock if isinstance(sock, int) else sock.fileno()
    if fd < 0:
        raise OSError(errno.EBADF, "socket is closed")
    if not hasattr(select, "poll"):  # Windows
        lists: tuple[list[int], list[int], list[int]] = ([], [fd], []) if writing else ([fd], [], [])
        return any(select.select(*lists, 0))
    # One poll object per thread, reused: a new one for each check (with its table of
    # descriptors) allocated more than the rest of the check (Hop §3.1's diet;
    # benchmarks/bench_regions.py --breakdown). A check never yields, so it is never
    # interleaved with another check on the same thread.
    poller = getattr(_pollers, "poller", None)
    if poller is None:
        poller = _pollers.poller = select.poll()
    poller.register(fd, select.POLLOUT if writing else select.POLLIN)
    try:
        for _, mask in poller.poll(0):
            if mask & select.POLLNVAL:
                raise OSError(errno.EBADF, "socket is closed")
            return True
        return False
    finally:
        poller.unregister(fd)


_pollers = threading.local()


class _IOEvt(BaseEvent[None]):
    __slots__ = ("sock", "writing", "_error")

    def __init__(self, sock: Any, writing: bool) -> None:
        self.sock = sock
        self.writing = writing
        self._error: BaseException | None = None

    def ready(self) -> bool:
        try:
            return _ready_now(self.sock, self.writing)
        except (OSError, ValueError) as exc:  # closed socket: commit with the error
            self._error = exc
            return True

    def commit_now(self) -> Any:
        error, self._error = self._error, None
        return None if error is None else _Failure(error)

    async def wait_alone(self) -> Any:
        rt = current()
        try:
            if self.writing:
                await rt.wait_writable(self.sock)
            else:
                await rt.wait_readable(self.sock)
        except Exception as exc:
            return _Failure(exc)
        return None

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        offer = _IOOffer(sync, leaf)
        sync.offers.append(offer)
        sync.rt.spawn_background(self._watch, offer)

    async def _watch(self, offer: _IOOffer) -> None:
        rt = offer.sync.rt
        result: Any = None
        with offer.scope:
            if offer.scope.cancel_called:
                return  # withdrawn before this helper even started
            try:
                if self.writing:
                    await rt.wait_writable(self.sock)
                else:
                    await rt.wait_readable(self.sock)
            except Exception as exc:  # e.g. ClosedResourceError: like syncOnInput
                result = _Failure(exc)
        if offer.scope.cancelled_caught or offer.scope.cancel_called or offer.sync.done:
            return
        complete(offer, result)


def readable_evt(sock: Any) -> Event[None]:
    """``val syncOnInput : int -> unit event``: enabled when ``sock`` has data
    (or EOF) to read.  Raises (through ``sync``) if the socket is closed."""
    return _IOEvt(sock, False)


def writable_evt(sock: Any) -> Event[None]:
    """``val syncOnOutput : int -> unit event``: enabled when ``sock`` can be
    written without blocking."""
    return _IOEvt(sock, True)
