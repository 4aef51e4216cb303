"""Sessions shared by the workers of `pyweb serve --workers 2 --cache redis://...`: a session
started on one worker process is read, changed and ended on the other (the data lives in
the Redis-backed ``pyweb.sessions`` cache, the browser holds only the signed id). On both
loops: the workers run on the test's loop (``serve_command`` adds ``--loop``)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from pyweb import testing
from tests.helpers import free_port

from ..app.conftest import write_site
from ..helpers import serve_command
from .conftest import REDIS_URL, need_redis, unique_prefix

pytestmark = pytest.mark.loops("trio", "asyncio")

SITE = {
    "visits.py": """
        import os
        conn.session["n"] = conn.session.get("n", 0) + 1
        conn.return_(f"{conn.session['n']} {os.environ.get('PYWEB_WORKER_ID')}")
    """,
    "bye.py": """
        conn.session.clear()
        conn.return_("bye")
    """,
}


def test_two_workers_share_sessions_through_redis(tmp_path: Path):
    need_redis()
    root = write_site(tmp_path / "site", SITE)
    port = free_port()
    url = f"{REDIS_URL}?prefix={unique_prefix()}"
    proc = subprocess.Popen(
        serve_command(root, "--port", str(port), "--workers", "2", "--cache", url,
                      "--access-log", "none"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYWEB_SECRET_KEY": "two-workers-share-this-key-0123"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        browser = None
        while browser is None:
            try:
                probe = testing.Client(f"http://127.0.0.1:{port}")
                probe.get("/bye")
                browser = probe
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "server did not start"
                time.sleep(0.1)
        counts, workers = [], set()
        deadline = time.monotonic() + 60  # the second worker may still be starting
        while (len(workers) < 2 or len(counts) < 6) and time.monotonic() < deadline:
            browser.close()  # a new connection each time: the kernel picks a worker
            n, worker = browser.get("/visits").text.split()
            counts.append(int(n))
            workers.add(worker)
        assert len(workers) == 2, workers  # both workers served this one session
        assert counts == list(range(1, len(counts) + 1))  # one session across both
        browser.close()
        browser.get("/bye")
        browser.close()
        assert browser.get("/visits").text.split()[0] == "1"  # cleared: a new session
    finally:
        proc.terminate()
        proc.wait(20)
