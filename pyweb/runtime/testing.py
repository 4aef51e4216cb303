"""Running the same async test on either runtime, with virtual time.

trio has ``trio.testing.MockClock(autojump_threshold=0)``: whenever every task is blocked,
the clock jumps to the next deadline, so a test of a 5-second timeout takes no time and
sees exactly 5 seconds pass.  asyncio has no such clock; :class:`VirtualClockLoop` is one:
a selector loop whose ``time()`` is virtual and whose selector, when the loop would sleep
until its next timer and no socket is ready, advances the clock to that timer instead.

:func:`run` runs ``fn()`` on the named runtime with virtual time (tests of pyweb.events
are parametrised over both); :func:`wait_all_tasks_blocked` is trio's helper of that name
on both.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from . import current

T = TypeVar("T")

__all__ = ["RUNTIMES", "VirtualClockLoop", "run", "wait_all_tasks_blocked"]

RUNTIMES = ("trio", "asyncio")
"""The runtimes a portable test runs on."""


class _JumpingSelector(selectors.DefaultSelector):
    """A selector that, instead of blocking for ``timeout`` seconds with nothing ready,
    moves the virtual clock forward by ``timeout``."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = 0.0

    def select(self, timeout: float | None = None) -> list[Any]:
        if timeout is None or timeout <= 0:
            return super().select(timeout)
        ready = super().select(0)
        if not ready:
            self.clock += timeout
        return ready


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """An asyncio loop on virtual time that jumps whenever every task is blocked."""

    def __init__(self) -> None:
        self._jumping = _JumpingSelector()
        super().__init__(self._jumping)
        self._clock_resolution = 1e-9

    def time(self) -> float:
        return self._jumping.clock


def run(fn: Callable[[], Awaitable[T]], runtime: str = "trio", *, virtual_time: bool = True) -> T:
    """Run ``fn()`` to completion on ``runtime`` (``"trio"`` or ``"asyncio"``), on a
    virtual clock unless ``virtual_time=False``."""
    if runtime == "trio":
        import trio.testing

        options: dict[str, Any] = {}
        if virtual_time:
            options["clock"] = trio.testing.MockClock(autojump_threshold=0)
        return anyio.run(fn, backend="trio", backend_options=options)
    if runtime == "asyncio":
        options = {"loop_factory": VirtualClockLoop} if virtual_time else {}
        return anyio.run(fn, backend="asyncio", backend_options=options)
    raise ValueError(f"unknown runtime {runtime!r}")


async def wait_all_tasks_blocked() -> None:
    """Return once every other task of the loop is blocked (trio's helper of that name)."""
    rt = current()
    if rt.name == "trio":
        import trio.testing

        await trio.testing.wait_all_tasks_blocked()
        return
    me = asyncio.current_task()
    idle_rounds = 0
    while idle_rounds < 2:  # twice in a row: a callback may have just woken someone
        await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        busy = bool(getattr(loop, "_ready", ()))
        if not busy:
            for task in asyncio.all_tasks():
                if task is me:
                    continue
                waiter = task._fut_waiter  # type: ignore[attr-defined]
                if waiter is None or waiter.done():
                    busy = True
                    break
        idle_rounds = 0 if busy else idle_rounds + 1
