"""Table 1's database pages (db, guest, log) for gunicorn + Flask on PostgreSQL and MySQL.

The peer of ``pyweb serve pages --db URL`` in ``benchmarks/bench_db_pages.py``:
the same three pages, with the templates of ``table1_peers.py``, over the synchronous
drivers a Flask user would pick: psycopg 3 for PostgreSQL, PyMySQL for MySQL. A gunicorn
sync worker serves one request at a time, so it keeps one connection open for its whole
life (opened on first use, opened again if it breaks): the fastest honest idiom for it.

``DB_PEERS_URL``: ``postgresql://user@host:port/db?search_path=schema`` or
``mysql://user@host:port/db``. Run: ``gunicorn db_peers:app``.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qs, urlsplit

from flask import Flask
from table1_peers import DBPAGE, GUEST, LOG

URL = urlsplit(os.environ.get("DB_PEERS_URL", ""))
_connection: Any = None


def _connect() -> Any:
    if URL.scheme == "postgresql":
        import psycopg

        options = parse_qs(URL.query)
        search_path = options.get("search_path", ["public"])[0]
        return psycopg.connect(
            host=URL.hostname,
            port=URL.port or 5432,
            user=URL.username,
            dbname=URL.path.lstrip("/"),
            autocommit=True,
            options=f"-c search_path={search_path}",
        )
    import pymysql

    return pymysql.connect(
        host=URL.hostname,
        port=URL.port or 3306,
        user=URL.username or "root",
        password="",
        database=URL.path.lstrip("/"),
        autocommit=True,
        charset="utf8mb4",
    )


def _query(sql: str) -> list[tuple]:
    global _connection
    if _connection is None:
        _connection = _connect()
    try:
        with _connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    except Exception:
        _connection = None  # broken: open a new one on the next request
        raise


app = Flask(__name__)


@app.route("/db")
def db() -> str:
    (count,) = _query("SELECT count(*) FROM guest")[0]
    return DBPAGE.render(title="Database", count=count)


@app.route("/guest")
def guest() -> str:
    rows = _query("SELECT email, name, comment FROM guest ORDER BY id")
    return GUEST.render(title="Guest book", rows=rows)


@app.route("/log")
def log() -> str:
    rows = _query("SELECT id, page, status, bytes FROM log ORDER BY id")
    return LOG.render(title="Log", rows=rows)
