"""pyweb.db: SMLserver's database interface (``NS_DB``, §4) over pools of handles.

The paper's signature and pyweb's functions::

    val dml   : quot -> unit                          await db.dml(q)            -> rows changed
    val foldr : ((string->string)*'a->'a)->'a->quot->'a   await db.foldr(f, acc, q)
                                                      await db.fold(f, acc, q)   (first row first)
    val qq    : string -> string                      db.qq(s)
    val qqq   : string -> string                      db.qqq(s)

and ``list``, ``one_row``, ``zero_or_one_row``, ``one_field``, ``exists``, ``transaction()``.
A query is a :class:`~pyweb.quot.Quot` (``pyweb.qq("select ... where email = {email}")``):
its text is the SQL and every antiquote becomes a *bound parameter* of the driver, so user
input never becomes SQL text (§8 point 3 asks for typed SQL; bound parameters at least make
injection impossible by construction). A plain ``str`` is accepted for a statement with no
values in it; a ``str`` built by concatenation cannot be told apart from a literal, so
nothing can protect it (docs/db.md).

``f(row, acc)`` gets a :class:`Row`, a read-only mapping from column names to values of the
database's types (``row["email"]``, or ``row("email")`` as in the paper). ``f`` may be an
``async def``, so it can itself query the database: that nested query takes its handle from
the next pool (:mod:`pyweb.db.pools`), and two requests can never deadlock.

Which database: :func:`configure` (``pyweb serve --db URL`` calls it), else, inside a page,
the site's default ``sqlite:///SITE/data/pyweb.sqlite3`` with the site's ``schema.sql`` run
on first use; else the ``PYWEB_DB`` environment variable. Drivers: :mod:`pyweb.db.sqlite`
(stdlib sqlite3 in worker threads), :mod:`pyweb.db.postgresql` (asyncpg) and
:mod:`pyweb.db.mysql` (aiomysql): natively on an asyncio loop, and from trio through an
asyncio loop in a thread of its own (:mod:`pyweb.runtime.bridge`). The loop is reached
only through :mod:`pyweb.runtime`, so everything here works in a trio server, an asyncio
one, and outside any server (``trio.run``, ``asyncio.run``).

This module is the public face: the paper's functions on the current database, and
:func:`configure`. The class behind them, :class:`Database` (pools, leases, transactions),
is in :mod:`pyweb.db.database`.
"""

from __future__ import annotations

import builtins
import os
import sys
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from .database import CANCEL_GRACE, Database, Folder, Query, Row, make_driver
from .driver import parse_url
from .errors import DbError, DbUnavailable, NestingError, PoolTimeout, RowCountError, SqlError
from .writes import WriteInGet, allow_writes_in_get

__all__ = [
    "CANCEL_GRACE",
    "Database",
    "DbError",
    "DbUnavailable",
    "NestingError",
    "PoolTimeout",
    "Row",
    "RowCountError",
    "SqlError",
    "WriteInGet",
    "allow_writes_in_get",
    "configure",
    "database",
    "databases",
    "default_url",
    "dml",
    "exists",
    "fold",
    "Folder",
    "foldr",
    "list",
    "make_driver",
    "one_field",
    "one_row",
    "qq",
    "qqq",
    "Query",
    "run_script",
    "schema_file",
    "script",
    "transaction",
    "zero_or_one_row",
]

A = TypeVar("A")
_list = builtins.list

# -- the paper's quoting helpers -----------------------------------------------------------


def qq(text: str) -> str:
    """Double every ``'`` (SMLserver's ``Db.qq``): the text of an SQL string literal.

    Kept to show what the paper did. Safe only inside quotes, and only where a backslash is
    not an escape character (MySQL's default mode treats ``\\'`` as a quote: ``qq`` does not
    protect there). Prefer bound parameters: ``dml(pyweb.qq("... {value} ..."))``.
    """
    if not isinstance(text, str):
        raise TypeError(f"db.qq takes a str, not {type(text).__name__}: {text!r}")
    return text.replace("'", "''")


def qqq(text: str) -> str:
    """``qq`` and the quotes around it (SMLserver's ``Db.qqq``): ``'O''Brien'``."""
    return "'" + qq(text) + "'"


# -- configuration ------------------------------------------------------------------------------

_configured: Database | None = None
_site_defaults: dict[str, Database] = {}


def default_url(site_dir: str | os.PathLike[str]) -> str:
    """``sqlite:///SITE/data/pyweb.sqlite3`` (absolute), the embedded default of a site."""
    path = os.path.join(os.path.abspath(os.fspath(site_dir)), "data", "pyweb.sqlite3")
    return "sqlite:///" + path


def schema_file(site_dir: str | os.PathLike[str], dialect: str) -> str | None:
    """The site's schema for ``dialect``: ``schema.DIALECT.sql`` if there is one (the SQL
    dialects differ on auto-numbered keys), else ``schema.sql``, else None."""
    for name in (f"schema.{dialect}.sql", "schema.sql"):
        path = os.path.join(os.fspath(site_dir), name)
        if os.path.isfile(path):
            return path
    return None


def configure(
    url: str | None,
    *,
    pools: int = 2,
    handles: int = 4,
    timeout: float = 5.0,
    site: str | os.PathLike[str] | None = None,
    schema: str | os.PathLike[str] | None = None,
) -> Database | None:
    """Use the database at ``url`` from now on (``configure(None)`` forgets it).

    ``pools`` × ``handles`` connections at most per ``trio.run``; ``timeout`` seconds to
    wait for a free handle before :class:`PoolTimeout` (a 503 page). ``schema`` is run once,
    on first use; ``site`` gives the site's ``schema.sql`` (see :func:`schema_file`) when
    ``schema`` is not given. Returns the :class:`Database`.
    """
    global _configured
    old = _configured
    if url is None:
        _configured = None
    else:
        if schema is None and site is not None:
            schema = schema_file(site, _dialect_of(url))
        _configured = Database(url, pools=pools, handles=handles, timeout=timeout, schema=schema)
    if old is not None:
        old.close()
    return _configured


def databases() -> _list[Database]:
    """Every database this process has set up: the configured one and the sites' default
    ones (for ``/_pyweb/metrics``, which shows their pools)."""
    found = [] if _configured is None else [_configured]
    return found + [db for db in _site_defaults.values() if db is not _configured]


def _dialect_of(url: str) -> str:
    return parse_url(url).scheme


def _site_root() -> str | None:
    conn_module = sys.modules.get("pyweb.app.conn")
    if conn_module is None:
        return None
    try:
        conn = conn_module.current_conn()
    except RuntimeError:  # not inside a page
        return None
    return getattr(conn, "site_root", None)  # (a test may set a stand-in as the page)


def database() -> Database:
    """The database the module functions use: the configured one; else, inside a page,
    the site's default (``SITE/data/pyweb.sqlite3``, its ``schema.sql`` run on first use);
    else the one named by the ``PYWEB_DB`` environment variable."""
    if _configured is not None:
        return _configured
    root = _site_root()
    if root is not None:
        found = _site_defaults.get(root)
        if found is None:
            found = _site_defaults[root] = Database(
                default_url(root), schema=schema_file(root, "sqlite")
            )
        return found
    env = os.environ.get("PYWEB_DB")
    if env:
        configured = configure(env)
        assert configured is not None
        return configured
    raise DbError(
        "no database configured: call pyweb.db.configure('sqlite:///guest.sqlite3') first "
        "(pages served by pyweb get their site's SITE/data/pyweb.sqlite3, or pyweb serve --db URL)"
    )


# -- the module functions: the current database's methods ------------------------------------


async def dml(q: Query) -> int:
    """:meth:`Database.dml` on the current :func:`database`."""
    return await database().dml(q)


async def fold(f: Folder[A], acc: A, q: Query) -> A:
    """:meth:`Database.fold` on the current :func:`database`."""
    return await database().fold(f, acc, q)


async def foldr(f: Folder[A], acc: A, q: Query) -> A:
    """:meth:`Database.foldr` on the current :func:`database`."""
    return await database().foldr(f, acc, q)


async def list(q: Query) -> _list[Row]:  # noqa: A001 - the paper's vocabulary
    """:meth:`Database.list` on the current :func:`database`."""
    return await database().list(q)


async def one_row(q: Query) -> Row:
    """:meth:`Database.one_row` on the current :func:`database`."""
    return await database().one_row(q)


async def zero_or_one_row(q: Query) -> Row | None:
    """:meth:`Database.zero_or_one_row` on the current :func:`database`."""
    return await database().zero_or_one_row(q)


async def one_field(q: Query) -> Any:
    """:meth:`Database.one_field` on the current :func:`database`."""
    return await database().one_field(q)


async def exists(q: Query) -> bool:
    """:meth:`Database.exists` on the current :func:`database`."""
    return await database().exists(q)


async def script(text: str) -> None:
    """:meth:`Database.script` on the current :func:`database`."""
    await database().script(text)


async def run_script(path: str | os.PathLike[str]) -> None:
    """Run the SQL file at ``path`` (``pyweb db init`` runs the site's schema with it)."""
    with open(path, encoding="utf-8") as f:
        await database().script(f.read())


def transaction() -> AbstractAsyncContextManager[Database]:
    """:meth:`Database.transaction` on the current :func:`database`:
    ``async with db.transaction(): ...``."""
    return database().transaction()
