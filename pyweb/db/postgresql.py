"""The PostgreSQL driver: asyncpg, natively on asyncio, through a loop thread from trio.

Each handle owns one ``asyncpg.Connection``, created on an asyncio loop and used only
there (:func:`pyweb.runtime.run_asyncio`): on an asyncio server that is the server's own
loop, with no thread in between; from trio it is the loop thread of
:mod:`pyweb.runtime.bridge`, and a trio task hands it a whole query
(``fetch``/``execute``) and gets all the rows back: one crossing per query. Antiquotes are bound as ``$1, $2, ...`` (asyncpg's
paramstyle), so values travel apart from the SQL text in PostgreSQL's extended protocol.

Cancellation is PostgreSQL's own: when the request is cancelled, the asyncio task running
the query is cancelled (natively, or by the bridge), asyncpg sends a cancel request to the server (which stops the query) and
waits, shielded, for the server to acknowledge it, so the connection is idle again before
the pool sees it. A connection asyncpg had to close is marked broken.

A lost connection (``pg_terminate_backend``, a server restart) shows up as a closed
asyncpg connection: the pool replaces it before lending it again, and a read that was
already on it is run once more on a fresh connection (:mod:`pyweb.db`).

URL: ``postgresql://user:password@host:port/database`` (``postgres://`` also works); options
are PostgreSQL settings for the session: ``...?search_path=guestbook`` uses that schema.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

import asyncpg

from pyweb import runtime

from .driver import Connection, Driver, Params, Url
from .errors import DbUnavailable, SqlError

__all__ = ["PostgresDriver", "PostgresConnection"]

T = TypeVar("T")

_LOST = (asyncpg.exceptions.ConnectionDoesNotExistError, ConnectionError, OSError)

# SQLSTATE classes that say the server or the connection is going away, whatever state the
# socket is in yet: 08 connection exception, 57P01-57P05 admin/crash shutdown, cannot
# connect now, idle session timeout... (PostgreSQL Appendix A).
_GOING_AWAY = ("08", "57P")


def _going_away(exc: BaseException) -> bool:
    sqlstate = getattr(exc, "sqlstate", None) or ""
    return sqlstate.startswith(_GOING_AWAY)


class PostgresConnection(Connection):
    def __init__(self, conn: asyncpg.Connection, where: str) -> None:
        self._conn = conn
        self._where = where
        self._loop = runtime.asyncio_loop()  # the loop the connection belongs to
        # On an asyncio server the connection lives on the server's own loop (a pool is
        # made per loop): the query is awaited right here, with no runtime.run_asyncio
        # layer in between (each coroutine layer is about 2k instructions per query).
        self._native = runtime.current().name == "asyncio"

    async def _on_loop(self, call: Awaitable[T]) -> T:
        """Runs on the loop: the call, and after a cancellation the wait for the server."""
        conn = self._conn
        try:
            return await call
        except asyncio.CancelledError:
            # asyncpg has sent a cancel request; wait (bounded) until it is acknowledged,
            # shielded: natively on asyncio the request's own cancel scope is still there.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 2.0
            with runtime.get("asyncio").CancelScope(shield=True):
                while conn._cancellations and loop.time() < deadline:
                    await asyncio.sleep(0.005)
            if conn._cancellations or conn.is_closed():
                self.broken = True
                conn.terminate()
            raise

    async def _run(self, sql: str, params: Params, call: Coroutine[Any, Any, T]) -> T:
        """Run ``call`` (a coroutine of the asyncpg connection, not started yet) on the
        connection's loop; asyncpg's errors become pyweb.db's."""
        if self.broken:
            call.close()  # never started: no "coroutine was never awaited" warning
            raise DbUnavailable(f"postgresql ({self._where}): connection closed", sql=sql)
        try:
            if self._native:
                return await self._on_loop(call)
            return await runtime.run_asyncio(self._on_loop(call))
        except asyncpg.PostgresError as exc:
            if self._conn.is_closed() or _going_away(exc):  # "terminating connection due to
                self.broken = True  # administrator command": the server is shutting down
                raise DbUnavailable(
                    f"postgresql ({self._where}): connection lost: {exc}", sql=sql
                ) from exc
            message = str(exc)
            detail = getattr(exc, "detail", None)
            if detail:
                message += f" ({detail})"
            raise SqlError(
                f"{message} [SQLSTATE {exc.sqlstate}]",
                sql=sql,
                params=params,
                database="postgresql",
                driver_error=exc,
            ) from exc
        except asyncpg.exceptions.InternalClientError as exc:
            # The protocol met a message it did not expect: what a connection cut while
            # PostgreSQL shuts down produces. The handle cannot be trusted again: broken, the
            # pool closes it when it comes back and opens a fresh one for the next request.
            self.broken = True
            raise DbUnavailable(
                f"postgresql ({self._where}): connection lost: {exc}", sql=sql
            ) from exc
        except (asyncpg.InterfaceError, *_LOST) as exc:
            if self._conn.is_closed() or isinstance(exc, _LOST):
                self.broken = True
                raise DbUnavailable(
                    f"postgresql ({self._where}): connection lost: {exc}", sql=sql
                ) from exc
            raise SqlError(
                str(exc), sql=sql, params=params, database="postgresql", driver_error=exc
            ) from exc
        except (SqlError, DbUnavailable):
            raise
        except Exception as exc:
            # Anything else from inside the driver (a protocol state it did not expect):
            # the handle cannot be trusted again. If the server has closed the connection
            # it is an outage (503), else a bug worth a 500 with its traceback.
            self.broken = True
            if self._conn.is_closed():
                raise DbUnavailable(
                    f"postgresql ({self._where}): connection lost: {exc!r}", sql=sql
                ) from exc
            raise

    async def query(self, sql: str, params: Params) -> tuple[list[str], list[tuple[Any, ...]]]:
        records = await self._run(sql, params, self._conn.fetch(sql, *(params or ())))
        # A Record is already an immutable sequence of the values: rows index it as they
        # would a tuple, so it is not copied into one (500 rows, 500 copies).
        return (list(records[0].keys()) if records else []), records

    async def execute(self, sql: str, params: Params) -> int:
        # "INSERT 0 3", "UPDATE 2", "CREATE TABLE"
        status = await self._run(sql, params, self._conn.execute(sql, *(params or ())))
        last = status.rsplit(" ", 1)[-1]
        return int(last) if last.isdigit() else -1

    async def script(self, text: str) -> None:
        await self._run(text, None, self._conn.execute(text))  # simple protocol: many ok

    async def begin(self) -> None:
        await self.execute("BEGIN", None)

    async def commit(self) -> None:
        await self.execute("COMMIT", None)

    async def rollback(self) -> None:
        await self.execute("ROLLBACK", None)

    def alive(self) -> bool:
        return not self.broken and not self._conn.is_closed()

    def close(self) -> None:
        self.broken = True
        conn = self._conn

        async def close() -> None:
            try:
                await asyncio.wait_for(conn.close(), 2.0)
            except Exception:
                conn.terminate()

        if runtime.running_asyncio_loop() is self._loop:
            conn.terminate()  # on its own loop, maybe as the loop ends: no round trip
        else:
            runtime.submit_asyncio(self._loop, close())


class PostgresDriver(Driver):
    """``postgresql://user:password@host:port/database``."""

    name = "postgresql"
    paramstyle = "numeric_dollar"

    def __init__(self, url: Url, *, connect_timeout: float = 5.0) -> None:
        self.url = url
        self.connect_timeout = connect_timeout

    async def connect(self) -> Connection:
        url = self.url
        try:
            conn = await runtime.run_asyncio(
                asyncpg.connect(
                    host=url.host,
                    port=url.port or 5432,
                    user=url.user,
                    password=url.password,
                    database=url.database,
                    timeout=self.connect_timeout,
                    # URL options are server settings: ?search_path=myschema
                    server_settings=dict(url.options) or None,
                )
            )
        except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise DbUnavailable(f"cannot connect to {url}: {exc}") from exc
        return PostgresConnection(conn, str(url))
