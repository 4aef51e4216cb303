"""``pyweb serve --db URL`` and ``pyweb db init``: the command line of pyweb.db.

The tests of ``serve`` run on both loops; those of parsing and of ``pyweb db init`` start
no server and have no ``--loop`` (db init runs its script once, on trio, whatever the
site is served on): one run each."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pyweb import db
from pyweb.cli import build_parser, main
from pyweb.testing import default_loop


@pytest.mark.loops("trio", "asyncio")
def test_serve_refuses_a_bad_database_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", str(tmp_path), "--db", "oracle://x/y", "--port", "0", "--loop", default_loop()]
    assert main(argv) == 2
    assert "--db: unknown database URL 'oracle://x/y'" in capsys.readouterr().err
    db.configure(None)


def test_serve_has_a_db_flag() -> None:
    args = build_parser().parse_args(["serve", "site", "--db", "sqlite:///x.sqlite3"])
    assert args.db == "sqlite:///x.sqlite3"
    assert build_parser().parse_args(["serve"]).db is None


def test_db_init_uses_the_sites_default_sqlite_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "schema.sql").write_text("create table if not exists note (text varchar(10));\n")
    assert main(["db", "init", str(tmp_path)]) == 0
    assert main(["db", "init", str(tmp_path)]) == 0  # idempotent
    assert "ran " in capsys.readouterr().out
    path = tmp_path / "data" / "pyweb.sqlite3"
    with sqlite3.connect(path) as conn:
        assert conn.execute("select name from sqlite_master where type = 'table'").fetchall() == [
            ("note",)
        ]


def test_db_init_without_a_schema_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "init", str(tmp_path)]) == 1
    assert "no schema.sql" in capsys.readouterr().err


def test_db_init_reports_sql_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "schema.sql").write_text("create tabel oops (x int);\n")
    assert main(["db", "init", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "syntax error" in err and "create tabel oops" in err


@pytest.mark.loops("trio", "asyncio")
def test_a_failing_query_shows_sql_and_message_on_the_dev_error_page(tmp_path: Path) -> None:
    from pyweb.testing import serve

    (tmp_path / "bad.py").write_text(
        "from pyweb import db\nawait db.list('select x from nowhere')\n"
    )
    db.configure(None)
    with serve(tmp_path, dev=True) as client:
        r = client.get("/bad")
        assert r.status == 500
        assert "no such table: nowhere" in r.text and "select x from nowhere" in r.text
