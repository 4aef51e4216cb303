"""The server survives any page: a page that holds the event loop (a CPU loop, a blocking
``time.sleep``) is stopped past ``--page-timeout`` with a 503 naming its line, and the
server goes on; SIGINT (Ctrl-C) and SIGTERM stop the server even while a page holds it,
and leave the port free. Real ``pyweb serve`` processes on both loops, in development
mode, in production and with ``--workers 2``; ``make run`` stopped by a terminal's Ctrl-C
or by make's death (pyweb.app.interrupt)."""

from __future__ import annotations

import html
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import BANNER, start_serve, stop_serve, until, write_site

from .conftest import ROOT

pytestmark = [pytest.mark.loops("trio", "asyncio"), pytest.mark.timeout(180)]

# Each page that holds the loop first touches a file beside it, so the test knows (without
# sleeping) that the page is running when it sends its signal.
SITE = {
    "hello.py": 'conn.return_("hello")\n',
    "spin.py": """\
        from pathlib import Path
        Path(__file__).with_name("spin.running").touch()
        n = 0
        while n >= 0:
            n += 1
        """,
    "sleepy.py": """\
        from pathlib import Path
        import time
        Path(__file__).with_name("sleepy.running").touch()
        time.sleep(100)
        conn.return_("slept")
        """,
    # A page that awaits (so it has a deadline, which cannot fire while it holds the loop)
    # and a service, each with a CPU loop.
    "spin_async.py": """\
        from pathlib import Path
        import pyweb.runtime
        await pyweb.runtime.sleep(0)
        Path(__file__).with_name("spin_async.running").touch()
        n = 0
        while n >= 0:
            n += 1
        """,
    "crunch.py": """\
        from pathlib import Path
        from pyweb import service

        @service("/crunch")
        async def crunch(conn):
            Path(__file__).with_name("crunch.running").touch()
            n = 0
            while n >= 0:
                n += 1
        """,
    # Catches every exception, even the one that stops it (the worst a student can write),
    # and notes each one it caught beside it. (Python runs signal handlers at a loop's jump
    # back and at a call: both are inside a try here, but for the outer loop's jump.)
    "stubborn.py": """\
        from pathlib import Path
        here = Path(__file__)
        here.with_name("stubborn.running").touch()
        n = 0
        while True:
            try:
                while True:
                    n += 1
            except BaseException as e:
                try:
                    here.with_name("stubborn." + type(e).__name__).touch()
                except BaseException:
                    pass
        """,
}
LINES = {"spin": (4, 5), "sleepy": (4,), "spin_async": (6, 7), "crunch": (7, 8)}
"""Where each page can be when it is stopped."""

WAIT = 60.0
"""A generous bound on any one answer (the machine is shared): never a timing claim."""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site", SITE)


def get(port: int, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(2) as executor:
        yield executor


def holding(pool: ThreadPoolExecutor, site: Path, port: int, page: str) -> Future:
    """Request ``page`` in the background; return once it runs (and holds the loop)."""
    answer = pool.submit(get, port, f"/{page}")
    until(lambda: (site / f"{page}.running").exists() or answer.done(), f"{page} to run", WAIT)
    assert not answer.done(), answer.result()
    return answer


def port_is_free(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def stopped_lines(log: str, page: str) -> list[str]:
    return [line for line in log.splitlines() if f"{page}.py, line" in line and "stopped" in line]


@pytest.mark.parametrize("dev", [True, False], ids=["dev", "production"])
def test_a_cpu_loop_then_a_blocking_sleep_get_a_503_naming_the_line(site, pool, dev):
    flags = ["--page-timeout", "1", *(["--dev"] if dev else [])]
    proc, port = start_serve(site, *flags)
    try:
        for page in ("spin", "sleepy"):
            stuck = holding(pool, site, port, page)
            assert get(port, "/hello") == (200, "hello")  # meanwhile, or right after
            status, body = stuck.result(WAIT)
            assert status == 503, body
            if dev:  # the page and its line on the page (in production: the log only)
                text = re.sub(r"<[^>]+>|&#?\w+;", " ", body)
                found = re.search(rf"site/{page}\.py, line (\d+) .*? held the server", text)
                assert found and int(found.group(1)) in LINES[page], text
            assert get(port, "/hello") == (200, "hello")
    finally:
        assert stop_serve(proc) == 0
    log = proc.stderr.read()  # type: ignore[union-attr]
    for page in ("spin", "sleepy"):
        (line,) = stopped_lines(log, page)  # logged once
        assert "longer than the page timeout (1 s, --page-timeout)" in line
        assert int(re.search(r"\.py, line (\d+)", line).group(1)) in LINES[page]  # type: ignore[union-attr]


def test_a_page_that_awaits_and_a_service_are_stopped_too(site, pool):
    proc, port = start_serve(site, "--page-timeout", "1")
    try:
        for page in ("spin_async", "crunch"):
            stuck = holding(pool, site, port, page)
            assert get(port, "/hello") == (200, "hello")
            assert stuck.result(WAIT)[0] == 503
    finally:
        assert stop_serve(proc) == 0
    log = proc.stderr.read()  # type: ignore[union-attr]
    for page in ("spin_async", "crunch"):
        (line,) = stopped_lines(log, page)
        assert int(re.search(r"\.py, line (\d+)", line).group(1)) in LINES[page], line  # type: ignore[union-attr]


def test_sighup_sets_the_new_page_timeout(tmp_path, pool):
    site = write_site(tmp_path / "site", SITE)
    config = tmp_path / "pyweb.toml"
    config.write_text("page_timeout = 300\n")
    proc, port = start_serve(site, "--config", str(config))
    try:
        config.write_text("page_timeout = 1\n")
        proc.send_signal(signal.SIGHUP)
        for line in proc.stderr:  # type: ignore[union-attr]  # (the module's timeout bounds it)
            if "SIGHUP: reloaded" in line:
                break
        assert holding(pool, site, port, "spin").result(WAIT)[0] == 503  # (not after 300 s)
    finally:
        assert stop_serve(proc) == 0
    (line,) = stopped_lines(proc.stderr.read(), "spin")  # type: ignore[union-attr]
    assert "(1 s, --page-timeout)" in line


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_during_a_cpu_loop_stops_the_server(site, pool, signum):
    proc, port = start_serve(site, "--dev")  # page_timeout 30 s: the signal stops the page
    stuck = holding(pool, site, port, "spin")
    proc.send_signal(signum)
    assert proc.wait(WAIT) == 0  # a graceful shutdown: the page was stopped, not the server only
    assert stuck.result(WAIT)[0] == 503
    assert port_is_free(port)
    log = proc.stderr.read()  # type: ignore[union-attr]
    (line,) = stopped_lines(log, "spin")
    assert f"when the server was told to stop ({signal.Signals(signum).name})" in line


def test_a_second_sigint_stops_at_once_a_page_that_catches_everything(site, pool):
    proc, port = start_serve(site, "--dev")
    stuck = holding(pool, site, port, "stubborn")
    proc.send_signal(signal.SIGINT)
    until(lambda: (site / "stubborn.ServerStopping").exists(), "the page to catch it", WAIT)
    assert proc.poll() is None  # the page caught it and holds on
    proc.send_signal(signal.SIGINT)
    assert proc.wait(WAIT) == 1
    assert "second signal while site/stubborn.py holds the server" in proc.stderr.read()  # type: ignore[union-attr]
    assert port_is_free(port)
    with pytest.raises(OSError):  # the connection went with the process
        stuck.result(WAIT)


def test_one_sigterm_ends_a_page_that_catches_everything(site, pool):
    proc, port = start_serve(site)
    holding(pool, site, port, "stubborn")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(WAIT) == 1  # after STOP_GRACE (3 s) of the loop held
    assert "SIGTERM: the server is held and did not stop in 3 s" in proc.stderr.read()  # type: ignore[union-attr]
    assert port_is_free(port)


def test_with_two_workers_a_cpu_loop_is_stopped_and_logged_once(site, pool):
    proc, port = start_serve(site, "--workers", "2", "--page-timeout", "1")
    try:
        stuck = holding(pool, site, port, "spin")
        assert get(port, "/hello") == (200, "hello")
        assert stuck.result(WAIT)[0] == 503
        assert get(port, "/hello") == (200, "hello")
    finally:
        assert stop_serve(proc) == 0
    assert port_is_free(port)
    assert len(stopped_lines(proc.stderr.read(), "spin")) == 1  # type: ignore[union-attr]


# -- make run: the learning server as a student starts and stops it ----------------------------

need_make = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


def make_run(site: Path) -> tuple[subprocess.Popen, int]:
    """``make run SITE=... PORT=0`` in a session of its own, as in a terminal: Ctrl-C there
    signals every process of the group (make, and the server it runs)."""
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "-C", str(ROOT), "run", f"SITE={site}", "PORT=0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    for line in proc.stdout:  # type: ignore[union-attr]
        found = BANNER.match(line)
        if found:
            return proc, int(found.group(1))
    raise AssertionError(f"make run exited with {proc.wait()} before the banner")


def group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@need_make
@pytest.mark.loops("trio")  # (make run serves on the default loop)
def test_ctrl_c_in_make_run_during_a_cpu_loop_leaves_nothing_on_the_port(site, pool):
    proc, port = make_run(site)
    try:
        holding(pool, site, port, "spin")
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        proc.wait(WAIT)
        until(lambda: group_is_gone(proc.pid), "every process of make run to exit", WAIT)
        assert port_is_free(port)
    finally:
        if not group_is_gone(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


@need_make
@pytest.mark.loops("trio")
def test_when_make_dies_the_server_it_ran_stops_too(site, pool):
    proc, port = make_run(site)
    try:
        holding(pool, site, port, "spin")
        proc.kill()  # make alone, with no chance to pass anything on
        proc.wait(WAIT)
        until(lambda: group_is_gone(proc.pid), "the server to follow make", WAIT)
        assert port_is_free(port)
    finally:
        if not group_is_gone(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


# -- docs/common-mistakes.md's "A loop that never ends" is true -------------------------------


def test_common_mistakes_a_loop_that_never_ends_says_what_the_server_says(tmp_path, pool):
    doc = (ROOT / "docs" / "common-mistakes.md").read_text()
    part = doc.split("## A loop that never ends\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n# pages/(\w+)\.py\n(.*?)```", part, re.S)
    quote = " ".join(re.findall(r"^> ?(.*)$", part, re.M))
    assert code is not None and quote
    site = write_site(tmp_path / "pages", {f"{code.group(1)}.py": code.group(2)})
    # The docs quote the default 30 s; a test waits 1 s.
    quote = quote.replace("(30 s, --page-timeout)", "(1 s, --page-timeout)")
    proc, port = start_serve(site, "--dev", "--page-timeout", "1")
    try:
        status, body = get(port, f"/{code.group(1)}")
    finally:
        assert stop_serve(proc) == 0
    said = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))
    said = re.sub(r"held the server for [\d.]+ s", "held the server for", said)
    status_quoted = re.match(r"\*\*(\d{3}) [^*]*\*\*", quote)
    assert status_quoted and status == int(status_quoted.group(1))
    for piece in quote[status_quoted.end() :].split("..."):
        piece = re.sub(
            r"held the server for [\d.]+ s", "held the server for", " ".join(piece.split())
        )
        assert piece in said, (piece, said)
