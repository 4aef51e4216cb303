"""Run ``async def`` tests of this directory under trio with a mock clock.

A tiny stand-in for pytest-trio: each coroutine test runs in its own
``trio.run`` with ``MockClock(autojump_threshold=0)``, so timeouts elapse
instantly (virtual time) whenever every task is blocked.
"""

from __future__ import annotations

import inspect

import pytest
import trio
import trio.testing

from pyweb import events


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    fn = pyfuncitem.obj
    if not inspect.iscoroutinefunction(fn):
        return None
    params = inspect.signature(fn).parameters
    kwargs = {name: value for name, value in pyfuncitem.funcargs.items() if name in params}
    events.seed(12345)
    trio.run(lambda: fn(**kwargs), clock=trio.testing.MockClock(autojump_threshold=0))
    return True
