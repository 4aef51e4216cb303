"""A SQLite query whose request is cancelled before its worker thread begins: nothing ran,
so there is nothing to interrupt and nothing to wait for (before, the request waited the
whole five-second grace for a thread that never started, and the handle was thrown away)."""

from __future__ import annotations

import time

import pytest

from pyweb import db, runtime
from pyweb.db import sqlite
from pyweb.runtime.testing import RUNTIMES
from pyweb.runtime.testing import run as run_on


@pytest.mark.parametrize("loop", RUNTIMES)
def test_a_query_cancelled_before_it_starts_costs_nothing(loop: str, tmp_path) -> None:
    d = db.Database(f"sqlite:///{tmp_path}/c.sqlite3", pools=1, handles=1, timeout=30)
    waited: list[float] = []
    pools: list[dict] = []

    async def main() -> None:
        assert await d.one_field("select 1") == 1  # the handle is open and idle
        rt = runtime.current()
        with rt.CancelScope() as scope:
            scope.cancel()  # cancelled before the query is asked for
            started = time.monotonic()
            try:
                await d.one_field("select 2")
            finally:
                waited.append(time.monotonic() - started)
        assert await d.one_field("select 3") == 3  # the same handle still serves
        pools.extend(d.stats())

    try:
        run_on(main, loop, virtual_time=False)
    finally:
        d.close()
    assert waited[0] < sqlite.CANCEL_GRACE / 2, f"waited {waited[0]:.2f} s for nothing"
    (pool,) = pools
    assert pool["in_use"] == 0 and pool["idle"] == 1, pool
