"""pyweb.db without a database server: URLs, rows, the paper's qq, configuration, and the
site's default SQLite database created on first use (over real sockets)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyweb import db, qq
from pyweb.db.driver import parse_url, split_statements
from pyweb.runtime.testing import RUNTIMES
from pyweb.runtime.testing import run as run_on
from pyweb.testing import serve


@pytest.mark.parametrize(
    ("url", "scheme", "database", "host", "port"),
    [
        ("sqlite:///guest.sqlite3", "sqlite", "guest.sqlite3", None, None),
        ("sqlite:////abs/path/x.db", "sqlite", "/abs/path/x.db", None, None),
        ("sqlite:///:memory:", "sqlite", ":memory:", None, None),
        ("postgresql://postgres@127.0.0.1:5432/test", "postgresql", "test", "127.0.0.1", 5432),
        ("postgres://u:p%40ss@db.example/app", "postgresql", "app", "db.example", None),
        ("mysql://root@127.0.0.1:3306/test", "mysql", "test", "127.0.0.1", 3306),
        ("mariadb://root@localhost/test", "mysql", "test", "localhost", None),
    ],
)
def test_parse_url(
    url: str, scheme: str, database: str, host: str | None, port: int | None
) -> None:
    parsed = parse_url(url)
    assert (parsed.scheme, parsed.database, parsed.host, parsed.port) == (
        scheme,
        database,
        host,
        port,
    )


def test_url_password_is_not_shown() -> None:
    parsed = parse_url("postgresql://me:secret@h/db")
    assert parsed.password == "secret" and "secret" not in str(parsed)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("oracle://x/y", "unknown database URL 'oracle://x/y'"),
        ("sqlite://host/file", "three slashes"),
        ("sqlite:///", "no file name"),
        ("postgresql://127.0.0.1:5432", "names no database"),
        ("mysql://h:99999/db", "bad port"),
    ],
)
def test_bad_urls_name_themselves(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        db.Database(url)


@pytest.mark.parametrize(
    ("option", "value"), [("pools", 0), ("handles", -1), ("pools", 1.5), ("timeout", 0)]
)
def test_bad_pool_options_are_refused(option: str, value: object) -> None:
    with pytest.raises(ValueError, match=option):
        db.Database("sqlite:///:memory:", **{option: value})  # type: ignore[arg-type]


def test_a_query_is_a_quot_or_a_str(tmp_path: Path) -> None:
    d = db.Database(f"sqlite:///{tmp_path}/x.sqlite3")
    with pytest.raises(TypeError, match="not bytes"):
        run_on(lambda: d.list(b"select 1"))
    d.close()


def test_row_maps_names_to_values() -> None:
    row = db.Row({"email": 0, "name": 1}, ("h@x.org", "Homer"))
    assert row["name"] == "Homer" and row("email") == "h@x.org"
    assert dict(row) == {"email": "h@x.org", "name": "Homer"}
    assert row.values_tuple == ("h@x.org", "Homer")
    with pytest.raises(KeyError, match=r"no column 'nmae'.*\['email', 'name'\]"):
        row["nmae"]


@given(st.text())
def test_papers_qq_doubles_quotes(text: str) -> None:
    assert db.qq(text).replace("''", "").count("'") == 0
    assert db.qqq(text) == "'" + text.replace("'", "''") + "'"


def test_qq_refuses_non_text() -> None:
    with pytest.raises(TypeError, match="not int"):
        db.qq(3)  # type: ignore[arg-type]


def test_split_statements() -> None:
    text = "-- a comment\ncreate table a (x int);\n\ninsert into a\n  values (1);\nselect 1"
    assert split_statements(text) == [
        "create table a (x int)",
        "insert into a\n  values (1)",
        "select 1",
    ]


def test_no_configuration_outside_a_page_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYWEB_DB", raising=False)
    db.configure(None)
    with pytest.raises(db.DbError, match=r"no database configured: call pyweb.db.configure"):
        run_on(lambda: db.one_field("select 1"))


@pytest.mark.parametrize("loop", RUNTIMES)
def test_memory_database_is_shared_by_the_pools(loop: str) -> None:
    d = db.Database("sqlite:///:memory:", pools=2, handles=2)

    async def main() -> list[int]:
        await d.dml("create table m (i integer)")
        await d.dml(qq("insert into m values ({i})", i=7))

        async def nested(row: db.Row, acc: list[int]) -> list[int]:
            return acc + [await d.one_field("select count(*) from m")]  # pool 1's handle

        return await d.fold(nested, [], "select i from m")

    try:
        assert run_on(main, loop, virtual_time=False) == [1]
    finally:
        d.close()


def test_a_page_gets_its_sites_sqlite_database_on_first_use(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "schema.sql").write_text("create table if not exists visit (n integer);\n")
    (site / "visit.py").write_text(
        "from pyweb import db, qq\n"
        "await db.dml('insert into visit values (1)')\n"
        "conn.return_(str(await db.one_field('select count(*) from visit')))\n"
    )
    db.configure(None)
    with serve(site) as client:
        assert client.get("/visit").text == "1"
        assert client.get("/visit").text == "2"
        assert (site / "data" / "pyweb.sqlite3").is_file()
        assert client.get("/data/pyweb.sqlite3").status == 404  # never served
        assert client.get("/schema.sql").status == 404
    with serve(site) as client:  # a new server: the entries survived
        assert client.get("/visit").text == "3"
