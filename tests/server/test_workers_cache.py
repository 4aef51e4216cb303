"""``--workers N`` on the per-process cache refuses a site whose state lives in the cache
(pyweb.app.sharing).

Before: with the default memory cache and ``--workers 2``, 5 of 12 requests to a logged-in
page went back to /login and 4 of 6 POSTs got 403, and nothing warned at start.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from pyweb.app.sharing import shared_state_uses, workers_need_shared_cache
from tests.helpers import serve_command, start_serve, stop_serve, write_site

pytestmark = pytest.mark.timeout(120)

SESSIONS = {"count.py": 'n = conn.session.get("n", 0) + 1\nconn.session["n"] = n\nconn.return_(str(n))'}
PUSH = {"feed.py": "from pyweb.push import SharedMulticast\nconn.return_('feed')"}
PLAIN = {"hello.py": 'conn.return_("<h1>hello</h1>")'}


def wait_for_workers(proc: subprocess.Popen) -> None:
    """Read the workers' "ready" lines (a SIGTERM before them would be a drain too: the
    supervisor prints its banner once its signal handlers are in)."""
    ready = 0
    while ready < 2:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line, "the supervisor ended before its workers were ready"
        ready += " ready" in line


def test_what_a_site_keeps_in_the_cache_is_named(tmp_path):
    assert shared_state_uses(str(write_site(tmp_path / "a", SESSIONS))) == [
        "sessions, login, CSRF-protected forms or login limits"
    ]
    assert shared_state_uses(str(write_site(tmp_path / "b", PUSH))) == ["server push (pyweb.push)"]
    assert shared_state_uses(str(write_site(tmp_path / "c", PLAIN))) == []


def test_only_several_workers_on_the_memory_cache_need_it(tmp_path):
    site = str(write_site(tmp_path / "a", SESSIONS))
    assert workers_need_shared_cache(site, 1, None) is None
    assert workers_need_shared_cache(site, 2, "redis://127.0.0.1:6379/0") is None
    for cache in (None, "memory"):
        reason = workers_need_shared_cache(site, 2, cache)
        assert reason and 'cache = "redis://' in reason and "per_process_cache" in reason


def test_serve_refuses_two_workers_on_the_memory_cache(tmp_path):
    site = write_site(tmp_path / "site", SESSIONS)
    done = subprocess.run(
        serve_command(site, "--port", "0", "--workers", "2"),
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, PYWEB_SECRET_KEY="test-key-0123456789abcdef0123456789"),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "uses sessions" in done.stderr and 'cache = "redis://' in done.stderr


def serves_two_workers(site) -> None:
    """``pyweb serve SITE --workers 2`` starts both workers, and stops cleanly."""
    proc = subprocess.Popen(
        serve_command(site, "--port", "0", "--workers", "2", "--access-log", "none"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert "with 2 workers" in proc.stdout.readline()  # type: ignore[union-attr]
        wait_for_workers(proc)
    finally:
        assert stop_serve(proc) == 0


def test_a_site_that_keeps_nothing_in_the_cache_still_runs_two_workers(tmp_path):
    serves_two_workers(write_site(tmp_path / "site", PLAIN))


def test_per_process_cache_is_the_explicit_opt_out(tmp_path):
    site = write_site(tmp_path / "site", SESSIONS)
    (site / "pyweb.toml").write_text(
        'per_process_cache = true\nsecret_key = "test-key-0123456789abcdef0123456789"\n'
    )
    serves_two_workers(site)


def test_one_worker_on_the_memory_cache_is_fine(tmp_path):
    site = write_site(tmp_path / "site", SESSIONS)
    (site / "pyweb.toml").write_text('secret_key = "test-key-0123456789abcdef0123456789"\n')
    proc, port = start_serve(site)
    assert stop_serve(proc) == 0
