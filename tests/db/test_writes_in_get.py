"""``db.dml`` in a page answering a GET (pyweb/db/writes.py), served by a real server on both
loops: refused in development mode with the sentence that says why, logged once per page in
production (the write runs); a POST with its CSRF token writes. Outside a request nothing is
checked."""

from __future__ import annotations

import html
import io
from pathlib import Path

import pytest
import trio

import pyweb.testing
from pyweb import db, qq
from pyweb.db import writes
from pyweb.db.writes import WriteInGet, why_not
from tests.csrf_helpers import TOKEN_PAGE, token_header
from tests.helpers import write_site

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

SITE = {
    **TOKEN_PAGE,
    "schema.sql": "create table visit (name text);\n",
    # a GET that writes (the mistake); the form is read the same way on a GET and a POST
    "visit.py": """
        from pyweb import db, qq
        from pyweb.forms import get_string

        name = get_string("name")
        await db.dml(qq("insert into visit (name) values ({name})"))
        conn.return_("added", content_type="text/plain")
    """,
    # the fix: POST only
    "add.py": """
        from pyweb import db, qq
        from pyweb.forms import get_string

        conn.require_method("POST")
        name = get_string("name")
        await db.dml(qq("insert into visit (name) values ({name})"))
        conn.return_("added", content_type="text/plain")
    """,
    # the opt-out: a write meant to happen on a GET, in a block that says why; the write
    # after the block is checked again
    "counter.py": """
        from pyweb import db, qq
        from pyweb.forms import get_string

        name = get_string("name")
        with db.allow_writes_in_get("a visit log: a prefetch that adds a row does no harm"):
            await db.dml(qq("insert into visit (name) values ({name})"))
        if conn.form.get("again") == "yes":
            await db.dml(qq("insert into visit (name) values ('again')"))
        conn.return_("counted", content_type="text/plain")
    """,
    "names.py": """
        from pyweb import db, qq

        rows = await db.list(qq("select name from visit order by name"))
        conn.return_(",".join(row["name"] for row in rows), content_type="text/plain")
    """,
}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site", SITE)


def test_development_mode_refuses_a_write_in_a_get_and_says_why(site: Path, loop: str) -> None:
    log = io.StringIO()
    with pyweb.testing.serve(site, dev=True, error_log=log) as client:
        refused = client.get("/visit?name=ada")
        assert refused.status == 500
        said = html.unescape(refused.text)
        assert "visit.py called db.dml while answering a GET" in said
        assert 'start the page with conn.require_method("POST")' in said
        assert client.get("/names").text == ""  # nothing written
        posted = client.post("/add", {"name": "bob"}, headers=token_header(client))
        assert (posted.status, posted.text) == (200, "added")
        assert client.get("/names").text == "bob"
    assert "WriteInGet" in log.getvalue()


def test_production_writes_and_logs_once_per_page(site: Path, loop: str) -> None:
    writes._warned.clear()  # (once per page and process: this test's process has run others)
    log = io.StringIO()
    with pyweb.testing.serve(site, error_log=log) as client:
        assert client.get("/visit?name=ada").text == "added"
        assert client.get("/visit?name=cy").text == "added"
        assert client.get("/names").text == "ada,cy"
    said = log.getvalue()
    assert said.count("called db.dml while answering a GET") == 1, said
    assert "warned once per page" in said


def test_outside_a_request_nothing_is_checked(tmp_path: Path, loop: str) -> None:
    async def main() -> int:
        database = db.Database(f"sqlite:///{tmp_path / 'x.sqlite3'}")
        try:
            await database.dml("create table t (n int)")
            return await database.dml(qq("insert into t (n) values ({n})", n=1))
        finally:
            database.close()

    assert trio.run(main) == 1
    assert issubclass(WriteInGet, db.DbError)
    assert "HEAD" in why_not("pages/x.py", "HEAD")


def test_a_write_in_a_get_allowed_with_its_reason_runs_and_is_not_logged(
    site: Path, loop: str
) -> None:
    writes._warned.clear()
    log = io.StringIO()
    with pyweb.testing.serve(site, dev=True, error_log=log) as client:
        assert client.get("/counter?name=ada").text == "counted"
        assert client.get("/names").text == "ada"
        again = client.get("/counter?name=cy&again=yes")  # the write after the block
        assert again.status == 500
        assert "counter.py called db.dml while answering a GET" in html.unescape(again.text)
        assert client.get("/names").text == "ada,cy"  # (the block's write ran, the other not)
    quiet = io.StringIO()
    with pyweb.testing.serve(site, error_log=quiet) as client:  # production: nothing said
        assert client.get("/counter?name=bo").text == "counted"
        assert client.get("/names").text == "ada,bo,cy"
    assert "called db.dml" not in quiet.getvalue(), quiet.getvalue()


def test_allow_writes_in_get_wants_its_reason(loop: str) -> None:
    for reason in ("", "  ", None):
        with pytest.raises(TypeError, match="the reason a GET may write here"):
            with db.allow_writes_in_get(reason):  # type: ignore[arg-type]
                pass
    assert "db.allow_writes_in_get" in why_not("pages/x.py", "GET")
