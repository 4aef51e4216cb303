"""Work after the reply (``conn.after``, pyweb/app/after.py) over real sockets on both loops:
it starts only once the reply is out, sync work runs in a thread, a failure is logged with
the page and line and the server goes on, a failed page drops its work, the number pending
is bounded, and the drain at shutdown waits, then cancels. Also: a page can no longer stop
the server through ``pyweb.runtime.spawn_background``."""

from __future__ import annotations

import io
import threading
from pathlib import Path

import pytest
import trio
import trio.testing

import pyweb.testing
from pyweb.app import after
from pyweb.app.after import AfterWork, Batch
from tests.helpers import until, write_site

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

PAGES = {
    # the work waits for the test to release it: the reply cannot have waited for the work
    "slow.py": """
        import os
        from pyweb import runtime

        here = os.path.dirname(__file__)

        async def later(name):
            while not os.path.exists(os.path.join(here, "release")):
                await runtime.sleep(0.01)
            with open(os.path.join(here, "done.txt"), "w") as f:
                f.write(name)

        conn.after(later, conn.form.get("name", "?"))
        conn.return_("thanks")
    """,
    "threaded.py": """
        import os, threading

        def write(path):
            with open(path, "w") as f:
                f.write(threading.current_thread().name)

        conn.after(write, os.path.join(os.path.dirname(__file__), "thread.txt"))
        conn.return_("ok")
    """,
    "broken.py": """
        def fails():
            return 1 / 0

        conn.return_("fine")
        conn.after(fails)
    """,
    "crashes.py": """
        import os

        def write():
            open(os.path.join(os.path.dirname(__file__), "never.txt"), "w").close()

        conn.after(write)
        raise RuntimeError("the page fails after handing over its work")
    """,
    "globals.py": """
        import os
        GREETING = "kept"

        async def later():
            # the page's globals are still there after the reply
            with open(os.path.join(os.path.dirname(__file__), "globals.txt"), "w") as f:
                f.write(GREETING)

        conn.after(later)
        conn.return_("ok")
    """,
    "spawn.py": """
        from pyweb import runtime

        async def oops():
            raise NameError("page globals are gone")

        runtime.spawn_background(oops)
        conn.return_("spawned")
    """,
    # the site's own database (no --db): the work finds it as the page would
    "counted.py": """
        from pyweb import db

        async def count():
            await db.dml(db.qq("CREATE TABLE IF NOT EXISTS visits (n INTEGER)"))
            await db.dml(db.qq("INSERT INTO visits VALUES (1)"))

        conn.after(count)
        conn.return_("counted")
    """,
    "visits.py": """
        from pyweb import db

        conn.return_(str(await db.one_field(db.qq("SELECT count(*) FROM visits"))))
    """,
    "index.py": "conn.return_('alive')\n",
}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site", PAGES)


def test_the_work_runs_once_the_reply_is_sent(site: Path, loop: str) -> None:
    with pyweb.testing.serve(site) as client:
        response = client.get("/slow?name=ada")
        assert (response.status, response.text) == (200, "thanks")
        assert not (site / "done.txt").exists()  # the reply did not wait for the work
        (site / "release").touch()
        # (the file exists as soon as it is opened: wait for what is written in it)
        until(lambda: (site / "done.txt").exists() and (site / "done.txt").read_text() == "ada",
              "the work after the reply")


def test_plain_functions_run_in_a_worker_thread(site: Path, loop: str) -> None:
    with pyweb.testing.serve(site) as client:
        assert client.get("/threaded").status == 200
        until(lambda: (site / "thread.txt").exists(), "the threaded work")
    assert (site / "thread.txt").read_text() != threading.main_thread().name


def test_the_page_globals_outlive_the_reply_for_the_work(site: Path, loop: str) -> None:
    with pyweb.testing.serve(site) as client:
        assert client.get("/globals").status == 200
        until(lambda: (site / "globals.txt").exists(), "the work")
    assert (site / "globals.txt").read_text() == "kept"


def test_the_work_uses_the_site_database_of_its_page(site: Path, loop: str) -> None:
    errors = io.StringIO()
    with pyweb.testing.serve(site, error_log=errors) as client:
        for _ in range(2):
            assert client.get("/counted").text == "counted"
        until(lambda: client.get("/visits").text == "2", "two visits counted after the replies")
    assert "no database configured" not in errors.getvalue()
    assert "failed" not in errors.getvalue()


def test_a_failing_piece_of_work_is_logged_with_page_and_line(site: Path, loop: str) -> None:
    errors = io.StringIO()
    with pyweb.testing.serve(site, error_log=errors) as client:
        assert client.get("/broken").text == "fine"
        until(lambda: "ZeroDivisionError" in errors.getvalue(), "the error in the log")
        assert client.get("/index").text == "alive"  # the server goes on
    text = errors.getvalue()
    assert "work after the reply failed: fails() from" in text
    assert "broken.py line 5" in text


def test_a_page_that_fails_drops_its_work(site: Path, loop: str) -> None:
    errors = io.StringIO()
    with pyweb.testing.serve(site, error_log=errors) as client:
        assert client.get("/crashes").status == 500
        until(lambda: "dropped" in errors.getvalue(), "the drop in the log")
        assert client.get("/index").text == "alive"
    assert not (site / "never.txt").exists()
    assert "work after the reply dropped: write() from" in errors.getvalue()
    assert "its page answered 500" in errors.getvalue()


def test_past_the_limit_conn_after_is_a_503(site: Path, loop: str) -> None:
    old = after.WORK.limit
    after.WORK.limit = after.WORK.pending + 1
    try:
        with pyweb.testing.serve(site) as client:
            assert client.get("/slow?name=first").status == 200  # pending: waits for release
            refused = client.get("/slow?name=second")
            assert refused.status == 503
            (site / "release").touch()
            until(lambda: (site / "done.txt").exists(), "the first piece of work")
            until(lambda: after.WORK.pending == 0, "nothing pending")
            assert client.get("/slow?name=third").status == 200
    finally:
        after.WORK.limit = old
    until(lambda: (site / "done.txt").read_text() == "third", "the third piece of work")


def test_spawn_background_from_a_page_cannot_stop_the_server(site: Path, loop: str) -> None:
    errors = io.StringIO()
    with pyweb.testing.serve(site, error_log=errors) as client:
        assert client.get("/spawn").text == "spawned"
        until(lambda: "page globals are gone" in errors.getvalue(), "the task's error in the log")
        assert "background task oops failed (the server goes on)" in errors.getvalue()
        for _ in range(3):
            assert client.get("/index").text == "alive"


# ---- the drain at shutdown, on virtual time --------------------------------------------------


@pytest.mark.loops("trio")
def test_the_drain_waits_for_quick_work_and_cancels_slow_work(loop: str) -> None:
    finished: list[str] = []

    async def work(name: str, seconds: float) -> None:
        await trio.sleep(seconds)
        finished.append(name)

    async def main() -> tuple[float, int]:
        pool = AfterWork(limit=10)
        batch = Batch(pool)
        pool.submit(batch, work, ("quick", 5.0), "page.py", 3)
        pool.submit(batch, work, ("slow", 500.0), "page.py", 4)
        batch.sent(200)
        start = trio.current_time()
        await pool.drain(30.0)
        return trio.current_time() - start, pool.pending

    took, pending = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert finished == ["quick"]
    assert 30.0 <= took < 32.0 and pending == 0


@pytest.mark.loops("trio")
def test_the_drain_returns_at_once_when_nothing_is_pending(loop: str) -> None:
    async def main() -> float:
        start = trio.current_time()
        await AfterWork().drain(30.0)
        return trio.current_time() - start

    assert trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0)) < 1.0


# ---- the drain in a real `pyweb serve`: SIGTERM waits for the work, then cancels it ----------

DRAIN_SITE = {
    "quick.py": """
        import os
        from pyweb import runtime

        async def later():
            await runtime.sleep(0.5)
            open(os.path.join(os.path.dirname(__file__), "quick.txt"), "w").close()

        conn.after(later)
        conn.return_("ok")
    """,
    "forever.py": """
        from pyweb import runtime

        async def later():
            await runtime.sleep(3600)

        conn.after(later)
        conn.return_("ok")
    """,
}


def test_sigterm_drains_the_work_within_the_grace_then_cancels_it(tmp_path: Path, loop: str) -> None:
    from tests.helpers import http_request, start_serve, stop_serve

    site = write_site(tmp_path / "site", DRAIN_SITE)
    proc, port = start_serve(site, "--after-grace", "2")
    assert http_request(port, "/quick") == (200, b"ok")
    assert http_request(port, "/forever") == (200, b"ok")
    assert stop_serve(proc) == 0  # returns within the grace, not after an hour
    assert (site / "quick.txt").exists()  # the quick work finished before the exit
    err = proc.stderr.read()  # type: ignore[union-attr]
    assert "work after the reply cancelled at shutdown: later() from" in err
    assert "forever.py line 6" in err
