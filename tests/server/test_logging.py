"""The access/error log (Marlow §5): Combined Log Format, batching, and a logger that
survives full disks, removed files and floods without blocking or raising."""

from __future__ import annotations

import functools
import io
import json
import os
import time

import pytest
import trio

from pyweb.server import logging as logging_mod
from pyweb.server.logging import AccessRecord, ServerLog, format_access, format_error, log_time
from tests.helpers import until_async

pytestmark = [pytest.mark.timeout(30), pytest.mark.loops("trio", "asyncio")]


def trio_test(fn):
    """Run an async test under trio.run (the project does not use pytest-trio)."""

    @functools.wraps(fn)
    def wrapper(**kwargs):
        trio.run(functools.partial(fn, **kwargs))

    return wrapper


T0 = 1700000000.0  # 14/Nov/2023:22:13:20 UTC


def rec(**kw) -> AccessRecord:
    fields = dict(
        peer="127.0.0.1:5000",
        time=T0,
        method="GET",
        target="/index.html",
        http_version="1.1",
        status=200,
        size=984,
        referer="",
        user_agent="",
    )
    fields.update(kw)
    return AccessRecord(**fields)


class Sink:
    """A text stream that remembers each write() call separately."""

    def __init__(self):
        self.writes: list[str] = []

    def write(self, text: str) -> None:
        self.writes.append(text)

    @property
    def text(self) -> str:
        return "".join(self.writes)


# --- format_access -------------------------------------------------------------------------


def test_log_time():
    assert log_time(0) == "01/Jan/1970:00:00:00 +0000"
    assert log_time(T0) == "14/Nov/2023:22:13:20 +0000"
    assert log_time(T0 + 0.999) == "14/Nov/2023:22:13:20 +0000"
    assert log_time(T0 + 86400 * 20) == "04/Dec/2023:22:13:20 +0000"


def test_format_access_plain():
    line = format_access(rec(referer="http://example.com/", user_agent="curl/8.5.0"))
    assert line == (
        '127.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET /index.html HTTP/1.1" 200 984 '
        '"http://example.com/" "curl/8.5.0"\n'
    )


def test_format_access_dashes_for_empty_fields():
    line = format_access(
        rec(status=304, size=0, http_version="1.0", method="HEAD", target="/a?b=c")
    )
    assert (
        line == '127.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "HEAD /a?b=c HTTP/1.0" 304 - "-" "-"\n'
    )


@pytest.mark.parametrize(
    "peer,host",
    [("[::1]:8000", "::1"), ("::1", "::1"), ("10.0.0.1", "10.0.0.1"), ("localhost:1", "localhost")],
)
def test_format_access_host(peer, host):
    assert format_access(rec(peer=peer)).startswith(host + " - - [")


def test_format_access_escapes_like_apache():
    line = format_access(
        rec(
            target='/a"b\\c', user_agent='evil\n127.0.0.1 - - "forged"\t\x01', referer="caf\xe9\x7f"
        )
    )
    assert line == (
        '127.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET /a\\"b\\\\c HTTP/1.1" 200 984 '
        '"caf\\xe9\\x7f" "evil\\n127.0.0.1 - - \\"forged\\"\\t\\x01"\n'
    )
    assert line.count("\n") == 1


def test_format_error_with_traceback():
    try:
        raise ZeroDivisionError("division by zero")
    except ZeroDivisionError as exc:
        text = format_error("handler failed", request_line="GET /x HTTP/1.1", exc=exc, when=T0)
    first, rest = text.split("\n", 1)
    assert first == "[14/Nov/2023:22:13:20 +0000] [error] handler failed (request: GET /x HTTP/1.1)"
    assert (
        "Traceback (most recent call last)" in rest
        and "ZeroDivisionError: division by zero" in rest
    )
    assert format_error("plain", when=T0) == "[14/Nov/2023:22:13:20 +0000] [error] plain\n"


# --- the logging task ----------------------------------------------------------------------


async def run_log(log: ServerLog, body) -> None:
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        await body()
        log.close()


@trio_test
async def test_batches_into_one_write():
    sink = Sink()
    log = ServerLog(sink, None)

    async def body():
        for i in range(1000):  # no checkpoint: all queued before the logger wakes
            log.access(rec(target=f"/{i}"))

    await run_log(log, body)
    assert len(sink.writes) == 1
    lines = sink.text.splitlines()
    assert len(lines) == 1000 and lines[0] == format_access(rec(target="/0")).rstrip("\n")
    assert lines[-1].split('"')[1] == "GET /999 HTTP/1.1"


@trio_test
async def test_writes_file_appending(tmp_path):
    path = tmp_path / "access.log"
    path.write_text("old line\n")
    log = ServerLog(str(path), None)

    async def body():
        log.access(rec())
        await until_async(lambda: path.read_text().count("\n") == 2)  # the first write
        log.access(rec(status=404, size=0))

    await run_log(log, body)
    assert path.read_text() == "old line\n" + format_access(rec()) + format_access(
        rec(status=404, size=0)
    )


@trio_test
async def test_error_log_and_access_log_separate(tmp_path):
    access, errors = tmp_path / "a.log", tmp_path / "e.log"
    log = ServerLog(str(access), str(errors))

    async def body():
        log.access(rec())
        try:
            raise ValueError("bad value")
        except ValueError as exc:
            log.error("page crashed", request_line="GET / HTTP/1.1", exc=exc)

    await run_log(log, body)
    assert access.read_text() == format_access(rec())
    text = errors.read_text()
    assert (
        "] [error] page crashed (request: GET / HTTP/1.1)\n" in text
        and "ValueError: bad value" in text
    )


@trio_test
async def test_none_target_writes_nothing():
    sink = Sink()
    log = ServerLog(None, sink)
    assert not log.access_enabled

    async def body():
        for _ in range(100):
            log.access(rec())
        log.error("only this")

    await run_log(log, body)
    assert sink.text.endswith("[error] only this\n") and sink.text.count("\n") == 1
    assert log.dropped == 0


@trio_test
async def test_removed_log_file_is_recreated(tmp_path):
    path = tmp_path / "access.log"
    log = ServerLog(str(path), None, reopen_interval=0)

    async def body():
        log.access(rec(target="/before"))
        await until_async(lambda: path.exists() and "/before" in path.read_text())
        os.remove(path)
        log.access(rec(target="/after-remove"))
        await until_async(lambda: path.exists() and "/after-remove" in path.read_text())
        os.rename(path, tmp_path / "access.log.1")  # logrotate's way
        log.access(rec(target="/after-rotate"))
        await until_async(lambda: path.exists() and "/after-rotate" in path.read_text())

    await run_log(log, body)
    assert "/before" not in path.read_text() and "/after-remove" not in path.read_text()
    assert "/after-remove" in (tmp_path / "access.log.1").read_text()
    assert log.dropped == 0


@trio_test
async def test_reopen_on_request(tmp_path):
    path = tmp_path / "access.log"
    log = ServerLog(str(path), None, reopen_interval=3600)  # only reopen() can notice

    async def body():
        log.access(rec(target="/one"))
        await until_async(lambda: path.exists() and "/one" in path.read_text())
        os.rename(path, tmp_path / "old.log")
        log.reopen()
        log.access(rec(target="/two"))
        await until_async(lambda: path.exists() and "/two" in path.read_text())

    await run_log(log, body)
    assert "/two" not in (tmp_path / "old.log").read_text()


@trio_test
async def test_full_disk_drops_counts_and_keeps_going(capsys):
    # /dev/full: open works, every write fails with ENOSPC (tests run as root, so a
    # read-only directory would not stop us).
    log = ServerLog("/dev/full", None)

    async def body():
        for _ in range(3):
            log.access(rec())
        await until_async(lambda: log.dropped >= 3)
        for expected in (4, 5):
            log.access(rec())
            await until_async(lambda: log.dropped >= expected)  # noqa: B023

    await run_log(log, body)
    assert log.dropped == 5
    err = capsys.readouterr().err
    assert err.count("cannot write access log '/dev/full'") == 1 and "No space left" in err


@trio_test
async def test_unopenable_path_does_not_stop_the_server(tmp_path, capsys):
    log = ServerLog(str(tmp_path / "no" / "such" / "dir" / "access.log"), None, reopen_interval=0)

    async def body():
        log.access(rec())
        await until_async(lambda: log.dropped >= 1)
        (tmp_path / "no" / "such" / "dir").mkdir(parents=True)
        log.access(rec(target="/later"))
        await until_async(lambda: (tmp_path / "no" / "such" / "dir" / "access.log").exists())

    await run_log(log, body)
    assert "/later" in (tmp_path / "no" / "such" / "dir" / "access.log").read_text()
    err = capsys.readouterr().err
    assert (
        err.count("cannot write access log") == 1 and "writable again; 1 lines were dropped" in err
    )


def test_full_channel_drops_without_blocking():
    sink = Sink()
    log = ServerLog(sink, sink, buffer=10)
    # No trio run and no logging task: access() must return at once every time.
    for i in range(25):
        log.access(rec(target=f"/{i}"))
    log.error("also dropped")
    assert log.dropped_full == 16 and log.dropped == 16

    async def main():
        await run_log(log, trio.lowlevel.checkpoint)

    trio.run(main)
    lines = sink.text.splitlines()
    assert [line.split('"')[1] for line in lines[:10]] == [f"GET /{i} HTTP/1.1" for i in range(10)]
    assert lines[10].endswith("[error] log queue full: 16 records dropped")


@trio_test
async def test_close_then_access_is_harmless():
    sink = Sink()
    log = ServerLog(sink, sink)
    await run_log(log, trio.lowlevel.checkpoint)
    log.access(rec())
    log.error("late")
    assert sink.writes == []


@trio_test
async def test_cancelled_logger_writes_what_is_queued():
    sink = Sink()
    log = ServerLog(sink, None)
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        for i in range(5):
            log.access(rec(target=f"/{i}"))
        nursery.cancel_scope.cancel()
    assert sink.text.count("\n") == 5


@trio_test
async def test_bad_record_does_not_kill_the_logger():
    sink = Sink()
    log = ServerLog(sink, sink)

    async def body():
        log.access(rec(time="not a time"))  # type: ignore[arg-type]
        log.access(rec(target="/fine"))

    await run_log(log, body)
    assert "/fine" in sink.text and "[error] cannot format access record" in sink.text


@trio_test
async def test_stderr_target(capsys):
    log = ServerLog("-", "-")

    async def body():
        log.access(rec(target="/to-stderr"))

    await run_log(log, body)
    assert "GET /to-stderr HTTP/1.1" in capsys.readouterr().err


def test_access_with_none_costs_nothing():
    log = ServerLog(None, None)
    start = time.perf_counter()
    log.access(rec())
    assert log.dropped == 0 and not log.access_enabled
    del start  # no timing assertion (rule: tests never assert on time)


def test_format_access_without_request_line():
    line = format_access(rec(method="-", target="-", http_version="-", status=400, size=120))
    assert line == '127.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "-" 400 120 "-" "-"\n'


def test_integration_server_writes_combined_log(tmp_path):
    import pyweb.testing

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_bytes(b"x" * 984)
    log_path = tmp_path / "access.log"
    with pyweb.testing.serve(tmp_path / "site", access_log=str(log_path), error_log=None) as client:
        client.get("/", headers={"User-Agent": 'tester "1"', "Referer": "http://r/"})
        client.get("/missing?q=1")
        client.head("/index.html")
    lines = log_path.read_text().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("127.0.0.1 - - [")
    assert lines[0].endswith('] "GET / HTTP/1.1" 200 984 "http://r/" "tester \\"1\\""')
    assert '"GET /missing?q=1 HTTP/1.1" 404 ' in lines[1]
    assert lines[2].endswith('"HEAD /index.html HTTP/1.1" 200 - "-" "-"')


def test_timed_format_appends_duration_and_worker():
    from pyweb.server.logging import format_access

    record = AccessRecord("127.0.0.1:5000", 0.0, "GET", "/", "1.1", 200, 984, "", "", 0.0123456)
    plain = format_access(record)
    assert plain.endswith('"-" "-"\n')
    assert format_access(record, " worker=3") == plain[:-1] + " rt=0.012346 worker=3\n"


def test_alloc_format_appends_the_page_s_allocations_or_a_dash():
    counted = AccessRecord(
        "127.0.0.1:5000", 0.0, "GET", "/", "1.1", 200, 984, "", "", 0.0123456, (3294, 35)
    )
    timed = format_access(counted, " worker=3")
    assert format_access(counted, " worker=3", alloc=True) == timed[:-1] + " alloc=3294/35\n"
    not_counted = rec(duration=0.5)  # a static file, the fallback, profiling off: no number
    assert format_access(not_counted, " worker=-", alloc=True).endswith(
        '"-" "-" rt=0.500000 worker=- alloc=-\n'
    )
    # Without the alloc format the counts are not shown: combined stays byte-for-byte CLF.
    assert format_access(counted) == (
        '127.0.0.1 - - [01/Jan/1970:00:00:00 +0000] "GET / HTTP/1.1" 200 984 "-" "-"\n'
    )


@trio_test
async def test_server_log_alloc_format_writes_the_field(monkeypatch):
    monkeypatch.setenv("PYWEB_WORKER_ID", "2")
    sink = Sink()
    log = ServerLog(sink, None, access_format="alloc")
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        log.access(rec(alloc=(1200, 14)))
        log.access(rec())
        log.close()
    first, second = sink.text.splitlines()
    assert first.endswith('"-" "-" rt=0.000000 worker=2 alloc=1200/14')
    assert second.endswith('"-" "-" rt=0.000000 worker=2 alloc=-')


def test_an_unknown_access_format_is_refused():
    with pytest.raises(
        ValueError, match="unknown access log format 'json'; choose combined, timed or alloc"
    ):
        ServerLog(None, None, access_format="json")


def test_json_access_lines_name_every_field():
    record = AccessRecord("[::1]:5000", 1.5, "GET", "/a?b=1", "1.1", 404, 0, "", 'x "y"')
    record.duration = 0.25
    entry = json.loads(logging_mod.format_access_json(record, "3"))
    assert entry == {
        "time": "1970-01-01T00:00:01.500Z", "host": "::1", "method": "GET",
        "target": "/a?b=1", "http_version": "1.1", "status": 404, "size": 0,
        "referer": None, "user_agent": 'x "y"', "duration": 0.25, "worker": "3",
    }  # fmt: skip


@trio_test
async def test_json_format_writes_one_object_a_line_in_both_logs():
    access, error = io.StringIO(), io.StringIO()
    log = ServerLog(access, error, log_format="json")
    async with trio.open_nursery() as nursery:
        await nursery.start(log.run)
        log.access(AccessRecord("127.0.0.1:1", 0.0, "GET", "/", "1.1", 200, 5))
        try:
            raise ValueError("bad\nvalue")
        except ValueError as exc:
            log.error("a page failed", request_line="GET / HTTP/1.1", exc=exc)
        log.close()
    (line,) = access.getvalue().splitlines()
    assert json.loads(line)["status"] == 200
    (line,) = error.getvalue().splitlines()  # the traceback's lines stay in one entry
    entry = json.loads(line)
    assert entry["level"] == "error" and entry["message"] == "a page failed"
    assert entry["request"] == "GET / HTTP/1.1"
    assert "ValueError: bad" in entry["traceback"]


def test_an_unknown_log_format_is_refused():
    with pytest.raises(ValueError, match="'xml'"):
        ServerLog(None, None, log_format="xml")
