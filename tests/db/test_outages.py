"""Errors in proportion, over real sockets against the real databases: an outage (a proxy
of our own, cut; never the shared service) is logged once when it starts and once when it
ends with the count of failed requests, not with a traceback per 503; a NUL in a form field
is a 400 naming the field on every backend (it was a 500 on PostgreSQL); an error PostgreSQL
sends while shutting down is a 503 and the handle is discarded (it was a 500).

On both loops: a test with a ``backend`` serves on ``backend.loop`` (the fixture is already
one run per backend and loop); the PostgreSQL shutdown tests are marked ``loops``."""

from __future__ import annotations

import io
import shutil
import socket
import struct
import threading
import time
import uuid
from pathlib import Path

import pytest
import trio

from pyweb import db
from pyweb.app.formdata import FormLimits
from pyweb.app.site import Site
from pyweb.testing import serve
from pyweb.testing.server import use_loop

from ..csrf_helpers import csrf_token
from ..helpers import until
from .conftest import PG_HOST, PG_PORT, Backend, require
from .proxy import Proxy

PAGES = Path(__file__).resolve().parents[2] / "pages"


def _count_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "count.py").write_text(
        "from pyweb import db\nconn.return_(f\"<p>{await db.one_field('select 41 + 1')}</p>\")\n"
    )
    return site


def test_an_outage_is_logged_once_at_each_end_with_its_count(
    backend: Backend, tmp_path: Path
) -> None:
    if backend.admin_url is None:
        pytest.skip("SQLite is a file: it cannot be down")
    port = 5432 if backend.name == "postgresql" else 3306
    proxy = Proxy(("127.0.0.1", port))
    proxy.start()
    db.configure(backend.url.replace(f":{port}/", f":{proxy.port}/"), timeout=2.0)
    log = io.StringIO()
    try:
        with use_loop(backend.loop), serve(_count_site(tmp_path), error_log=log) as client:
            assert client.get("/count").text == "<p>42</p>"
            proxy.stop()
            failed = [client.get("/count").status for _ in range(60)]
            assert failed == [503] * 60
            proxy.start()
            assert client.get("/count").text == "<p>42</p>"
    finally:
        db.configure(None)
        proxy.stop()
    text = log.getvalue()
    assert text.count("is unreachable") == 1, text
    assert text.count("is back after") == 1, text
    assert "60 requests failed during the outage" in text, text
    assert "Traceback" not in text  # no traceback per 503 (there were 60 before)
    assert len(text) < 2000, len(text)


def test_nul_in_a_form_field_is_a_400_naming_it(backend: Backend, tmp_path: Path) -> None:
    site = tmp_path / "pages"
    shutil.copytree(PAGES, site, ignore=shutil.ignore_patterns("data", "__pycache__"))
    database = db.configure(backend.url, site=site)
    assert database is not None
    backend.run(database.dml, "drop table if exists guest")
    database._schema_done = database.schema is None
    try:
        with use_loop(backend.loop), serve(site) as client:
            token = csrf_token(client, "/guest")  # the guest book's form carries it
            for bad in ("a\x00b", "esc\x1b[31m", "\x07"):
                r = client.post(
                    "/guest_add",
                    data={"name": "Eve", "email": "e@example.com", "comment": bad,
                          "csrf_token": token},
                )  # fmt: skip
                assert r.status == 400, (backend.name, r.status, r.text[:200])
                assert "comment" in r.text and "control character" in r.text
            ok = client.post(
                "/guest_add",
                data={"name": "Tab\tby", "email": "t@example.com", "comment": "line\r\nnext",
                      "csrf_token": token},
            )  # fmt: skip
            assert ok.status == 303  # tab, CR and LF are text
        assert backend.run(database.one_field, "select count(*) from guest") == 1
        if backend.name != "postgresql":  # (PostgreSQL's text cannot hold NUL at all)
            opted = Site(site, form_limits=FormLimits(allow_control_chars=True))
            with use_loop(backend.loop), serve(opted) as client:
                token = csrf_token(client, "/guest")
                r = client.post(
                    "/guest_add",
                    data={"name": "Eve", "email": "e@example.com", "comment": "a\x00b",
                          "csrf_token": token},
                )  # fmt: skip
                assert r.status == 303
            rows = backend.run(database.list, "select comment from guest where name = 'Eve'")
            assert [row["comment"] for row in rows] == ["a\x00b"]
    finally:
        db.configure(None)


def _fatal(code: str, message: str) -> bytes:
    """A PostgreSQL ErrorResponse message ('E'), as the server sends to every backend's
    client when it shuts down (severity FATAL, SQLSTATE 57P01)."""
    fields = (
        b"".join(
            tag + value.encode() + b"\0"
            for tag, value in ((b"S", "FATAL"), (b"V", "FATAL"), (b"C", code), (b"M", message))
        )
        + b"\0"
    )
    return b"E" + struct.pack("!i", len(fields) + 4) + fields


class ShutdownProxy(Proxy):
    """A proxy that can do to its clients what a PostgreSQL shutdown does: send each a FATAL
    ErrorResponse (in the middle of whatever it was doing) and close the connection."""

    def __init__(self, target: tuple[str, int]) -> None:
        super().__init__(target)
        self.clients: list[socket.socket] = []
        self.cut = False
        self.sending = threading.Lock()  # whole messages only: never two writers at once

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        if source.getpeername()[1] != self.target[1]:  # client -> server
            self.clients.append(source)
            super()._pump(source, sink)
            return
        try:  # server -> client: stops forwarding once the "server" is shutting down
            while data := source.recv(65536):
                with self.sending:
                    if self.cut:
                        return
                    sink.sendall(data)
        except OSError:
            pass

    def shut_down(self, payload: bytes) -> None:
        # The message first, the close a moment later, as a server going down does: the
        # client reads the error while its socket still looks open (the race that made a
        # 500 of it: the handle looked alive, so the error looked like the query's fault).
        with self.sending:
            self.cut = True
            for client in list(self.clients):
                try:
                    client.sendall(payload)
                except OSError:
                    pass
        time.sleep(0.3)
        self.stop()
        self.cut = False


@pytest.mark.loops("trio", "asyncio")
@pytest.mark.parametrize(
    "payload",
    [
        _fatal("57P01", "terminating connection due to administrator command"),
        b"!\x00\x00\x00\x04",  # a message asyncpg cannot place
    ],
    ids=["admin-shutdown", "unexpected-message"],
)
def test_postgresql_shutting_down_is_a_503_and_the_handle_is_discarded(
    tmp_path: Path, payload: bytes
) -> None:
    require(PG_HOST, PG_PORT, "PostgreSQL")
    proxy = ShutdownProxy((PG_HOST, PG_PORT))
    proxy.start()
    site = tmp_path / "site"
    site.mkdir()
    mark = f"outage_{uuid.uuid4().hex}"  # finds the query in pg_stat_activity
    (site / "slow.py").write_text(
        "from pyweb import db\n"
        f"conn.return_(str(await db.one_field('select 42 /* {mark} */ from pg_sleep(1.5)')))\n"
    )
    direct = db.Database(f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test", pools=1, handles=1)
    in_flight = (f"select count(*) from pg_stat_activity where state = 'active' "
                 f"and pid <> pg_backend_pid() and query like '%{mark}%'")  # fmt: skip
    db.configure(f"postgresql://postgres@127.0.0.1:{proxy.port}/test", timeout=2.0)
    log = io.StringIO()
    try:
        with serve(site, error_log=log, dev=True) as client:
            assert client.get("/slow").text == "42"
            results = []
            request = threading.Thread(target=lambda: results.append(client.get("/slow")))
            request.start()
            until(lambda: trio.run(direct.one_field, in_flight), "the query in flight")
            proxy.shut_down(payload)
            request.join(10)
            assert results and results[0].status == 503, (results, results[0].text[-3000:])
            proxy.start()  # PostgreSQL is back: a fresh handle, no restart of pyweb
            assert client.get("/slow").text == "42"
    finally:
        db.configure(None)
        proxy.stop()
        direct.close()
    assert "Traceback" not in log.getvalue()  # an outage, logged once, not a page's bug
