"""Table 1's database pages (db, guest, log) for uvicorn + Starlette on asyncpg (PostgreSQL).

The asyncio peer of ``pyweb serve pages --db URL`` in ``benchmarks/bench_db_pages.py``: the
same three pages with the same queries, written as a Starlette user writes them: one asyncpg
pool made at startup (the lifespan), ``async with pool.acquire()`` per request, the
templates of ``table1_peers.py``, the queries of ``pages/db.py``, ``guest.py`` and ``log.py``
word for word. The pool has as many connections as the pool a pyweb page
takes its handle from (``DB_POOL_SIZE``, set by the benchmark to match), so neither side has
more connections to the database.

``DB_PEERS_URL``: ``postgresql://user@host:port/db?search_path=schema``.
Run: ``uvicorn db_starlette:app``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from table1_peers import DBPAGE, GUEST, LOG

URL = urlsplit(os.environ.get("DB_PEERS_URL", ""))
POOL_SIZE = int(os.environ.get("DB_POOL_SIZE", "4"))
pool: Any = None


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    global pool
    search_path = parse_qs(URL.query).get("search_path", ["public"])[0]
    pool = await asyncpg.create_pool(
        host=URL.hostname,
        port=URL.port or 5432,
        user=URL.username,
        database=URL.path.lstrip("/"),
        min_size=POOL_SIZE,
        max_size=POOL_SIZE,
        server_settings={"search_path": search_path},
    )
    try:
        yield
    finally:
        await pool.close()


async def db(request: Request) -> HTMLResponse:
    async with pool.acquire() as connection:
        count = await connection.fetchval("select count(*) from guest")
    return HTMLResponse(DBPAGE.render(title="Database", count=count))


async def guest(request: Request) -> HTMLResponse:
    async with pool.acquire() as connection:
        rows = await connection.fetch("select email, name, comment from guest order by id")
    return HTMLResponse(GUEST.render(title="Guest book", rows=[tuple(r) for r in rows]))


async def log(request: Request) -> HTMLResponse:
    async with pool.acquire() as connection:
        rows = await connection.fetch("select id, page, status, bytes from log order by id")
    return HTMLResponse(LOG.render(title="Log", rows=[tuple(r) for r in rows]))


app = Starlette(
    routes=[Route("/db", db), Route("/guest", guest), Route("/log", log)], lifespan=lifespan
)
