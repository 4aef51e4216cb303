"""Run every ``async def`` test of this directory on both runtimes, on virtual time.

Each coroutine test is parametrised over ``pyweb.runtime.testing.RUNTIMES`` (trio and
asyncio) and runs in its own loop through :func:`pyweb.runtime.testing.run`: trio with
``MockClock(autojump_threshold=0)``, asyncio on a ``VirtualClockLoop``, so timeouts elapse
instantly (virtual time) whenever every task is blocked.  Tests use anyio for task groups,
sleeps and cancel scopes, which exist on both loops.  Synchronous tests that need a loop
take the ``runtime`` fixture.
"""

from __future__ import annotations

import inspect

import pytest

from pyweb import events
from pyweb.runtime.testing import RUNTIMES, run


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "runtime" in metafunc.fixturenames:
        metafunc.parametrize("runtime", RUNTIMES)
    elif inspect.iscoroutinefunction(metafunc.function):
        metafunc.fixturenames.append("runtime")
        metafunc.parametrize("runtime", RUNTIMES)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    fn = pyfuncitem.obj
    if not inspect.iscoroutinefunction(fn):
        return None
    params = inspect.signature(fn).parameters
    kwargs = {name: value for name, value in pyfuncitem.funcargs.items() if name in params}
    events.seed(12345)
    run(lambda: fn(**kwargs), pyfuncitem.callspec.params["runtime"])
    return True
