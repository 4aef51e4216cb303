"""Queries from more tasks than a pool has handles, in-process: the cost of waiting for one.

Run:  .venv/bin/python benchmarks/bench_db_wait.py [--loop trio|asyncio] [--queries N]
          [--tasks T] [--handles H]

``--tasks`` tasks (8) run ``db.foldr`` of Table 1's ``guest`` query (three rows, each made
into the page's quotation) on a pool of ``--handles`` handles (4), on PostgreSQL at
127.0.0.1:5432 (database ``test``, a schema of its own, dropped at the end): most queries
wait for a handle, as a page's do under ``wrk -c8``. No server: the pool, the bridge (on
trio) and the fold alone.

Made to be counted, not timed: run it under callgrind twice with different ``--queries``
and divide the difference of the totals by the difference of the counts (start-up and the
warm-up cancel out)::

    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_db_wait.py --queries 200
    PYTHONHASHSEED=0 valgrind --tool=callgrind python benchmarks/bench_db_wait.py --queries 1000

Without callgrind it prints the wall-clock µs per query (noisy on a shared machine).

``--what`` picks the layer measured: ``foldr`` (the default, as above), ``list``
(``db.list``, no fold), ``driver`` (pyweb's PostgreSQL connection alone, no pool) or
``asyncpg`` (asyncpg's ``fetch`` alone, no pyweb): with ``--tasks 1 --loop asyncio`` the
four differences are what each of pyweb's layers costs a query.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyweb import db, qq  # noqa: E402

ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


def layout_row(row: db.Row, acc: object) -> object:
    """pages/guest.py's row."""
    return (
        qq(
            '<li><i>{comment}</i> -- <a href="mailto:{email}">{name}</a></li>\n',
            comment=row["comment"],
            email=row["email"],
            name=row["name"],
        )
        + acc  # type: ignore[operator]
    )


async def run(args: argparse.Namespace, url: str) -> float:
    d = db.Database(url, pools=2, handles=args.handles)
    sql = "select email, name, comment from guest order by id"
    if args.what in ("driver", "asyncpg"):  # one connection: one task at a time
        args.tasks = 1
        conn = await d.driver.connect()
        raw = conn._conn  # type: ignore[attr-defined]

    async def worker(n: int) -> None:
        for _ in range(n):
            if args.what == "foldr":
                await d.foldr(layout_row, qq(""), sql)
            elif args.what == "list":
                await d.list(sql)
            elif args.what == "driver":
                await conn.query(sql, None)
            else:
                await raw.fetch(sql)

    await worker(20)  # warm-up: connections, prepared statements, caches
    share = args.queries // args.tasks
    started = time.perf_counter()
    if args.loop == "trio":
        async with trio.open_nursery() as nursery:
            for _ in range(args.tasks):
                nursery.start_soon(worker, share)
    else:
        await asyncio.gather(*(worker(share) for _ in range(args.tasks)))
    elapsed = time.perf_counter() - started
    if args.what in ("driver", "asyncpg"):
        conn.close()
    d.close()
    return elapsed / (share * args.tasks) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loop", choices=["trio", "asyncio"], default="trio")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--handles", type=int, default=4)
    parser.add_argument("--what", choices=["foldr", "list", "driver", "asyncpg"], default="foldr")
    args = parser.parse_args()
    schema = "pyweb_wait_" + uuid.uuid4().hex[:8]
    admin = db.Database(ADMIN, pools=1, handles=1)

    async def setup() -> None:
        await admin.script(
            f"create schema {schema}; create table {schema}.guest (id serial primary key, "
            "email text, name text, comment text)"
        )
        for i in range(3):
            await admin.dml(
                qq(
                    f"insert into {schema}.guest (email, name, comment) values "
                    "({email}, {name}, {comment})",
                    email=f"guest{i}@example.org",
                    name=f"Guest {i}",
                    comment=f"Comment number {i}",
                )
            )

    trio.run(setup)
    url = f"{ADMIN}?search_path={schema}"
    try:
        if args.loop == "trio":
            us = trio.run(run, args, url)
        else:
            try:
                import uvloop

                us = uvloop.run(run(args, url))
            except ImportError:
                us = asyncio.run(run(args, url))
        print(f"{args.loop}: {us:.1f} µs per query ({args.tasks} tasks, {args.handles} handles)")
    finally:
        trio.run(admin.dml, f"drop schema {schema} cascade")
        admin.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
