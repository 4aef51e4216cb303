"""The MySQL/MariaDB driver: aiomysql, natively on asyncio, through a loop thread from trio.

Each handle owns one ``aiomysql`` connection (autocommit on, ``utf8mb4``), created and used
on one asyncio loop (:func:`pyweb.runtime.run_asyncio`): the server's own on asyncio, the
loop thread of :mod:`pyweb.runtime.bridge` from trio, where a task hands it a whole query
and gets every row back. Antiquotes
are bound as ``%s`` (aiomysql's paramstyle): the driver escapes each value for the
connection's character set, so user input never becomes SQL text.

Cancellation: aiomysql cannot stop a query on the server. When the request is cancelled
the asyncio task is cancelled, the connection is closed (its protocol state is
unknown: it may still be waiting for the query's answer) and marked broken, and a
``KILL QUERY <thread id>`` is sent from a fresh connection so the server stops working on
a result nobody will read (measured: without it the query runs to the end).

A lost connection (``KILL <id>``, a server restart) is noticed when the connection's
stream is at end of file or when a call fails with "Lost connection"/"server has gone
away": it is marked broken and replaced.

URL: ``mysql://user:password@host:port/database`` (``mariadb://`` also works).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiomysql
import pymysql

from pyweb import runtime

from .driver import Connection, Driver, Params, Url, split_statements
from .errors import DbUnavailable, SqlError

__all__ = ["MysqlDriver", "MysqlConnection"]

T = TypeVar("T")

# Client-side error codes meaning "the connection is gone" (CR_*), and the server's
# "connection was killed" (ER_CONNECTION_KILLED).
_LOST_CODES = {2003, 2006, 2013, 2055, 1927}


class MysqlConnection(Connection):
    def __init__(self, conn: aiomysql.Connection, driver: MysqlDriver) -> None:
        self._conn = conn
        self._driver = driver
        self._where = str(driver.url)
        self._loop = runtime.asyncio_loop()  # the loop the connection belongs to

    async def _on_loop(self, make: Callable[[], Awaitable[T]]) -> T:
        conn = self._conn
        try:
            return await make()
        except asyncio.CancelledError:
            self.broken = True
            thread_id = conn.server_thread_id[0] if conn.server_thread_id else None
            conn.close()
            if thread_id is not None:
                # Shielded: natively on asyncio the request's own cancel scope is still there.
                with runtime.get("asyncio").CancelScope(shield=True):
                    try:
                        await asyncio.wait_for(self._driver.kill_query(thread_id), 2.0)
                    except Exception:  # best effort: the connection is gone anyway
                        pass
            raise

    async def _run(self, sql: str, params: Params, make: Callable[[], Awaitable[T]]) -> T:
        if self.broken:
            raise DbUnavailable(f"mysql ({self._where}): connection closed", sql=sql)
        try:
            return await runtime.run_asyncio(self._on_loop(make))
        except pymysql.err.MySQLError as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if code in _LOST_CODES or self._conn.closed:
                self.broken = True
                raise DbUnavailable(
                    f"mysql ({self._where}): connection lost: {exc}", sql=sql
                ) from exc
            message = exc.args[1] if len(exc.args) > 1 else str(exc)
            raise SqlError(
                f"{message} [error {code}]" if code else str(message),
                sql=sql,
                params=params,
                database="mysql",
                driver_error=exc,
            ) from exc
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as exc:
            self.broken = True
            raise DbUnavailable(f"mysql ({self._where}): connection lost: {exc}", sql=sql) from exc

    async def query(self, sql: str, params: Params) -> tuple[list[str], list[tuple[Any, ...]]]:
        conn = self._conn

        async def run() -> tuple[list[str], list[tuple[Any, ...]]]:
            async with conn.cursor() as cur:
                await cur.execute(sql, params)
                rows = await cur.fetchall()
                columns = [d[0] for d in cur.description] if cur.description else []
            return columns, list(rows)

        return await self._run(sql, params, run)

    async def execute(self, sql: str, params: Params) -> int:
        conn = self._conn

        async def run() -> int:
            async with conn.cursor() as cur:
                return await cur.execute(sql, params)

        return await self._run(sql, params, run)

    async def script(self, text: str) -> None:
        conn = self._conn
        statements = split_statements(text)

        async def run() -> None:
            async with conn.cursor() as cur:
                for statement in statements:
                    await cur.execute(statement)

        await self._run(text, None, run)

    async def begin(self) -> None:
        await self._run("BEGIN", None, self._conn.begin)

    async def commit(self) -> None:
        await self._run("COMMIT", None, self._conn.commit)

    async def rollback(self) -> None:
        await self._run("ROLLBACK", None, self._conn.rollback)

    def alive(self) -> bool:
        if self.broken or self._conn.closed:
            return False
        reader = getattr(self._conn, "_reader", None)
        return reader is None or not reader.at_eof()

    def close(self) -> None:
        self.broken = True
        conn = self._conn

        async def close() -> None:
            conn.close()

        if runtime.running_asyncio_loop() is self._loop:
            conn.close()  # on its own loop: closing is synchronous
        else:
            runtime.submit_asyncio(self._loop, close())


def _escaper(escape: Callable[[Any], str]) -> Callable[[Any], str]:
    """aiomysql's ``escape``, with ``bytes`` written as a hex literal: aiomysql 0.3.2 calls
    a function that PyMySQL 1.2 no longer has for them (``'str' object is not callable``)."""

    def escape_value(value: Any) -> str:
        if isinstance(value, bytes | bytearray | memoryview):
            return "_binary X'" + bytes(value).hex() + "'"
        return escape(value)

    return escape_value


class MysqlDriver(Driver):
    """``mysql://user:password@host:port/database``."""

    name = "mysql"
    paramstyle = "format"

    def __init__(self, url: Url, *, connect_timeout: float = 5.0) -> None:
        self.url = url
        self.connect_timeout = connect_timeout

    async def _open(self) -> aiomysql.Connection:
        url = self.url
        return await aiomysql.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 3306,
            user=url.user or "root",
            password=url.password or "",
            db=url.database,
            autocommit=True,
            charset="utf8mb4",
            connect_timeout=self.connect_timeout,
        )

    async def kill_query(self, thread_id: int) -> None:
        """On the loop: stop the statement running on connection ``thread_id``."""
        conn = await self._open()
        try:
            async with conn.cursor() as cur:
                await cur.execute("KILL QUERY %s", (thread_id,))
        except pymysql.err.MySQLError:
            pass  # the query (or the connection) had finished already
        finally:
            conn.close()

    async def connect(self) -> Connection:
        try:
            conn = await runtime.run_asyncio(self._open())
            conn.escape = _escaper(conn.escape)
        except (TimeoutError, OSError, pymysql.err.MySQLError) as exc:
            raise DbUnavailable(f"cannot connect to {self.url}: {exc}") from exc
        return MysqlConnection(conn, self)
