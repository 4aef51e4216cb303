"""Per-query cost of pyweb.db against the raw drivers, in the same run.

Run:  .venv/bin/python benchmarks/bench_db.py [--n 2000] [--runs 3] [--short]
      make bench-db

For each reachable database (SQLite always; PostgreSQL at 127.0.0.1:5432 db ``test``;
MariaDB at 127.0.0.1:3306 db ``test``), two queries: ``select 1`` and three rows of a 1,000-row guest
table. One task runs them one after the other, through:

* **raw**: the driver alone on its natural loop: ``sqlite3`` called directly, asyncpg or
  aiomysql on one connection on a uvloop loop (no trio at all);
* **crossing**: the same raw call through the mechanism pyweb uses, without pyweb.db
  (``trio.to_thread`` for sqlite3, :mod:`pyweb.runtime.bridge` for the others): the price of
  staying on trio;
* **pyweb fold**: ``await db.fold(f, acc, q)`` on a one-handle pool: the crossing plus
  pyweb's own layers (pool, quotation to SQL, rows as mappings, the fold).

Each figure is the median over ``--runs`` of µs per query. Measured, not asserted; this
machine has 2 cores shared with the database servers and other work: read ratios, not
absolute numbers, and expect ±50% between runs.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyweb.testing  # noqa: E402
from pyweb import db  # noqa: E402
from pyweb.runtime.bridge import loop_thread  # noqa: E402

PG = "postgresql://postgres@127.0.0.1:5432/test"
MY = "mysql://root@127.0.0.1:3306/test"
TABLE = "bench_guest_" + uuid.uuid4().hex[:8]


def reachable(port: int) -> bool:
    return pyweb.testing.reachable("127.0.0.1", port)


def queries() -> dict[str, str]:
    return {"select 1": "select 1", "guest x3": f"select email, name, comment from {TABLE} limit 3"}


def median_us(run: Callable[[], float], runs: int) -> float:
    return statistics.median(run() for _ in range(runs))


# -- raw drivers ------------------------------------------------------------------------


def raw_sqlite(path: str, sql: str, n: int) -> float:
    conn = sqlite3.connect(path)
    start = time.perf_counter()
    for _ in range(n):
        conn.execute(sql).fetchall()
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed / n * 1e6


def _uvloop_run(coro: object) -> float:
    import uvloop

    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(coro)  # type: ignore[arg-type]
    finally:
        loop.close()


async def _raw_pg(sql: str, n: int) -> float:
    import asyncpg

    conn = await asyncpg.connect(host="127.0.0.1", port=5432, user="postgres", database="test")
    start = time.perf_counter()
    for _ in range(n):
        await conn.fetch(sql)
    elapsed = time.perf_counter() - start
    await conn.close()
    return elapsed / n * 1e6


async def _raw_my(sql: str, n: int) -> float:
    import aiomysql

    conn = await aiomysql.connect(
        host="127.0.0.1", port=3306, user="root", db="test", autocommit=True
    )
    start = time.perf_counter()
    for _ in range(n):
        async with conn.cursor() as cur:
            await cur.execute(sql)
            await cur.fetchall()
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed / n * 1e6


# -- the crossing alone ------------------------------------------------------------------------


def crossing_sqlite(path: str, sql: str, n: int) -> float:
    async def main() -> float:
        conn = sqlite3.connect(path, check_same_thread=False)
        start = time.perf_counter()
        for _ in range(n):
            await trio.to_thread.run_sync(lambda: conn.execute(sql).fetchall())
        elapsed = time.perf_counter() - start
        conn.close()
        return elapsed / n * 1e6

    return trio.run(main)


def crossing_bridge(dialect: str, sql: str, n: int) -> float:
    async def main() -> float:
        if dialect == "postgresql":
            import asyncpg

            conn = await loop_thread.call(
                asyncpg.connect(host="127.0.0.1", port=5432, user="postgres", database="test")
            )

            async def one() -> object:
                return await conn.fetch(sql)

            async def close() -> None:
                await conn.close()
        else:
            import aiomysql

            conn = await loop_thread.call(
                aiomysql.connect(
                    host="127.0.0.1", port=3306, user="root", db="test", autocommit=True
                )
            )

            async def one() -> object:
                async with conn.cursor() as cur:
                    await cur.execute(sql)
                    return await cur.fetchall()

            async def close() -> None:
                conn.close()

        start = time.perf_counter()
        for _ in range(n):
            await loop_thread.call(one())
        elapsed = time.perf_counter() - start
        await loop_thread.call(close())
        return elapsed / n * 1e6

    return trio.run(main)


# -- pyweb.db ----------------------------------------------------------------------------------


def pyweb_fold(url: str, sql: str, n: int) -> float:
    d = db.Database(url, pools=1, handles=1)

    def count(row: db.Row, acc: int) -> int:
        return acc + 1

    async def main() -> float:
        await d.fold(count, 0, sql)  # connect outside the timing
        start = time.perf_counter()
        for _ in range(n):
            await d.fold(count, 0, sql)
        return (time.perf_counter() - start) / n * 1e6

    try:
        return trio.run(main)
    finally:
        d.close()


# -- setup --------------------------------------------------------------------------------------


def setup(url: str) -> None:
    d = db.Database(url, pools=1, handles=1)
    blob = {"sqlite": "text", "postgresql": "text", "mysql": "text"}[d.dialect]

    async def main() -> None:
        await d.dml(f"create table {TABLE} (email varchar(100), name varchar(100), comment {blob})")
        async with d.transaction():
            for i in range(1000):
                await d.dml(
                    db_qq(
                        "insert into " + TABLE + " values ({e}, {n}, {c})",
                        e=f"u{i}@example.com",
                        n=f"User {i}",
                        c="Hello " * 20,
                    )
                )

    try:
        trio.run(main)
    finally:
        d.close()


def teardown(url: str) -> None:
    d = db.Database(url, pools=1, handles=1)
    try:
        trio.run(d.dml, f"drop table if exists {TABLE}")
    finally:
        d.close()


def db_qq(template: str, **values: object) -> object:
    from pyweb import qq

    return qq(template, **values)


def measure(
    dialect: str, url: str, sqlite_path: str, sql: str, n: int, runs: int
) -> tuple[float, float, float]:
    """µs/query: raw driver, raw driver through the crossing, pyweb.db's fold."""
    if dialect == "sqlite":
        raw = median_us(lambda: raw_sqlite(sqlite_path, sql, n), runs)
        cross = median_us(lambda: crossing_sqlite(sqlite_path, sql, n), runs)
    elif dialect == "postgresql":
        raw = median_us(lambda: _uvloop_run(_raw_pg(sql, n)), runs)
        cross = median_us(lambda: crossing_bridge(dialect, sql, n), runs)
    else:
        raw = median_us(lambda: _uvloop_run(_raw_my(sql, n)), runs)
        cross = median_us(lambda: crossing_bridge(dialect, sql, n), runs)
    fold = median_us(lambda: pyweb_fold(url, sql, n), runs)
    return raw, cross, fold


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="queries per measurement")
    parser.add_argument("--runs", type=int, default=3, help="measurements; the median is shown")
    parser.add_argument("--short", action="store_true", help="a quick check: --n 200 --runs 1")
    args = parser.parse_args()
    n, runs = (200, 1) if args.short else (args.n, args.runs)

    tmp = tempfile.mkdtemp(prefix="pyweb-bench-db-")
    sqlite_path = f"{tmp}/bench.sqlite3"
    targets = [("sqlite", f"sqlite:///{sqlite_path}")]
    for dialect, url, port in (("postgresql", PG, 5432), ("mysql", MY, 3306)):
        if reachable(port):
            targets.append((dialect, url))
        else:
            print(f"({dialect} at 127.0.0.1:{port} not reachable: skipped)")

    print(f"pyweb.db per-query cost, {n} queries x {runs} runs (median), one task, µs/query")
    print(
        f"{'database':<11} {'query':<9} {'raw':>8} {'crossing':>9} {'pyweb fold':>11} {'fold/raw':>9} {'fold-raw µs':>12}"
    )
    for dialect, url in targets:
        setup(url)
        try:
            for label, sql in queries().items():
                raw, cross, fold = measure(dialect, url, sqlite_path, sql, n, runs)
                print(
                    f"{dialect:<11} {label:<9} {raw:>8.1f} {cross:>9.1f} {fold:>11.1f} "
                    f"{fold / raw:>8.2f}x {fold - raw:>12.1f}"
                )
        finally:
            teardown(url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
