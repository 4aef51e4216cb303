"""What a database driver gives :mod:`pyweb.db`: connections that run whole queries.

The interface is deliberately small and neutral (it says ``async``, not ``trio``), so that
the same pools and functions work over a driver in a worker thread (SQLite), over an
asyncio driver (PostgreSQL, MySQL) natively on an asyncio server and on an asyncio loop in
another thread from trio (:mod:`pyweb.runtime.bridge`).

One call is one whole query: the SQL goes in, every row comes back. That is one crossing
between threads per query, never one per row (docs/db.md, "the bridge").

The cancellation contract: when the task calling a method is cancelled, the driver
stops the query on the database side (or makes sure it cannot affect anything), waits a
bounded time for its thread to let go of the connection, and sets :attr:`Connection.broken`
if the connection is not known to be idle. The pool never hands out a broken connection:
it closes it and opens a new one on next use.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["Connection", "Driver", "Url", "parse_url", "shorten_switch_interval"]

SWITCH_INTERVAL = 0.0005
"""Seconds a thread may keep the GIL while another waits for it (Python's default: 0.005)."""


def shorten_switch_interval() -> None:
    """Let driver threads get the GIL back quickly (called when the first one starts).

    A driver thread (SQLite's worker, the asyncio loop) needs the GIL several times per
    query: to start, to build the rows, to wake trio. While the trio thread renders a big
    page it holds the GIL, and a waiting thread gets it only after the *switch interval*,
    5 ms by default: a convoy that made Table 1's ``log`` page (500 rows) serve 70 req/s
    on SQLite where 0.5 ms gave 117 (wrk -c8, benchmarks/bench_db_pages.py's setting).
    It is a process-wide setting, only ever lowered here.
    """
    if sys.getswitchinterval() > SWITCH_INTERVAL:
        sys.setswitchinterval(SWITCH_INTERVAL)


Params = Sequence[Any] | None
"""Bound parameters in the driver's paramstyle, or None for a plain statement."""


class Connection(ABC):
    """One open connection (a *handle* in SMLserver's words)."""

    broken: bool = False
    """True when the connection must not be reused (lost, or busy after a cancel)."""

    @abstractmethod
    async def query(self, sql: str, params: Params) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run a statement that returns rows: the column names and every row."""

    @abstractmethod
    async def execute(self, sql: str, params: Params) -> int:
        """Run a statement for its effect; the number of rows it changed (-1 if unknown)."""

    @abstractmethod
    async def script(self, text: str) -> None:
        """Run several statements separated by ``;`` (a schema file), no parameters."""

    @abstractmethod
    async def begin(self) -> None: ...

    @abstractmethod
    async def commit(self) -> None: ...

    @abstractmethod
    async def rollback(self) -> None: ...

    def alive(self) -> bool:
        """A cheap check, without I/O, that the connection is still usable."""
        return not self.broken

    @abstractmethod
    def close(self) -> None:
        """Close it, from any thread, without waiting (errors ignored)."""


class Driver(ABC):
    """Opens connections to one database (the URL's)."""

    name: str = ""
    """"sqlite", "postgresql" or "mysql"."""
    paramstyle: str = "qmark"
    """How :meth:`pyweb.quot.Quot.to_sql` writes a bound parameter for this driver."""

    @abstractmethod
    async def connect(self) -> Connection:
        """A new connection; raises :class:`~pyweb.db.errors.DbUnavailable` if it cannot."""

    async def shutdown(self) -> None:  # noqa: B027 - optional hook
        """Release what the driver holds besides its connections."""


@dataclass(frozen=True)
class Url:
    """A database URL, split: ``scheme://user:password@host:port/database?options``."""

    scheme: str
    user: str | None
    password: str | None
    host: str | None
    port: int | None
    database: str
    """The database name; for SQLite the file's path (``:memory:`` for a private one)."""
    options: dict[str, str]

    def __str__(self) -> str:
        """The URL without its password (safe to print in logs and error pages)."""
        if self.scheme == "sqlite":
            return f"sqlite:///{self.database}"
        auth = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{self.scheme}://{auth}{self.host or ''}{port}/{self.database}"


_SCHEMES = {
    "sqlite": "sqlite",
    "sqlite3": "sqlite",
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
}


def parse_url(url: str) -> Url:
    """Split a database URL; ValueError naming the URL when it is not one pyweb knows.

    ``sqlite:///relative/path.sqlite3``, ``sqlite:////absolute/path``, ``sqlite:///:memory:``;
    ``postgresql://user@host:5432/db``; ``mysql://root@127.0.0.1:3306/test``.
    """
    if not isinstance(url, str):
        raise TypeError(f"a database URL is a str, not {type(url).__name__}: {url!r}")
    parts = urlsplit(url)
    scheme = _SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        raise ValueError(
            f"unknown database URL {url!r}: it starts with sqlite:///, postgresql:// or mysql://"
        )
    options = {}
    for pair in filter(None, parts.query.split("&")):
        key, _, value = pair.partition("=")
        options[unquote(key)] = unquote(value)
    if scheme == "sqlite":
        if parts.netloc:
            raise ValueError(
                f"bad SQLite URL {url!r}: write sqlite:///path (three slashes; four for an "
                "absolute path)"
            )
        path = unquote(parts.path[1:]) if parts.path.startswith("/") else unquote(parts.path)
        if not path:
            raise ValueError(f"bad SQLite URL {url!r}: no file name (sqlite:///path/to/file)")
        return Url("sqlite", None, None, None, None, path, options)
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"bad port in database URL {url!r}") from None
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise ValueError(f"database URL {url!r} names no database (…/dbname at the end)")
    return Url(
        scheme,
        unquote(parts.username) if parts.username else None,
        unquote(parts.password) if parts.password else None,
        parts.hostname or "127.0.0.1",
        port,
        database,
        options,
    )


def split_statements(text: str) -> list[str]:
    """Split a schema file into statements: on ``;`` at the end of a line, ``--`` comments
    dropped. Enough for schema files (no ``;`` at a line end inside a string literal)."""
    statements: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("--") or not stripped:
            continue
        current.append(line)
        if stripped.endswith(";"):
            statement = "\n".join(current).strip().rstrip(";").strip()
            if statement:
                statements.append(statement)
            current = []
    rest = "\n".join(current).strip()
    if rest:
        statements.append(rest)
    return statements
