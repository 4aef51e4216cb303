"""The runtime seam of :mod:`pyweb.cache`: the few things it needs from an event loop.

DESIGN.md asks that caches not call trio everywhere: pages run on trio, but a notebook cell
awaits on IPython's asyncio loop, and a second scheduler on asyncio may come. So the cache
code is loop-free and asks this module for exactly three things, each written for trio and
for asyncio (found with ``sniffio``):

* :func:`loop_id`: which loop the current task runs on (waiters of one loop can only be
  woken by an event of that loop, so dogpile bookkeeping is per loop);
* :func:`new_event`: an event a task can ``await event.wait()`` on and another ``set()``;
* :func:`wait_socket`: suspend until a non-blocking socket is readable or writable, with a
  timeout (the Redis client tries the syscall first and waits only when it would block).
"""

from __future__ import annotations

import socket
from typing import Any, Protocol

import sniffio

__all__ = ["loop_id", "new_event", "wait_socket", "AsyncEvent"]


class AsyncEvent(Protocol):
    def set(self) -> None: ...

    async def wait(self) -> Any: ...


def _library() -> str:
    try:
        return sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        raise RuntimeError("pyweb.cache's async calls must run inside trio or asyncio") from None


def loop_id() -> object:
    """An object identifying the running event loop."""
    if _library() == "trio":
        import trio

        return trio.lowlevel.current_trio_token()
    import asyncio

    return asyncio.get_running_loop()


def new_event() -> AsyncEvent:
    """An event of the running loop's library."""
    if _library() == "trio":
        import trio

        return trio.Event()
    import asyncio

    return asyncio.Event()


async def wait_socket(sock: socket.socket, *, writable: bool, timeout: float) -> None:
    """Wait until ``sock`` is readable (or writable); ``TimeoutError`` after ``timeout``."""
    if _library() == "trio":
        import trio

        wait = trio.lowlevel.wait_writable if writable else trio.lowlevel.wait_readable
        with trio.move_on_after(timeout) as scope:
            await wait(sock)
        if scope.cancelled_caught:
            raise TimeoutError(f"no answer in {timeout:g} s")
        return
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not future.done():
            future.set_result(None)

    fd = sock.fileno()
    if writable:
        loop.add_writer(fd, ready)
    else:
        loop.add_reader(fd, ready)
    try:
        await asyncio.wait_for(future, timeout)
    finally:
        if writable:
            loop.remove_writer(fd)
        else:
            loop.remove_reader(fd)
