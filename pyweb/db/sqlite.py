"""The SQLite driver: stdlib ``sqlite3`` in worker threads (SMLserver §4).

SQLite is pyweb's embedded default: a file in the site's ``data/`` directory, created on
first run, nothing to install. ``sqlite3`` blocks, so each query runs in a worker thread
(:func:`pyweb.runtime.to_thread`, on trio or asyncio) and the event loop keeps serving
other requests meanwhile. Calling it directly from the loop's task is 5-16x faster for tiny
queries, but one slow query then freezes the whole server and cannot be cancelled
(measured: a 13.4 s stall).

* Every connection is opened in WAL mode, so readers do not wait for a writer, with a busy
  timeout, so a writer waits for another writer instead of failing at once.
* A cancelled request (client gone, timeout) calls ``Connection.interrupt()``, which makes
  the running statement fail with "interrupted", and waits (shielded, bounded) for the
  worker thread to let go of the connection; a connection whose thread does not let go in
  time is marked broken and never reused.
* Transactions start with ``BEGIN IMMEDIATE``: the write lock is taken at the start, so two
  transactions that both read then write queue up instead of one failing with "database is
  locked" when it tries to upgrade its read lock.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pyweb import runtime

from .driver import Connection, Driver, Params, Url, shorten_switch_interval
from .errors import DbUnavailable, SqlError

__all__ = ["SqliteDriver", "SqliteConnection"]

T = TypeVar("T")

CANCEL_GRACE = 5.0
"""Seconds a cancelled query's worker thread gets to let go of its connection."""

_memory_ids = itertools.count(1)


class _NeverRan(Exception):
    """Raised in a worker thread whose request was cancelled before the thread began."""


def _unavailable(message: str) -> bool:
    """Errors that say "not now" rather than "wrong SQL"."""
    return any(
        text in message
        for text in ("database is locked", "unable to open", "disk I/O", "readonly database")
    )


class SqliteConnection(Connection):
    def __init__(self, conn: sqlite3.Connection, where: str) -> None:
        self._conn = conn
        self._where = where
        self._busy = False
        self._close_when_done = False

    def _wrap(self, exc: sqlite3.Error, sql: str, params: Params) -> Exception:
        message = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and _unavailable(message):
            return DbUnavailable(f"sqlite ({self._where}): {message}", sql=sql)
        return SqlError(message, sql=sql, params=params, database="sqlite", driver_error=exc)

    async def _run(self, sql: str, params: Params, fn: Callable[[], T]) -> T:
        if self.broken:
            raise DbUnavailable("sqlite: this connection is closed", sql=sql)
        done = threading.Event()
        # Whether the worker thread began the statement, or never will: a request cancelled
        # before its thread started (trio checks for cancellation before it hands the call
        # over) has nothing to interrupt and nothing to wait for.
        lock = threading.Lock()
        began = gave_up = False

        def work() -> T:
            nonlocal began
            with lock:
                if gave_up:  # touch nothing: the connection may serve another request now
                    raise _NeverRan
                began = True
            try:
                return fn()
            finally:
                self._busy = False
                if self._close_when_done:
                    self._conn.close()
                done.set()

        self._busy = True
        rt = runtime.current()
        try:
            return await rt.to_thread(work, abandon_on_cancel=True)
        except rt.Cancelled:
            with lock:
                gave_up = not began
            if gave_up:
                self._busy = False
                raise
            # The worker still runs the statement: stop it, then wait for the thread so
            # that the connection is idle before anyone else gets it.
            self._conn.interrupt()
            with rt.CancelScope(shield=True), rt.move_on_after(CANCEL_GRACE):
                while not done.is_set():
                    await rt.sleep(0.002)
            if not done.is_set():
                self.broken = True
            raise
        except sqlite3.Error as exc:
            raise self._wrap(exc, sql, params) from exc

    async def query(self, sql: str, params: Params) -> tuple[list[str], list[tuple[Any, ...]]]:
        conn = self._conn

        def run() -> tuple[list[str], list[tuple[Any, ...]]]:
            cursor = conn.execute(sql, params or ())
            rows = cursor.fetchall()
            columns = [d[0] for d in cursor.description] if cursor.description else []
            return columns, rows

        return await self._run(sql, params, run)

    async def execute(self, sql: str, params: Params) -> int:
        conn = self._conn
        return await self._run(sql, params, lambda: conn.execute(sql, params or ()).rowcount)

    async def script(self, text: str) -> None:
        conn = self._conn
        await self._run(text, None, lambda: conn.executescript(text))

    async def begin(self) -> None:
        await self.execute("BEGIN IMMEDIATE", None)

    async def commit(self) -> None:
        await self.execute("COMMIT", None)

    async def rollback(self) -> None:
        conn = self._conn

        def run() -> None:
            if conn.in_transaction:  # an interrupted statement may have rolled back already
                conn.execute("ROLLBACK")

        await self._run("ROLLBACK", None, run)

    def close(self) -> None:
        self.broken = True
        if self._busy:  # a worker still uses it: the worker closes it when it is done
            self._close_when_done = True
            return
        try:
            self._conn.close()
        except sqlite3.Error:
            pass


class SqliteDriver(Driver):
    """``sqlite:///path/to/file.sqlite3`` (the directory is created if missing)."""

    name = "sqlite"
    paramstyle = "qmark"

    def __init__(self, url: Url, *, busy_timeout: float = 5.0) -> None:
        self.url = url
        self.busy_timeout = busy_timeout
        self._open_lock = threading.Lock()
        if url.database == ":memory:":
            # Every handle of every pool must see the same database: a named shared-cache
            # in-memory database, alive while one connection is open.
            self._target = f"file:pyweb-memory-{next(_memory_ids)}?mode=memory&cache=shared"
            self._uri = True
        else:
            self._target = url.database
            self._uri = False

    def _open(self) -> sqlite3.Connection:
        if not self._uri:
            directory = os.path.dirname(os.path.abspath(self._target))
            os.makedirs(directory, exist_ok=True)
        conn = sqlite3.connect(
            self._target,
            timeout=self.busy_timeout,
            isolation_level=None,  # autocommit; transactions are explicit BEGIN ... COMMIT
            check_same_thread=False,  # each query runs in some worker thread
            uri=self._uri,
        )
        if not self._uri:
            # WAL is a property of the file: set once. Switching needs a lock that SQLite
            # does not wait for, so connections opened at once (found by
            # tests/db/test_pool_property.py) take turns here.
            with self._open_lock:
                (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
                if mode != "wal":
                    conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # durable at each WAL checkpoint
        return conn

    async def connect(self) -> Connection:
        shorten_switch_interval()
        try:
            conn = await runtime.to_thread(self._open)
        except (sqlite3.Error, OSError) as exc:
            raise DbUnavailable(
                f"cannot open SQLite database {self.url.database!r}: {exc}"
            ) from exc
        return SqliteConnection(conn, self.url.database)
