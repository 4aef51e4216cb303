"""Scheduled jobs (pyweb.jobs): due times, the scheduler on virtual time, leases in Redis and
in the site's data file, ``[[schedule]]`` in pyweb.toml, and ``pyweb jobs``."""

from __future__ import annotations

import logging
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

import pyweb
from pyweb.jobs import Daily, Every, FileStore, Job, RedisStore, Scheduler, Weekly, read_schedule
from pyweb.jobs.timing import parse_day
from tests.helpers import reachable, write_site

T0 = 1_800_000_000.0  # a Unix time well in the future of the test data: 2027-01-15


def virtual_clock() -> float:
    """Wall time that follows trio's virtual clock (a day passes in milliseconds)."""
    return T0 + trio.current_time()


def run_virtual(fn, *args):
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


# ---- when a job is due -----------------------------------------------------------------------

times = st.floats(min_value=1e9, max_value=4e9, allow_nan=False)


@given(t=times, seconds=st.integers(min_value=1, max_value=10**6))
def test_every_is_due_at_the_multiples_of_its_period(t: float, seconds: int) -> None:
    when = Every(seconds)
    last, nxt = when.last_due(t), when.next_due(t)
    assert last <= t < nxt
    assert nxt - last == seconds
    assert last % seconds == 0


@given(t=times, hour=st.integers(0, 23), minute=st.integers(0, 59))
def test_daily_is_due_once_a_day_at_its_local_time(t: float, hour: int, minute: int) -> None:
    when = Daily(hour, minute)
    last, nxt = when.last_due(t), when.next_due(t)
    assert last <= t < nxt
    for due in (last, nxt):
        local = datetime.fromtimestamp(due)
        # (a time that does not exist on a DST day moves by the shift)
        assert (local.minute, local.second) == (minute, 0)
    assert 82800 <= nxt - last <= 90000


@given(t=times, day=st.integers(0, 6), hour=st.integers(0, 23), minute=st.integers(0, 59))
def test_weekly_is_due_once_a_week_on_its_day(t: float, day: int, hour: int, minute: int) -> None:
    when = Weekly(day, hour, minute)
    last, nxt = when.last_due(t), when.next_due(t)
    assert last <= t < nxt
    assert 7 * 86400 - 3600 <= nxt - last <= 7 * 86400 + 3600
    assert datetime.fromtimestamp(last).weekday() == day
    assert datetime.fromtimestamp(nxt).weekday() == day


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: Every(0), "positive number of seconds, got 0"),
        (lambda: Every(True), "got True"),
        (lambda: Daily(24, 0), "hour is a whole number from 0 to 23, got 24"),
        (lambda: Daily(3, 60), "minute is a whole number from 0 to 59, got 60"),
        (lambda: parse_day("someday"), "got 'someday'"),
        (lambda: pyweb.every(-5), "got -5"),
    ],
)
def test_bad_times_are_refused_naming_the_value(make, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        make()


def test_days_are_named_or_numbered() -> None:
    assert parse_day("Sunday") == parse_day("sun") == parse_day(6) == 6
    assert pyweb.weekly(day="monday", hour=4)(lambda: None).when == Weekly(0, 4, 0)


def test_the_decorators_keep_the_function_callable_and_name_the_job() -> None:
    @pyweb.daily(hour=3, minute=30)
    def tidy() -> str:
        return "tidied"

    assert isinstance(tidy, Job)
    assert tidy() == "tidied"
    assert tidy.name.endswith("tidy") and str(tidy.when) == "daily at 03:30"
    with pytest.raises(TypeError, match="takes no parameters"):
        pyweb.every(60)(lambda x: x)


# ---- the scheduler on virtual time --------------------------------------------------------


def job(name: str, when, fn, timeout: float | None = None) -> Job:
    return Job(name, when, fn, timeout=timeout)


def test_a_job_runs_once_per_due_time_on_virtual_time(tmp_path: Path) -> None:
    runs: list[float] = []

    async def tick() -> None:
        runs.append(virtual_clock())

    async def main() -> None:
        scheduler = Scheduler([job("tick", Every(60), tick)], FileStore(str(tmp_path)),
                              clock=virtual_clock)  # fmt: skip
        with trio.move_on_after(600 + 1):  # ten virtual minutes
            await scheduler.run()
        return scheduler.status()

    status = run_virtual(main)
    assert runs == [(T0 // 60 + k) * 60 for k in range(1, 11)]
    (row,) = status
    assert row["outcome"] == "ok" and row["name"] == "tick" and row["when"] == "every 60 s"


def test_a_job_that_raises_or_hangs_is_logged_and_the_others_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls = {"broken": 0, "stuck": 0, "fine": 0}

    async def broken() -> None:
        calls["broken"] += 1
        raise KeyError("no such guest")

    async def stuck() -> None:
        calls["stuck"] += 1
        await trio.sleep_forever()

    async def fine() -> None:  # (a thread would let the virtual clock jump past its timeout)
        calls["fine"] += 1

    async def main() -> list:
        jobs = [job("broken", Every(10), broken), job("stuck", Every(10), stuck, timeout=3),
                job("fine", Every(10), fine)]  # fmt: skip
        scheduler = Scheduler(jobs, FileStore(str(tmp_path)), clock=virtual_clock)
        with trio.move_on_after(35):
            await scheduler.run()
        return scheduler.status()

    with caplog.at_level(logging.ERROR, logger="pyweb.jobs"):
        status = run_virtual(main)
    assert calls == {"broken": 3, "stuck": 3, "fine": 3}
    outcomes = {row["name"]: row["outcome"] for row in status}
    assert outcomes == {"broken": "failed: KeyError: 'no such guest'",
                        "stuck": "timed out after 3 s", "fine": "ok"}  # fmt: skip
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("job broken (due ") and m.endswith("failed") for m in messages)
    assert any("job stuck" in m and "timed out after 3 s" in m for m in messages)


def test_a_plain_function_runs_in_a_worker_thread() -> None:
    import threading

    seen: list[str] = []

    @pyweb.every(60)
    def sweep() -> None:
        seen.append(threading.current_thread().name)

    trio.run(sweep.run)
    assert seen and seen[0] != threading.main_thread().name


def test_a_daily_job_runs_once_a_virtual_day(tmp_path: Path) -> None:
    runs: list[datetime] = []

    async def nightly() -> None:
        runs.append(datetime.fromtimestamp(virtual_clock()))

    async def main() -> None:
        scheduler = Scheduler([job("nightly", Daily(3, 0), nightly)], FileStore(str(tmp_path)),
                              clock=virtual_clock)  # fmt: skip
        with trio.move_on_after(3 * 86400):
            await scheduler.run()

    run_virtual(main)
    assert len(runs) == 3
    assert all((r.hour, r.minute, r.second) == (3, 0, 0) for r in runs)


@pytest.mark.parametrize("missed, expected", [("run", 1), ("skip", 0)])
def test_a_run_missed_while_down_runs_once_at_start_up_or_is_skipped(
    tmp_path: Path, missed: str, expected: int
) -> None:
    store = FileStore(str(tmp_path))
    when = Daily(3, 0)
    runs: list[float] = []

    async def nightly() -> None:
        runs.append(virtual_clock())

    async def main() -> None:
        # The last run recorded is two days old: yesterday's and today's were missed.
        old_due = when.last_due(T0) - 2 * 86400
        await store.record("nightly", {"due": old_due, "started": old_due, "outcome": "ok"})
        scheduler = Scheduler([job("nightly", when, nightly)], store, missed=missed,
                              clock=virtual_clock)  # fmt: skip
        with trio.move_on_after(1):  # long before the next 03:00
            await scheduler.run()

    run_virtual(main)
    assert len(runs) == expected  # once, not once per missed day
    if expected:
        assert (await_records(store))["nightly"]["due"] == when.last_due(T0)


def await_records(store) -> dict:
    return trio.run(store.records)


def test_the_file_lease_is_taken_once_per_due_time(tmp_path: Path) -> None:
    store = FileStore(str(tmp_path))

    async def main() -> list[bool]:
        return [await store.claim("j", 100.0, 60, "a"), await store.claim("j", 100.0, 60, "b"),
                await store.claim("j", 160.0, 60, "b")]  # fmt: skip

    assert trio.run(main) == [True, False, True]


# ---- exactly once among many processes: Redis ----------------------------------------------


def redis_or_skip() -> str:
    if not reachable("127.0.0.1", 6379, timeout=0.5):
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    return f"redis://127.0.0.1:6379/0?prefix=pyweb-test-{uuid.uuid4().hex[:8]}:"


def test_three_schedulers_sharing_redis_run_each_due_job_once() -> None:
    url = redis_or_skip()
    runs: list[tuple[int, float]] = []

    def worker_job(number: int) -> Job:
        async def sweep() -> None:
            runs.append((number, virtual_clock()))

        return job("sweep", Every(5), sweep)

    async def main() -> None:
        stores = [RedisStore(url, "site") for _ in range(3)]
        schedulers = [Scheduler([worker_job(i)], stores[i], clock=virtual_clock)
                      for i in range(3)]  # fmt: skip
        # Real Redis answers between the virtual instants: the clock jumps only after
        # every task has waited 0.25 s of real time, longer than a Redis reply takes.
        with trio.move_on_after(50 + 1):
            async with trio.open_nursery() as nursery:
                for scheduler in schedulers:
                    nursery.start_soon(scheduler.run)
        for store in stores:
            store.close()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0.25))
    from tests.test_jobs_workers import forget

    forget(url)
    dues = [t for _, t in runs]
    assert len(dues) == len(set(dues)) == 10, runs
    assert len({worker for worker, _ in runs}) >= 1


# ---- [[schedule]] in pyweb.toml ----------------------------------------------------------------


def test_schedule_entries_become_script_jobs(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site", {
        "_cleanup.py": "open(__file__ + '.ran', 'w').write('yes')\n",
        "_report.py": "import trio\nawait trio.sleep(0)\nopen(__file__ + '.ran', 'w').write('ok')\n",
        "pyweb.toml": """
            port = 8123

            [[schedule]]
            script = "_cleanup.py"
            every = 3600

            [[schedule]]
            script = "_report.py"
            weekly = "sunday 04:30"
            timeout = 600
        """,
    })  # fmt: skip
    jobs = read_schedule(str(site / "pyweb.toml"), str(site))
    assert [(j.name, str(j.when), j.timeout) for j in jobs] == [
        ("script:_cleanup.py", "every 3600 s", None),
        ("script:_report.py", "weekly on sunday at 04:30", 600),
    ]

    async def run_both() -> None:
        for j in jobs:
            await j.run()

    trio.run(run_both)
    assert (site / "_cleanup.py.ran").read_text() == "yes"
    assert (site / "_report.py.ran").read_text() == "ok"


@pytest.mark.parametrize(
    "entry, words, line",
    [
        ('script = "cleanup.py"\nevery = 60', "is a page too", 4),
        ('script = "_cleanup.py"\nevery = 60\ndaily = "03:00"', "exactly one of", 6),
        ('script = "_cleanup.py"\nhourly = 1', "unknown key 'hourly'", 5),
        ('script = "_cleanup.py"\ndaily = "3 o\'clock"', "daily is a time \"HH:MM\"", 5),
        ('script = "_cleanup.py"\ndaily = "25:00"', "hour is a whole number from 0 to 23", 5),
        ('script = "_missing.py"\nevery = 60', "not a file in the site directory", 4),
        ('every = 60', "script = \"FILE.py\" is required", 3),
    ],
)
def test_a_bad_schedule_entry_is_refused_with_its_line(
    tmp_path: Path, entry: str, words: str, line: int
) -> None:
    """The line is the offending key's (the entry's own when no key is to blame)."""
    site = write_site(tmp_path / "site", {
        "cleanup.py": "conn.return_('hi')\n", "_cleanup.py": "pass\n",
        "pyweb.toml": 'port = 8123\n\n[[schedule]]\n' + entry + "\n",
    })  # fmt: skip
    with pytest.raises(ValueError, match=words) as info:
        read_schedule(str(site / "pyweb.toml"), str(site))
    assert str(info.value).startswith(f"{site / 'pyweb.toml'}:{line}: ")


def test_pyweb_serve_refuses_a_bad_schedule(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site", {
        "index.py": "conn.return_('hi')\n",
        "pyweb.toml": '[[schedule]]\nscript = "index.py"\nevery = 60\n',
    })  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "pyweb", "serve", str(site), "--port", "0"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2
    assert "pyweb.toml:2: script 'index.py' is a page too" in done.stderr


def test_pyweb_check_lists_every_bad_schedule_entry_with_file_and_line(tmp_path: Path) -> None:
    """``pyweb check`` reads ``[[schedule]]`` with the reader ``pyweb serve`` uses, and
    names every bad entry (not only the first) at the line of its offending key."""
    site = write_site(tmp_path / "site", {
        "index.py": "conn.return_('hi')\n",
        "_ok.py": "pass\n",
        "pyweb.toml": (
            'port = 8123\n'                                   # 1
            '[[schedule]]\nscript = "index.py"\nevery = 60\n'  # 2-4: a page
            '[[schedule]]\nscript = "_ok.py"\ndaily = "24:00"\n'  # 5-7: a bad time
            '[[schedule]]\nscript = "_ok.py"\nhourly = 1\n'    # 8-10: an unknown key
            '[[schedule]]\nscript = "_ok.py"\nevery = 3600\n'  # 11-13: good
        ),
    })  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "pyweb", "check", str(site)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "site/pyweb.toml:3: script 'index.py' is a page too (anyone could run it by opening "
        "its URL): rename it to start with '_' (such as '_index.py')",
        "site/pyweb.toml:7: daily: hour is a whole number from 0 to 23, got 24",
        "site/pyweb.toml:10: unknown key 'hourly' (known: script, every, daily, weekly, timeout)",
    ]
    assert "3 error(s)" in done.stderr
    # the same file, fixed: no errors; a bad setting is named too
    (site / "pyweb.toml").write_text('port = "x"\n[[schedule]]\nscript = "_ok.py"\nevery = 60\n')
    done = subprocess.run([sys.executable, "-m", "pyweb", "check", str(site)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1 and done.stdout.startswith("site/pyweb.toml:1: "), done.stdout
    (site / "pyweb.toml").write_text('[[schedule]]\nscript = "_ok.py"\nevery = 60\n')
    done = subprocess.run([sys.executable, "-m", "pyweb", "check", str(site)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


# ---- pyweb jobs DIR ------------------------------------------------------------------------------


def test_pyweb_jobs_lists_every_job_with_its_runs(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site", {
        "tidy.py": """
            import pyweb

            @pyweb.daily(hour=3, minute=15)
            def tidy():
                pass

            @pyweb.every(600)
            async def ping():
                pass
        """,
        "_cleanup.py": "pass\n",
        "pyweb.toml": '[[schedule]]\nscript = "_cleanup.py"\nweekly = "sunday 04:00"\n',
    })  # fmt: skip
    store = FileStore(str(site))
    trio.run(store.record, "tidy.tidy", {"due": T0, "started": T0, "outcome": "ok"})
    done = subprocess.run([sys.executable, "-m", "pyweb", "jobs", str(site)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["job", "when", "next", "run", "last", "run", "outcome"]
    rows = {line.split()[0]: line for line in lines[1:4]}
    assert set(rows) == {"tidy.tidy", "tidy.ping", "script:_cleanup.py"}
    started = datetime.fromtimestamp(T0).astimezone().isoformat(timespec="seconds")
    assert "daily at 03:15" in rows["tidy.tidy"] and started in rows["tidy.tidy"]
    assert rows["tidy.tidy"].endswith("  ok")
    assert rows["tidy.ping"].endswith("never run")
    assert "weekly on sunday at 04:00" in rows["script:_cleanup.py"]
    assert f"3 job(s); records in {site / 'data' / 'jobs.json'}" in done.stdout
