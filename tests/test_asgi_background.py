"""What runs beside the requests of a site served by an ASGI server (pyweb.asgi), under a
real uvicorn started as a process: ``conn.after`` work starts once the last
``http.response.body`` message is sent, the scheduled jobs start with the lifespan and run
exactly once per due time however many processes serve the site (the site's ``data/``
lease, or Redis's), and the lifespan's shutdown gives pending work its grace.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import ReadAlong, free_port, reachable, until, write_site

pytestmark = pytest.mark.timeout(90)

BIN = Path(sys.executable).parent

SITE = {
    # The body streams: its second piece waits for the test. The work after the reply
    # writes after the body's last piece, never beside the page.
    "stream.py": """
        import os
        from pyweb import runtime

        here = os.path.dirname(__file__)

        def note(what):
            with open(os.path.join(here, "log.txt"), "a") as f:
                f.write(what + "\\n")

        async def body():
            yield "first\\n"
            while not os.path.exists(os.path.join(here, "release")):
                await runtime.sleep(0.01)
            note("body-end")
            yield "last\\n"

        async def later():
            note("after")

        conn.after(later)
        conn.return_(body(), content_type="text/plain")
    """,
    # The work waits for the test: the shutdown must wait for it (after_grace).
    "slow_work.py": """
        import os
        from pyweb import runtime

        here = os.path.dirname(__file__)

        async def later():
            while not os.path.exists(os.path.join(here, "release-work")):
                await runtime.sleep(0.01)
            with open(os.path.join(here, "work-done.txt"), "w") as f:
                f.write("done")

        conn.after(later)
        conn.return_("queued")
    """,
    "_tick.py": """
        import os, time
        with open(os.path.join(os.path.dirname(__file__), "ticks.txt"), "a") as f:
            f.write(f"{time.time()} {os.getpid()}\\n")
    """,
    "pyweb.toml": '[[schedule]]\nscript = "_tick.py"\nevery = 2\n',
}


@contextmanager
def uvicorn(site: Path, *, env: dict[str, str] | None = None) -> Iterator[tuple[int, subprocess.Popen[str], ReadAlong]]:
    """``PYWEB_SITE=site uvicorn pyweb.asgi:app`` with its lifespan, on a free port."""
    port = free_port()
    proc = subprocess.Popen(
        [str(BIN / "uvicorn"), "pyweb.asgi:app", "--host", "127.0.0.1", "--port", str(port),
         "--lifespan", "on", "--log-level", "info"],
        env=dict(os.environ, PYWEB_SITE=str(site), **(env or {})),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    output = ReadAlong(proc.stderr)
    try:
        until(lambda: output.has("Uvicorn running on") or proc.poll() is not None, "uvicorn")
        assert proc.poll() is None, output.text()
        yield port, proc, output
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site", SITE)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_work_after_the_reply_starts_after_the_last_body_message(site: Path) -> None:
    with uvicorn(site) as (port, _proc, _output):
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        client.request("GET", "/stream")
        response = client.getresponse()
        assert response.status == 200
        assert response.read(6) == b"first\n"  # the reply is under way, its page has ended
        (site / "release").touch()
        assert response.read() == b"last\n"
        client.close()
        until(lambda: len(lines(site / "log.txt")) == 2, "the work after the reply")
    # (beside the page, the work would have written first, while the body waited)
    assert lines(site / "log.txt") == ["body-end", "after"]


def test_the_lifespan_shutdown_waits_for_pending_work(site: Path) -> None:
    with uvicorn(site) as (port, proc, output):
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        client.request("GET", "/slow_work")
        assert client.getresponse().read() == b"queued"
        client.close()
        proc.send_signal(signal.SIGTERM)
        until(lambda: output.has("Waiting for application shutdown"), "the lifespan shutdown")
        assert not (site / "work-done.txt").exists()
        (site / "release-work").touch()  # only now can the work end: the shutdown waited
        # (uvicorn ends a graceful shutdown by raising the signal again on itself)
        assert proc.wait(timeout=30) in (0, -signal.SIGTERM), output.text()
    assert output.has("Application shutdown complete"), output.text()
    assert (site / "work-done.txt").read_text() == "done"


def ticks(site: Path) -> list[tuple[float, str]]:
    return [(float(t), pid) for t, pid in (line.split() for line in lines(site / "ticks.txt"))]


def assert_once_per_due_time(runs: list[tuple[float, str]], period: float) -> None:
    """Two runs of one due time come milliseconds apart; runs of successive due times
    about a period apart. Half a period apart or more: never the same due time twice."""
    times = sorted(t for t, _pid in runs)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(gap > period / 2 for gap in gaps), runs


def test_jobs_start_with_the_lifespan_and_run_once_in_two_processes(site: Path) -> None:
    """Two uvicorn processes on one site, with the in-memory cache: each runs the
    scheduler, and the lease in the site's data/jobs.json lets one run each due time."""
    with uvicorn(site), uvicorn(site):
        until(lambda: len(ticks(site)) >= 3, "three runs of the job", limit=30)
    assert_once_per_due_time(ticks(site), 2.0)
    assert (site / "data" / "jobs.json").exists()  # the leases were the file's


def test_jobs_run_once_in_two_processes_sharing_redis(site: Path) -> None:
    if not reachable("127.0.0.1", 6379, timeout=0.5):
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    env = {"PYWEB_CACHE": f"redis://127.0.0.1:6379/0?prefix=pyweb-test-{uuid.uuid4().hex[:8]}:"}
    with uvicorn(site, env=env), uvicorn(site, env=env):
        until(lambda: len(ticks(site)) >= 3, "three runs of the job", limit=30)
    assert_once_per_due_time(ticks(site), 2.0)
    assert not (site / "data" / "jobs.json").exists()  # the leases were Redis's
