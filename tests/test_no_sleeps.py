"""Tests wait on events, never on the wall clock: a fixed ``sleep`` is too short on a loaded
machine and too long everywhere else. This walks every file of tests/ with ``ast``
(``scripts/count_private.py``'s :func:`bare_sleeps`) and refuses a sleep statement outside a
loop, unless it is named below with its reason. To wait for something, use
``tests.helpers.until`` (a poll with a deadline), an event, or a virtual clock."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location(
    "count_private", ROOT / "scripts" / "count_private.py"
)
assert _spec is not None and _spec.loader is not None
count_private = importlib.util.module_from_spec(_spec)
sys.modules["count_private"] = count_private  # (dataclasses look their module up there)
_spec.loader.exec_module(count_private)

VIRTUAL_TIME = {
    "tests/events/": "conftest.py runs every coroutine test on virtual time (MockClock, "
    "VirtualClockLoop): a sleep moves the clock, it does not wait",
    "tests/test_runtime_semaphore.py": "on virtual time (pyweb.runtime.testing.run)",
    "tests/test_chat.py": "speak runs under trio's MockClock(autojump_threshold=0)",
}
"""Files (or folders) whose sleeps move a virtual clock."""

SUBJECT = {
    ("tests/cache/test_exchange.py", "slow_foreign_site"): "the slow foreign site the page fetches",
    ("tests/cache/test_memoize.py", "slow_increment"): "the slow computation memoize shares",
    ("tests/cache/test_memoize.py", "slow_failure"): "the slow failing computation memoize shares",
    ("tests/cache/test_memoize.py", "slow_rate"): "the slow computation memoize shares",
    ("tests/cache/test_memoize.py", "site_down_once"): "the slow computation memoize shares, "
    "failing the first time",
    ("tests/cache/test_memoize.py", "slow_double"): "the slow computation memoize shares",
    ("tests/db/test_db.py", "count_up_to"): "a step of a fold that lets others interleave",
    ("tests/db/test_pool_property.py", "inner"): "a step of a fold that lets others interleave",
    ("tests/db/test_outages.py", "shut_down"): "the proxy imitates a server going down: "
    "its message first, the close a moment later",
    ("tests/server/conftest.py", "app"): "the slow handler being served",
    ("tests/server/test_aio_operations.py", "handler"): "the slow handler being served",
    ("tests/server/test_schedulers.py", "handler"): "the handler being served yields mid-page",
    ("tests/test_jobs_after.py", "work"): "the background work the drain waits for or "
    "cancels, on trio's MockClock",
    ("tests/test_bridge.py", "query"): "the query run on the other loop takes a moment",
    ("tests/test_bridge.py", "slow"): "the query that the test cancels",
}
"""Sleeps inside the code a test exercises (a page, a handler, a computation): they are the
subject, not a wait."""

REAL_TIME = {
    ("tests/cache/test_kinds.py", "test_real_time_smoke"): "the one test that entries "
    "expire on the real clock (a poll would keep a WhileUsed entry alive)",
    (
        "tests/hardening/test_keepalive_recycle.py",
        "test_keepalive_time_ends_an_old_connection_with_close",
    ): "keepalive_time: the "
    "connection must have lived that long on the server's clock, in another thread",
    (
        "tests/server/test_aio_operations.py",
        "test_keepalive_time_closes_a_connection_that_lived_that_long",
    ): "keepalive_time, as above, on asyncio",
    ("tests/server/test_reload_keeps_settings.py", "slow_post"): "a body stalled longer than "
    "the new body_timeout and shorter than the old one",
    (
        "tests/server/test_aio_operations.py",
        "test_a_large_file_reaches_a_slow_reader_whole",
    ): "the reader is slow on purpose: too short a pause weakens the test, it cannot fail it",
    ("tests/cluster/cluster.py", "check_writes"): "the cluster harness (make test-cluster, "
    "not make test): the length of a load run under a killed host",
    ("tests/cluster/cluster.py", "check_push"): "the cluster harness (make test-cluster, "
    "not make test), which needs containers this suite does not start",
}
"""Sleeps where real elapsed time is what the test is about, or a harness outside make test."""


def _allowed(finding) -> bool:
    key = (finding.path, finding.function)
    return (
        any(finding.path.startswith(prefix) for prefix in VIRTUAL_TIME)
        or key in SUBJECT
        or key in REAL_TIME
    )


def test_no_new_fixed_waits_in_tests():
    waits = [
        finding for finding in count_private.bare_sleeps(ROOT / "tests") if not _allowed(finding)
    ]
    assert not waits, (
        "fixed sleeps in tests (wait with tests.helpers.until, an event or a virtual clock):\n"
        + "\n".join(str(finding) for finding in waits)
    )


def test_every_named_exception_is_still_needed():
    found = {(f.path, f.function) for f in count_private.bare_sleeps(ROOT / "tests")}
    stale = [key for key in (*SUBJECT, *REAL_TIME) if key not in found]
    assert not stale, f"these exceptions no longer sleep: remove them from the list: {stale}"


def test_the_rule_sees_a_fixed_wait_and_spares_polls_and_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setattr(count_private, "ROOT", tmp_path)
    (tmp_path / "test_x.py").write_text(
        textwrap.dedent("""\
        import time, trio

        def test_waits():
            time.sleep(0.3)

        async def test_async_waits():
            await trio.sleep(1)

        def test_polls(ready):
            while not ready():
                time.sleep(0.01)

        async def test_checkpoints():
            await trio.sleep(0)
            sleep = "time.sleep(1) in a page's source is text"
        """)
    )
    found = count_private.bare_sleeps(tmp_path)
    assert [(f.function, f.text) for f in found] == [
        ("test_waits", "time.sleep(0.3)"),
        ("test_async_waits", "trio.sleep(1)"),
    ]
