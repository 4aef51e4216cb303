"""The runtime seam's contract: what an event loop must provide to run pyweb (Hop §2.4,
pluggable schedulers, one level down).

:class:`Runtime` is a ``typing.Protocol`` that a *module* satisfies: ``_trio.py`` and
``_asyncio.py`` each define every name below, and mypy checks both against it where
``pyweb.runtime`` lists them (``_BY_NAME``). What :func:`pyweb.runtime.current` returns is
typed by it, so code above the seam (the events, the caches, the databases, the server's
WebSocket) can only use what both loops provide.

The synchronisation objects are typed by what they do (:class:`Scope`, :class:`Lock`,
:class:`Semaphore`), since each loop brings its own class.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Coroutine
from types import TracebackType
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Lock", "Runtime", "Scope", "Semaphore"]

T = TypeVar("T")


class Scope(Protocol):
    """trio's cancel scope (on asyncio, anyio's)."""

    deadline: float
    shield: bool

    @property
    def cancel_called(self) -> bool: ...

    @property
    def cancelled_caught(self) -> bool: ...

    def cancel(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool: ...


class Lock(Protocol):
    """A loop's lock: ``async with lock:``."""

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, kind: Any, exc: Any, tb: Any, /) -> Any: ...

    def locked(self) -> bool: ...


class Semaphore(Protocol):
    """A counting semaphore with bounded waits (the database pools)."""

    @property
    def value(self) -> int: ...

    async def acquire(self) -> None: ...

    def acquire_nowait(self) -> None: ...

    def release(self) -> None: ...


@runtime_checkable
class Runtime(Protocol):
    """One event loop, as pyweb uses it (see ``pyweb/runtime/__init__.py`` for each name)."""

    @property
    def name(self) -> str:
        """``"trio"`` or ``"asyncio"``."""

    @property
    def Cancelled(self) -> type[BaseException]:  # noqa: N802 - the loops' own name
        """The exception a cancelled task receives."""

    @property
    def WouldBlock(self) -> type[Exception]:  # noqa: N802
        """What ``Semaphore.acquire_nowait`` raises when no unit is free."""

    @property
    def BusyResourceError(self) -> type[Exception]:  # noqa: N802
        """Another task waits on the same socket."""

    @property
    def ClosedResourceError(self) -> type[Exception]:  # noqa: N802
        """A socket waited on was closed under the waiter (:meth:`notify_closing`)."""

    @property
    def CancelScope(self) -> Callable[..., Scope]:  # noqa: N802
        """``CancelScope(deadline=..., shield=...)``."""

    def move_on_after(self, seconds: float, /) -> Scope: ...

    @property
    def Event(self) -> Callable[[], Any]:  # noqa: N802
        """The loop's event (``set``, ``is_set``, ``await wait()``)."""

    @property
    def Lock(self) -> Callable[[], Lock]:  # noqa: N802
        ...

    @property
    def Semaphore(self) -> Callable[[int], Semaphore]:  # noqa: N802
        ...

    def now(self) -> float:
        """The loop's clock in seconds."""

    def sleep(self, seconds: float, /) -> Awaitable[None]: ...

    async def sleep_forever(self) -> Any: ...

    async def checkpoint_if_cancelled(self) -> None: ...

    async def cancel_shielded_checkpoint(self) -> None: ...

    def current_task(self) -> Any: ...

    def waiter(self) -> Any:
        """Made by the task that will :meth:`park`."""

    async def park(self, waiter: Any, on_abort: Callable[[], None], /) -> None:
        """Suspend until :meth:`unpark` (``on_abort`` runs at once if cancelled first)."""

    def unpark(self, waiter: Any, /) -> None: ...

    def spawn_background(self, fn: Callable[..., Awaitable[Any]], /, *args: Any) -> None: ...

    async def to_thread(
        self, fn: Callable[..., T], /, *args: Any, abandon_on_cancel: bool = False
    ) -> T: ...

    async def wait_readable(self, sock: socket.socket | int, /) -> None: ...

    async def wait_writable(self, sock: socket.socket | int, /) -> None: ...

    def notify_closing(self, sock: socket.socket | int, /) -> None:
        """Wake the tasks waiting on ``sock`` with ``ClosedResourceError`` (before closing it)."""

    def thread_handoff(self) -> Callable[[Callable[[], object]], object]:
        """What another thread calls with a function to have it run soon on this loop."""

    async def acquire_within(self, semaphore: Any, seconds: float, /) -> bool:
        """Take a unit of ``semaphore``, waiting at most ``seconds``."""

    def loop_id(self) -> object: ...

    def loop_alive(self, loop_id: Any, /) -> bool: ...

    async def run_asyncio(self, coro: Coroutine[Any, Any, T], /) -> T: ...

    def asyncio_loop(self) -> asyncio.AbstractEventLoop: ...
