"""Pools of database handles, SMLserver §4, and why a request cannot deadlock on them.

"A database handle identifies a connection to an RDBMS and a pool is a set of database
handles. When the Web server is started, a configurable number of pools are created. At
any time, a database handle is owned by at most one script. Moreover, the database
handles owned by a script at any one time belong to different pools." (SMLserver §4)

Why several pools: with one pool of two handles, two requests that each hold a handle and
each ask for a second one (a ``fold`` inside a ``fold``) wait for each other forever. Here
a task's first handle comes from pool 0, a handle asked for while holding it from pool 1,
and so on: every task takes pools in the same increasing order, so no cycle of waiting
tasks can form (the classic lock-ordering argument). Nesting deeper than the number of
pools is a :class:`~pyweb.db.errors.NestingError`, at once, instead of a hang.

A pool here lives on the event loop (trio or asyncio, through :mod:`pyweb.runtime`): a
semaphore counting free handles and a list of idle
connections. Connections are opened lazily (a site whose database is down still starts,
and its other pages work) and checked before being lent: a broken one (lost, or busy after
a cancelled query) is closed and replaced, so a database restart heals by itself.
Waiting for a handle is bounded by a timeout; then :class:`~pyweb.db.errors.PoolTimeout`
(HTTP 503).

A loop's primitives (and an asyncio driver's connections) belong to that loop; pyweb runs
several (a notebook's server thread and a test's, a trio server and an asyncio one), so a
:class:`PoolSet` is made for each loop that uses the database (:class:`RunPools`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pyweb import runtime

from .driver import Connection, Driver
from .errors import PoolTimeout

__all__ = ["Pool", "PoolSet", "RunPools"]


class Pool:
    """One pool of ``size`` handles (connections) to one database."""

    def __init__(self, driver: Driver, index: int, size: int) -> None:
        self.driver = driver
        self.index = index
        self.size = size
        self._rt = rt = runtime.current()  # a pool lives on one loop (see RunPools)
        self._free = rt.Semaphore(size)
        self._idle: list[Connection] = []

    @property
    def in_use(self) -> int:
        """Handles lent out now."""
        return self.size - self._free.value

    @property
    def idle(self) -> int:
        """Open connections waiting in the pool."""
        return len(self._idle)

    async def acquire(self, timeout: float) -> Connection:
        """A live connection: an idle one, or a new one. PoolTimeout after ``timeout`` s."""
        rt = self._rt
        try:  # a free handle: no need for a trip through the scheduler (the query makes one)
            self._free.acquire_nowait()
        except rt.WouldBlock:
            if not await rt.acquire_within(self._free, timeout):
                raise PoolTimeout(
                    f"no handle of database pool {self.index} ({self.size} handles, all "
                    f"busy) became free within {timeout:g} s"
                ) from None
        try:
            while self._idle:
                conn = self._idle.pop()
                if conn.alive():
                    return conn
                conn.close()  # lost while idle (database restarted, backend killed)
            return await self.driver.connect()
        except BaseException:
            self._free.release()
            raise

    async def replace(self, conn: Connection) -> Connection:
        """Close a broken ``conn`` held by the caller and open a new one in its place.

        If that fails the caller still holds ``conn`` (closed, broken), and gives it back
        with :meth:`release` as usual, which frees its slot.
        """
        conn.close()
        return await self.driver.connect()

    def release(self, conn: Connection | None) -> None:
        """Give a handle back; a broken one is closed, never lent again."""
        if conn is not None:
            if conn.broken or not conn.alive():
                conn.close()
            else:
                self._idle.append(conn)
        self._free.release()

    def close(self) -> None:
        """Close the idle connections (lent ones are closed when given back broken)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class PoolSet:
    """The pools of one database on one event loop (one ``trio.run``, one asyncio loop)."""

    def __init__(self, driver: Driver, pools: int, handles: int) -> None:
        self.pools = [Pool(driver, i, handles) for i in range(pools)]
        self.schema_lock = runtime.current().Lock()

    def close(self) -> None:
        for pool in self.pools:
            pool.close()


class RunPools:
    """A :class:`PoolSet` for each event loop (a trio run, an asyncio loop), made on first
    use on that loop."""

    def __init__(self, make: Callable[[], PoolSet]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._runs: dict[object, PoolSet] = {}
        self._alive: dict[object, Callable[[object], bool]] = {}

    def current(self) -> PoolSet:
        rt = runtime.current()
        token = rt.loop_id()
        found = self._runs.get(token)
        if found is not None:
            return found
        with self._lock:
            self._sweep()
            found = self._runs[token] = self._make()
            self._alive[token] = rt.loop_alive
        rt.spawn_background(self._close_at_end, token)
        return found

    async def _close_at_end(self, token: object) -> None:
        """Close a loop's pools when that loop ends (its tasks are cancelled then), while
        it can still close its connections."""
        try:
            await runtime.current().sleep_forever()
        finally:
            with self._lock:
                pool_set = self._runs.pop(token, None)
                self._alive.pop(token, None)
            if pool_set is not None:
                pool_set.close()

    def _sweep(self) -> None:
        """Close the pools of loops that have ended."""
        for token in list(self._runs):
            if not self._alive[token](token):
                del self._alive[token]
                self._runs.pop(token).close()

    def close(self) -> None:
        with self._lock:
            runs, self._runs = self._runs, {}
            self._alive = {}
        for pool_set in runs.values():
            pool_set.close()

    def all(self) -> list[PoolSet]:
        with self._lock:
            return list(self._runs.values())
