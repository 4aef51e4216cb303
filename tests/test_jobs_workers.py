"""Exactly once with real workers: ``pyweb serve --workers 2 --cache redis://...`` runs a job
every second in two processes that share Redis; each due second is run by one of them, the
status page of either worker shows the job, and ``pyweb jobs`` reads its record. With the
in-memory cache only worker 0 runs jobs. On both loops."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import http_request, reachable, start_serve, stop_serve, until, write_site

pytestmark = [pytest.mark.timeout(120), pytest.mark.loops("trio", "asyncio")]

SITE = {
    "ticker.py": """
        import os, time
        import pyweb

        @pyweb.every(1)
        def tick():
            # one line per run: the second it ran for, and who ran it
            with open(os.path.join(os.path.dirname(__file__), "ticks.txt"), "a") as f:
                f.write(f"{int(time.time())} {os.getpid()}\\n")
    """,
    "index.py": "conn.return_('hello')\n",
}


def redis_url() -> str:
    if not reachable("127.0.0.1", 6379, timeout=0.5):
        if os.environ.get("CI") == "true":
            raise AssertionError("Redis is not running on 127.0.0.1:6379")
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    return f"redis://127.0.0.1:6379/0?prefix=pyweb-test-{uuid.uuid4().hex[:8]}:"


def forget(url: str) -> None:
    """Remove the test's keys (its own prefix) from the shared Redis."""
    import redis

    prefix = url.split("prefix=", 1)[1]
    client = redis.Redis(host="127.0.0.1", port=6379)
    keys = list(client.scan_iter(match=prefix + "*", count=1000))
    if keys:
        client.unlink(*keys)


def ticks(site: Path) -> list[tuple[int, int]]:
    path = site / "ticks.txt"
    if not path.exists():
        return []
    return [tuple(map(int, line.split())) for line in path.read_text().splitlines() if line]


def status_of_some_worker(port: int) -> dict:
    status, body = http_request(port, "/_pyweb/status")
    assert status == 200
    return json.loads(body)


def test_two_workers_on_redis_run_each_due_second_exactly_once(tmp_path: Path, loop: str) -> None:
    site = write_site(tmp_path / "site", SITE)
    url = redis_url()
    proc, port = start_serve(site, "--workers", "2", "--cache", url, "--status")
    try:
        until(lambda: len(ticks(site)) >= 6, "six runs of the job", limit=60)
        seconds = [second for second, _ in ticks(site)]
        assert len(seconds) == len(set(seconds)), f"a second was run twice: {ticks(site)}"
        assert http_request(port, "/index")[0] == 200  # serving all along
        jobs = status_of_some_worker(port)["jobs"]
        assert jobs["runs_here"] is True and jobs["store"].startswith("redis")
        (row,) = jobs["jobs"]
        assert row["name"] == "ticker.tick" and row["when"] == "every 1 s"
        until(lambda: status_of_some_worker(port)["jobs"]["jobs"][0]["outcome"] == "ok",
              "the status page to show a run")  # fmt: skip
    finally:
        assert stop_serve(proc) == 0
    listing = subprocess.run([sys.executable, "-m", "pyweb", "jobs", str(site), "--cache", url],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    assert "ticker.tick" in listing.stdout and listing.stdout.splitlines()[1].endswith("ok")
    print(listing.stdout)  # (the report quotes it)
    seconds = [second for second, _ in ticks(site)]
    assert len(seconds) == len(set(seconds))
    # both workers took part (each took some leases), or one did all: never both for one
    assert len({pid for _, pid in ticks(site)}) in (1, 2)
    forget(url)


def test_with_the_memory_cache_only_worker_0_runs_jobs(tmp_path: Path, loop: str) -> None:
    site = write_site(tmp_path / "site", SITE)
    proc, port = start_serve(site, "--workers", "2", "--status")
    try:
        until(lambda: len(ticks(site)) >= 3, "three runs of the job", limit=60)
        seen: dict[str, bool] = {}
        deadline = time.monotonic() + 30
        while len(seen) < 2 and time.monotonic() < deadline:  # ask until both answered
            status = status_of_some_worker(port)
            seen[status["worker"]] = status["jobs"]["runs_here"]
        assert seen == {"0": True, "1": False}
        assert len({pid for _, pid in ticks(site)}) == 1
        seconds = [second for second, _ in ticks(site)]
        assert len(seconds) == len(set(seconds))
    finally:
        assert stop_serve(proc) == 0
