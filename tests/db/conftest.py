"""The three databases of the behavioural suite, each isolated per test run.

SQLite is a file in a temporary directory. PostgreSQL (127.0.0.1:5432, database ``test``,
trust) gets a schema of its own per run (``?search_path=``), MariaDB/MySQL (127.0.0.1:3306,
root, no password) a database of its own, so concurrent runs never see each other's
tables, and the example site's fixed names (``guest``, ``log``) can be used. A server that
is not reachable skips its backend, unless ``CI=true``: then it fails.

Each backend is also run on both event loops (``backend.loop``: trio, where asyncpg and
aiomysql are reached through the bridge thread; asyncio, where they run natively on the
test's own loop): tests run their coroutines with ``backend.run(fn, *args)``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from pyweb import db
from pyweb.runtime.testing import RUNTIMES
from pyweb.runtime.testing import run as run_on
from pyweb.testing import reachable

PG_HOST, PG_PORT = "127.0.0.1", 5432
MY_HOST, MY_PORT = "127.0.0.1", 3306
BACKENDS = ["sqlite", "postgresql", "mysql"]
T = TypeVar("T")


def require(host: str, port: int, what: str) -> None:
    if reachable(host, port):
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} at {host}:{port} is not reachable, and CI=true")
    pytest.skip(f"{what} at {host}:{port} is not reachable")


@dataclass
class Backend:
    name: str
    url: str
    """The URL of this run's isolated database (schema, database or file)."""
    admin_url: str | None = None
    """A URL outside the isolated part (to kill connections), None for SQLite."""
    loop: str = "trio"
    """The event loop the test's coroutines run on (``pyweb.runtime.testing.RUNTIMES``)."""

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``fn(*args)`` to completion on this backend's loop (real time)."""
        return run_on(lambda: fn(*args), self.loop, virtual_time=False)

    def database(self, **options: object) -> db.Database:
        return db.Database(self.url, **options)  # type: ignore[arg-type]


def _admin(url: str, *statements: str) -> None:
    admin = db.Database(url, pools=1, handles=1)

    async def run() -> None:
        for statement in statements:
            await admin.dml(statement)

    try:
        run_on(run, "trio", virtual_time=False)
    finally:
        admin.close()


@pytest.fixture(
    scope="session",
    params=[(name, loop) for name in BACKENDS for loop in RUNTIMES],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    name, loop = request.param
    run = "pyweb_t_" + uuid.uuid4().hex[:10]
    if name == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "test.sqlite3"
        yield Backend(name, f"sqlite:///{path}", loop=loop)
        return
    if name == "postgresql":
        require(PG_HOST, PG_PORT, "PostgreSQL")
        admin = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test"
        _admin(admin, f"create schema {run}")
        try:
            yield Backend(name, f"{admin}?search_path={run}", admin, loop)
        finally:
            _admin(admin, f"drop schema {run} cascade")
        return
    require(MY_HOST, MY_PORT, "MariaDB/MySQL")
    admin = f"mysql://root@{MY_HOST}:{MY_PORT}/test"
    _admin(admin, f"create database {run} character set utf8mb4")
    try:
        yield Backend(name, f"mysql://root@{MY_HOST}:{MY_PORT}/{run}", admin, loop)
    finally:
        _admin(admin, f"drop database {run}")


@pytest.fixture
def table_name() -> str:
    """A table name no other test of this run uses."""
    return "t_" + uuid.uuid4().hex[:10]
