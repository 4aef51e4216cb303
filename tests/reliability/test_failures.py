"""No acknowledged request is lost when the backing services or the workers fail: a
PostgreSQL outage and a Redis outage (proxies of our own, cut; never the shared services),
a worker killed with ``kill -9``, and ``--max-requests`` recycling, each under load from
keep-alive clients. "Acknowledged" means the client got a 2xx: every write so answered
must be in the database afterwards, and a client may see 503s (the outage) but no 500s
and no resets on a reused connection. On both loops: the servers in a thread through
:mod:`pyweb.testing`, ``pyweb serve`` with ``--loop`` (:func:`tests.helpers.serve_command`)."""

from __future__ import annotations

import http.client
import os
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
import trio

from pyweb import cache, db
from pyweb.app.site import Site
from pyweb.testing import serve
from tests.helpers import ReadyWorkers, free_port, ready_workers, serve_command, worker_count

from ..cache.conftest import need_redis, unique_prefix
from ..db.conftest import PG_HOST, PG_PORT, require
from ..db.proxy import Proxy
from ..helpers import until
from .conftest import ROOT, SOAK

pytestmark = pytest.mark.loops("trio", "asyncio")

WRITE_PAGE = (
    "from pyweb import db, qq\n"
    "import os\n"
    "n = conn.form['n']\n"
    "await db.dml(qq('insert into acked (n) values ({n})'))\n"
    "conn.return_(str(os.getpid()))\n"
)


def load(port: int, stop: threading.Event, clients: int = 4) -> dict[str, list]:
    """Keep-alive clients posting writes ``n=<unique>`` until ``stop``; what they saw."""
    seen: dict[str, list] = {"acked": [], "statuses": [], "errors": [], "pids": []}
    lock = threading.Lock()

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        while not stop.is_set():
            n = uuid.uuid4().hex
            try:
                conn.request("POST", "/w", body=f"n={n}",
                             headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
                r = conn.getresponse()
                body = r.read()
                with lock:
                    seen["statuses"].append(r.status)
                    if r.status == 200:
                        seen["acked"].append(n)
                        seen["pids"].append(int(body))
                if r.getheader("connection", "").lower() == "close":
                    conn.close()  # (http.client reconnects on the next request)
            except (OSError, http.client.HTTPException) as exc:
                with lock:
                    seen["errors"].append(repr(exc))
                conn.close()
                time.sleep(0.05)
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    seen["threads"] = threads  # type: ignore[assignment]
    return seen


def finish(seen: dict[str, list], stop: threading.Event) -> None:
    stop.set()
    for t in seen.pop("threads"):
        t.join(30)


def test_a_postgresql_outage_loses_no_acknowledged_write(tmp_path: Path) -> None:
    require(PG_HOST, PG_PORT, "PostgreSQL")
    schema = "pyweb_rel_" + uuid.uuid4().hex[:10]
    admin = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/test"
    direct = db.Database(admin, pools=1, handles=1)
    trio.run(direct.dml, f"create schema {schema}")
    trio.run(direct.dml, f"create table {schema}.acked (n text primary key)")
    proxy = Proxy((PG_HOST, PG_PORT))
    proxy.start()
    site = tmp_path / "site"
    site.mkdir()
    (site / "w.py").write_text(WRITE_PAGE)
    db.configure(f"postgresql://postgres@127.0.0.1:{proxy.port}/test?search_path={schema}",
                 timeout=2.0)  # fmt: skip
    stop = threading.Event()
    try:
        with serve(Site(site, csrf_exempt=["/w"]), error_log=None) as client:
            seen = load(client.server.port, stop)
            statuses = seen["statuses"]
            until(lambda: statuses.count(200) >= 20, "writes acknowledged", limit=60)
            proxy.stop()  # down for a while, under load
            until(lambda: statuses.count(503) >= (200 if SOAK else 20), "the outage seen",
                  limit=120)  # fmt: skip
            proxy.start()
            back = len(statuses)
            until(lambda: statuses[back:].count(200) >= 20, "writes acknowledged again",
                  limit=60)  # fmt: skip
            finish(seen, stop)
        stored = {r["n"] for r in trio.run(direct.list, f"select n from {schema}.acked")}
    finally:
        stop.set()
        db.configure(None)
        proxy.stop()
        trio.run(direct.dml, f"drop schema {schema} cascade")
        direct.close()
    assert seen["acked"], seen["statuses"][:20]
    assert set(seen["acked"]) <= stored  # every acknowledged write is there
    assert 503 in seen["statuses"]  # the outage was seen...
    assert set(seen["statuses"]) <= {200, 503}  # ...as 503s, never a 500
    assert seen["statuses"][-1] == 200  # and it is over


def test_a_redis_outage_keeps_every_page_answering(tmp_path: Path) -> None:
    need_redis()
    proxy = Proxy(("127.0.0.1", 6379))
    proxy.start()
    cache.configure(f"redis://127.0.0.1:{proxy.port}/0?prefix={unique_prefix()}",
                    retry_after=0.2)  # fmt: skip
    site = tmp_path / "site"
    site.mkdir()
    (site / "c.py").write_text(
        "from pyweb.cache import Int, Size, get\n"
        "c = get(Int, Int, 'rel', Size(1000))\n"
        "await c.ainsert(1, (await c.alookup(1) or 0) + 1)\n"
        "conn.return_('ok')\n"
    )
    statuses: list[int] = []
    try:
        with serve(site, error_log=None) as client:
            end = time.monotonic() + 4.0
            cut = False
            while time.monotonic() < end:
                if not cut and time.monotonic() > end - 3.0:
                    proxy.stop()
                    cut = True
                if cut and proxy._listener is None and time.monotonic() > end - 1.0:
                    proxy.start()
                statuses.append(client.get("/c").status)
    finally:
        cache.configure("memory")
        proxy.stop()
    assert statuses and set(statuses) == {200}


def pyweb_serve(site: Path, *args: str) -> tuple[subprocess.Popen, int]:
    """``pyweb serve SITE --workers ...`` from this checkout, on a free port and on the
    test's loop."""
    port = free_port()
    # (the write page is a POST target for scripts, not a form: no CSRF token)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYWEB_SECRET_KEY="reliability-" + "k" * 32)
    errors = tempfile.TemporaryFile("w+")  # (a file, not a pipe nobody reads: it never fills)
    proc = subprocess.Popen(
        serve_command(site, "--port", str(port), "--access-log", "none", "--csrf-exempt", "/w",
                      *args),
        cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=errors, text=True,
    )  # fmt: skip
    # Ready when every worker says it listens: the supervisor's socket accepts (into the
    # backlog) before any worker runs, and on a loaded machine a worker takes seconds.
    ready = ReadyWorkers(proc)
    try:
        ready.wait(worker_count(args))
    except AssertionError as e:
        proc.kill()
        proc.wait()
        errors.seek(0)  # what the supervisor and its workers said, to explain a hung start
        raise AssertionError(f"{e}; ready: {ready.started}; stderr:\n{errors.read()[-4000:]}") from None
    return proc, port


def sqlite_site(tmp_path: Path) -> tuple[Path, Path]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "w.py").write_text(WRITE_PAGE)
    path = tmp_path / "acked.sqlite3"
    with sqlite3.connect(path) as c:
        c.execute("pragma journal_mode=wal")
        c.execute("create table acked (n text primary key)")
    return site, path


def stored(path: Path) -> set[str]:
    with sqlite3.connect(path) as c:
        return {n for (n,) in c.execute("select n from acked")}


def test_max_requests_recycling_under_load_resets_nothing(tmp_path: Path) -> None:
    site, path = sqlite_site(tmp_path)
    proc, port = pyweb_serve(site, "--workers", "2", "--max-requests", "150",
                             "--db", f"sqlite:///{path}")  # fmt: skip
    stop = threading.Event()
    try:
        seen = load(port, stop)
        until(lambda: len(set(seen["pids"])) >= (12 if SOAK else 4), "workers recycled",
              limit=120)  # fmt: skip
        finish(seen, stop)
    finally:
        stop.set()  # (a failure above must not leave the clients running: pytest would hang)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert len(set(seen["pids"])) >= 4, "the workers were recycled"
    assert seen["errors"] == []  # no reset, not one
    assert set(seen["statuses"]) == {200}
    assert set(seen["acked"]) <= stored(path)


def test_a_killed_worker_loses_no_acknowledged_write_and_its_replacement_gets_clients(
    tmp_path: Path,
) -> None:
    site, path = sqlite_site(tmp_path)
    proc, port = pyweb_serve(site, "--workers", "2", "--keepalive-requests", "20",
                             "--db", f"sqlite:///{path}")  # fmt: skip
    stop = threading.Event()
    try:
        seen = load(port, stop, clients=6)
        pids = seen["pids"]
        until(lambda: len(pids) >= 100 and len(set(pids)) == 2, "both workers serving",
              limit=60)  # fmt: skip
        victim = pids[-1]
        os.kill(victim, signal.SIGKILL)
        killed_at = len(pids)
        before = set(pids[:killed_at])
        ready_workers(proc).wait(3)  # the replacement listens (however long it took)
        ready_at = len(pids)

        def replaced() -> bool:  # the replacement has its share of many requests since
            since = pids[ready_at:]
            return len(since) >= 300 and len([p for p in since if p not in before]) > len(since) / 4

        until(replaced, "the replacement to get its share of the clients", limit=60)
        finish(seen, stop)
    finally:
        stop.set()  # (a failure above must not leave the clients running: pytest would hang)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    after = seen["pids"][killed_at:]
    assert victim not in after[50:]
    before = set(seen["pids"][:killed_at])
    since = seen["pids"][ready_at:]
    newcomers = [p for p in since if p not in before]
    assert len(newcomers) > len(since) / 5, "the replacement got its share of the clients"
    assert len(seen["errors"]) <= 6  # at most the requests in flight on the killed worker
    assert set(seen["acked"]) <= stored(path)
