"""``Database``: one database (a URL) and its pools of handles (SMLserver §4, ``NS_DB``).

The class behind the module functions of :mod:`pyweb.db` (``db.fold``, ``db.dml``, ...,
which call the current database's methods). Its rows are :class:`Row` objects; its handles
come from :mod:`pyweb.db.pools` and its drivers from :mod:`pyweb.db.sqlite`,
:mod:`pyweb.db.postgresql` and :mod:`pyweb.db.mysql`.
"""

from __future__ import annotations

import builtins
import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from types import GeneratorType
from typing import Any, TypeVar

from pyweb import runtime
from pyweb.extras import require
from pyweb.outage import Outage
from pyweb.quot import Quot

from .driver import Connection, Driver, Url, parse_url
from .errors import DbError, DbUnavailable, NestingError, RowCountError
from .pools import Pool, PoolSet, RunPools
from .writes import check_write

__all__ = ["Database", "Row", "Query", "Folder", "CANCEL_GRACE", "make_driver"]

A = TypeVar("A")
Query = Quot | str
"""A query: a Quot (antiquotes bound as parameters) or a str with no values in it."""
Folder = Callable[["Row", A], A | Awaitable[A]]

_list = builtins.list

CANCEL_GRACE = 5.0
"""Seconds a rollback gets after a cancellation before the connection is dropped instead."""


# -- rows -------------------------------------------------------------------------------


class Row(Mapping[str, Any]):
    """One row: column name -> value (the paper's ``string -> string`` function, typed).

    ``row["email"]`` and ``row("email")`` give the value; a missing column raises KeyError
    listing the columns there are. Values have the database's types: ``int``, ``float``,
    ``str``, ``bytes``, ``None`` for NULL, and ``Decimal``/``datetime`` where the column is
    one. :attr:`values_tuple` gives the values in column order.
    """

    __slots__ = ("_index", "_values")

    def __init__(self, index: Mapping[str, int], values: tuple[Any, ...]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[self._index[name]]
        except KeyError:
            raise KeyError(
                f"no column {name!r} in this row; its columns are {_list(self._index)}"
            ) from None

    def __call__(self, name: str) -> Any:
        """The paper's ``f "email"``."""
        return self[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    @property
    def values_tuple(self) -> tuple[Any, ...]:
        """The values, in the order of the columns."""
        return tuple(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(self)!r})"


_new_row = object.__new__


def _rows(columns: _list[str], rows: _list[tuple[Any, ...]]) -> _list[Row]:
    """The rows as :class:`Row` objects sharing one index (made as the fold makes them,
    without a call to ``Row.__init__`` each)."""
    index = {name: i for i, name in enumerate(columns)}
    out = []
    for values in rows:
        row = _new_row(Row)
        row._index = index
        row._values = values
        out.append(row)
    return out


async def _fold_rows(f: Folder[A], acc: A, columns: _list[str], rows: Iterable[Any]) -> A:
    """``acc = f(row, acc)`` for each row, awaiting ``acc`` when ``f`` gave an awaitable.

    Per row this is what a page pays besides its own ``f`` (a 500-row page calls it 500
    times), so it is kept short: rows are made without a call to ``Row.__init__``, and
    whether a result is awaitable is asked once per type of result (it depends on the type
    alone, but for generators, which ``types.coroutine`` can make awaitable one by one).
    """
    index = {name: i for i, name in enumerate(columns)}
    plain: type | None = None  # a type of result known not to be awaitable
    for values in rows:
        row = _new_row(Row)
        row._index = index
        row._values = values
        acc = f(row, acc)  # type: ignore[assignment]
        if type(acc) is not plain:
            if inspect.isawaitable(acc):
                acc = await acc
            elif type(acc) is not GeneratorType:
                plain = type(acc)
    return acc


# -- drivers ---------------------------------------------------------------------------------


def make_driver(url: Url) -> Driver:
    """The driver for a parsed URL (imported only when used: asyncpg and aiomysql are
    optional, and a missing one is named with the extra that installs it)."""
    if url.scheme == "sqlite":
        from .sqlite import SqliteDriver

        return SqliteDriver(url)
    if url.scheme == "postgresql":
        require("asyncpg", "postgresql", "a postgresql:// database")
        from .postgresql import PostgresDriver

        return PostgresDriver(url)
    require("aiomysql", "mysql", "a mysql:// database")
    from .mysql import MysqlDriver

    return MysqlDriver(url)


# -- a database -----------------------------------------------------------------------------


_log = logging.getLogger("pyweb.db")


class _Lease:
    """A handle lent to a task: the pool it came from (None inside a transaction) and the
    token that gives back the task's place in the pools' order."""

    __slots__ = ("conn", "pool", "token")

    def __init__(self, conn: Connection, pool: Pool | None, token: object) -> None:
        self.conn = conn
        self.pool = pool
        self.token = token


class Database:
    """One database (a URL) with ``pools`` pools of ``handles`` handles each.

    The module functions (:func:`fold`, :func:`dml`, ...) call the methods of the current
    :func:`database`; use a ``Database`` directly to talk to two databases at once.
    """

    def __init__(
        self,
        url: str,
        *,
        pools: int = 2,
        handles: int = 4,
        timeout: float = 5.0,
        schema: str | os.PathLike[str] | None = None,
    ) -> None:
        for name, value in (("pools", pools), ("handles", handles)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"pyweb.db: {name} must be a whole number >= 1, not {value!r}")
        if not isinstance(timeout, int | float) or not timeout > 0:
            raise ValueError(
                f"pyweb.db: timeout must be a positive number of seconds, not {timeout!r}"
            )
        self.url = parse_url(url)
        self.driver = make_driver(self.url)
        self.pools = pools
        self.handles = handles
        self.timeout = float(timeout)
        self.schema = os.fspath(schema) if schema is not None else None
        self._schema_done = self.schema is None
        self._runs = RunPools(lambda: PoolSet(self.driver, pools, handles))
        self.outage = Outage(f"database {self.url}", _log)
        """Logs an outage once when it starts and once when it ends (pyweb.outage)."""
        # The pool indices this task holds, and its transaction's handle (with its task).
        self._held: ContextVar[tuple[int, ...]] = ContextVar("pyweb_db_held", default=())
        self._tx: ContextVar[tuple[Connection, object] | None] = ContextVar(
            "pyweb_db_tx", default=None
        )

    def __repr__(self) -> str:
        return f"Database({str(self.url)!r}, pools={self.pools}, handles={self.handles})"

    @property
    def dialect(self) -> str:
        """``"sqlite"``, ``"postgresql"`` or ``"mysql"``."""
        return self.driver.name

    # -- handles ---------------------------------------------------------------------------

    async def _ensure_schema(self, pool_set: PoolSet) -> None:
        async with pool_set.schema_lock:
            if self._schema_done or self.schema is None:
                return
            with open(self.schema, encoding="utf-8") as f:
                text = f.read()
            pool = pool_set.pools[0]
            conn = await pool.acquire(self.timeout)
            try:
                await conn.script(text)
            finally:
                pool.release(conn)
            self._schema_done = True

    async def _lend(self) -> _Lease:
        """Lend this task a handle: its transaction's, or one from its next pool. Give it
        back with :meth:`_end`, whatever happens (``try``/``except BaseException``).

        The hot methods (:meth:`fold`, :meth:`list`, :meth:`dml`, ...) call these two
        around their query instead of ``async with`` an ``asynccontextmanager``: the
        context manager's object, its generator and the ``StopAsyncIteration`` that ends
        it cost about a third of pyweb's own work per query (docs/performance.md,
        "Database pages").
        """
        tx = self._tx.get()
        if tx is not None:
            conn, task = tx
            if task is runtime.current().current_task():
                return _Lease(conn, None, None)
        held = self._held.get()
        index = held[-1] + 1 if held else 0
        if index >= self.pools:
            raise NestingError(
                f"this task already holds a handle from each of the {self.pools} database "
                f"pools: nesting database calls {index + 1} deep (a fold inside a fold ...) "
                f"needs configure(..., pools={index + 1})"
            )
        pool_set = self._runs.current()
        if not self._schema_done:
            await self._ensure_schema(pool_set)
        pool = pool_set.pools[index]
        try:
            conn = await pool.acquire(self.timeout)
        except DbUnavailable as exc:
            self._unavailable(exc)
            raise
        return _Lease(conn, pool, self._held.set(held + (index,)))

    def _end(self, lease: _Lease, exc: BaseException | None) -> None:
        """Give back a handle from :meth:`_lend`; ``exc``: what the work with it raised."""
        pool = lease.pool
        if pool is None:  # the transaction's handle: the transaction gives it back
            return
        if isinstance(exc, DbUnavailable):
            self._unavailable(exc)
        self._held.reset(lease.token)  # type: ignore[arg-type]
        pool.release(lease.conn)
        if exc is None:
            self.outage.recovered()  # a plain attribute test while the database is up

    @asynccontextmanager
    async def _lease(self) -> AsyncIterator[_Lease]:
        """:meth:`_lend` and :meth:`_end` as a context manager (for the rarer calls)."""
        lease = await self._lend()
        try:
            yield lease
        except BaseException as exc:
            self._end(lease, exc)
            raise
        self._end(lease, None)

    def _unavailable(self, exc: DbUnavailable) -> None:
        # An outage (lost or refused connections) is logged once, not once per request:
        # the site logs no traceback for these (DbUnavailable.outage). A full pool is load,
        # not an outage: it is the site's 503 and error log as before.
        if exc.outage:
            self.outage.failed(exc)

    async def _query(self, lease: _Lease, sql: str, params: Any) -> tuple[_list[str], _list[Any]]:
        """Run a read; once more on a fresh connection if the first one was found lost."""
        try:
            return await lease.conn.query(sql, params)
        except DbUnavailable:
            if lease.pool is None or not lease.conn.broken:
                raise
            lease.conn = await lease.pool.replace(lease.conn)
            return await lease.conn.query(sql, params)

    def _sql(self, q: Query) -> tuple[str, Any]:
        if isinstance(q, Quot):
            return q.to_sql(self.driver.paramstyle)
        if isinstance(q, str):
            return q, None
        raise TypeError(
            f"a query is a Quot (pyweb.qq('... {{value}} ...')) or a str, "
            f"not {type(q).__name__}: {q!r}"
        )

    # -- NS_DB ------------------------------------------------------------------------------

    async def dml(self, q: Query) -> int:
        """Run an insert/update/delete (or DDL); the number of rows changed (-1 if unknown).
        In a page answering a GET: refused in development mode (:mod:`pyweb.db.writes`)."""
        sql, params = self._sql(q)
        check_write(sql)
        lease = await self._lend()
        try:
            changed = await lease.conn.execute(sql, params)
        except BaseException as exc:
            self._end(lease, exc)
            raise
        self._end(lease, None)
        return changed

    async def fold(self, f: Folder[A], acc: A, q: Query) -> A:
        """``acc = f(row, acc)`` for each row, first row first; the final ``acc``.

        The rows are fetched in one go; the handle stays this task's until the fold ends,
        so a query in ``f`` (an ``async def`` f) takes its handle from the next pool.
        """
        sql, params = self._sql(q)
        lease = await self._lend()
        try:
            columns, rows = await self._query(lease, sql, params)
            acc = await _fold_rows(f, acc, columns, rows)
        except BaseException as exc:
            self._end(lease, exc)
            raise
        self._end(lease, None)
        return acc

    async def foldr(self, f: Folder[A], acc: A, q: Query) -> A:
        """The paper's ``Db.foldr``: like :meth:`fold`, but the last row first, so
        ``foldr(lambda row, acc: [row] + acc, [], q)`` keeps the rows in order."""
        sql, params = self._sql(q)
        lease = await self._lend()
        try:
            columns, rows = await self._query(lease, sql, params)
            acc = await _fold_rows(f, acc, columns, reversed(rows))
        except BaseException as exc:
            self._end(lease, exc)
            raise
        self._end(lease, None)
        return acc

    async def list(self, q: Query) -> _list[Row]:
        """Every row, in order."""
        sql, params = self._sql(q)
        lease = await self._lend()
        try:
            columns, rows = await self._query(lease, sql, params)
        except BaseException as exc:
            self._end(lease, exc)
            raise
        self._end(lease, None)
        return _rows(columns, rows)

    async def one_row(self, q: Query) -> Row:
        """The one row; RowCountError if there are none or several."""
        rows = await self.list(q)
        if len(rows) != 1:
            raise RowCountError(f"expected one row, got {len(rows)}", sql=self._sql(q)[0])
        return rows[0]

    async def zero_or_one_row(self, q: Query) -> Row | None:
        """The row, or None; RowCountError if there are several."""
        rows = await self.list(q)
        if len(rows) > 1:
            raise RowCountError(f"expected at most one row, got {len(rows)}", sql=self._sql(q)[0])
        return rows[0] if rows else None

    async def one_field(self, q: Query) -> Any:
        """The value of the one column of the one row (``select count(*) ...``)."""
        row = await self.one_row(q)
        values = row.values_tuple
        if len(values) != 1:
            raise RowCountError(
                f"expected one column, got {len(values)}: {_list(row)}", sql=self._sql(q)[0]
            )
        return values[0]

    async def exists(self, q: Query) -> bool:
        """Whether the query gives at least one row."""
        return bool(await self.list(q))

    async def script(self, text: str) -> None:
        """Run several ``;``-separated statements with no parameters (a schema file)."""
        if not isinstance(text, str):
            raise TypeError(f"script takes the text of SQL statements, not {text!r}")
        async with self._lease() as lease:
            await lease.conn.script(text)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Database]:
        """``async with db.transaction():`` the calls inside run on one handle, in one
        transaction: committed when the block ends normally, rolled back on any exception,
        cancellation included (the rollback is shielded from the cancellation)."""
        tx = self._tx.get()
        task = runtime.current().current_task()
        if tx is not None and tx[1] is task:
            raise DbError("already in a transaction: pyweb.db does not nest transactions")
        async with self._lease() as lease:
            conn = lease.conn
            await conn.begin()
            token = self._tx.set((conn, task))
            try:
                yield self
            except BaseException:
                self._tx.reset(token)
                await _rollback(conn)
                raise
            self._tx.reset(token)
            try:
                await conn.commit()
            except BaseException:
                await _rollback(conn)
                raise

    def close(self) -> None:
        """Close every idle connection (lent ones are closed when given back)."""
        self._runs.close()

    def pool_stats(self) -> _list[dict[str, int]]:
        """Per pool, over every loop that opened pools (none made by asking):
        ``{"pool", "size", "in_use", "idle"}`` (``/_pyweb/metrics``)."""
        return [
            {"pool": p.index, "size": p.size, "in_use": p.in_use, "idle": p.idle}
            for pool_set in self._runs.all()
            for p in pool_set.pools
        ]

    def stats(self) -> _list[dict[str, int]]:
        """Per pool of the current run: ``{"size", "in_use", "idle"}`` (for tests, status)."""
        return [
            {"size": p.size, "in_use": p.in_use, "idle": p.idle} for p in self._runs.current().pools
        ]


async def _rollback(conn: Connection) -> None:
    rt = runtime.current()
    with rt.CancelScope(shield=True):
        with rt.move_on_after(CANCEL_GRACE) as scope:
            try:
                if not conn.broken:
                    await conn.rollback()
            except (DbError, OSError):
                conn.broken = True  # closing it rolls back on the server
        if scope.cancelled_caught:
            conn.broken = True
