"""The access log's ``alloc`` format (Hop §3.1's per-request count, Marlow §5's log): each
line ends with ``alloc=BYTES/CALLS``, what the request's page allocated, charged by the same
per-request slot as ``/_pyweb/stats``; ``alloc=-`` when nothing was counted (profiling off,
the Python fallback). A static file, a 404 and the stats page pass the same guards as a page,
the region's among them, so they are counted too. Real servers on 127.0.0.1, both
implementations."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

import pyweb.testing
from pyweb.app.site import Site
from tests.helpers import serve_command

from .conftest import INTERLEAVED_PAGES, interleave, load, write_site

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

PAGES = {
    "hello.py": 'conn.return_("hello", content_type="text/plain")\n',
    "big.py": """
        block = bytearray(200_000)
        conn.return_(f"big {len(block)}", content_type="text/plain")
    """,
    "boom.py": "raise ValueError('boom')\n",
    "style.css": "body { color: black }\n",
}

# The timed line, then the alloc field: "... "-" "-" rt=0.000734 worker=- alloc=3294/35"
LINE = re.compile(
    r'^127\.0\.0\.1 - - \[[^]]+\] "(?P<method>\S+) (?P<target>\S+) HTTP/1\.1" (?P<status>\d{3}) '
    r'\S+ "-" "[^"]*" rt=\d+\.\d{6} worker=- alloc=(?P<alloc>-|(?P<b>\d+)/(?P<c>\d+))$'
)


def serve_and_log(site: Site, log: Path, targets: list[str]) -> list[re.Match[str]]:
    """Serve ``site``, GET each target in order, stop, and return the parsed log lines."""
    with pyweb.testing.serve(
        site, access_log=str(log), access_log_format="alloc", error_log=None
    ) as client:
        for target in targets:
            client.get(target)
    lines = log.read_text().splitlines()  # the server has stopped: its log is written
    assert len(lines) == len(targets), lines
    matches = [LINE.match(line) for line in lines]
    assert all(matches), lines
    assert [m["target"] for m in matches] == targets  # type: ignore[index]
    return matches  # type: ignore[return-value]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site", PAGES)


def test_each_page_request_logs_what_its_page_allocated(root, tmp_path, use_impl):
    targets = ["/hello", "/big", "/hello", "/boom", "/style.css", "/missing", "/_pyweb/stats"]
    site = Site(root, profile_alloc=True)
    found = serve_and_log(site, tmp_path / "access.log", targets)
    hello1, big, hello2, boom, static, missing, stats = found
    assert (boom["status"], static["status"], missing["status"]) == ("500", "200", "404")

    if use_impl == "python":  # the fallback cannot count: it says so, never a number
        assert {m["alloc"] for m in found} == {"-"}
        return
    # A static file, a 404 and the stats page pass the same guards as a page (the one
    # pipeline), the region's among them: what answering them allocated is counted too,
    # and it is small beside a page's.
    for m in (static, missing, stats):
        assert m["alloc"] != "-" and int(m["b"]) < 100_000, m.group(0)
    for m in (hello1, hello2, big, boom):  # a page that raised still allocated
        assert int(m["b"]) > 0 and int(m["c"]) > 0, m.group(0)
    assert 200_000 <= int(big["b"]) < 300_000, big.group(0)
    assert int(hello1["b"]) < 50_000, hello1.group(0)
    # The log shows the very slot /_pyweb/stats adds up: their sums agree exactly.
    totals = site.regions.page_allocs  # type: ignore[union-attr]
    hello = totals[f"{root.name}/hello.py"]
    assert hello == [2, int(hello1["b"]) + int(hello2["b"]), int(hello1["c"]) + int(hello2["c"])]
    assert totals[f"{root.name}/big.py"] == [1, int(big["b"]), int(big["c"])]


def test_without_profiling_the_field_is_a_dash(root, tmp_path, use_impl):
    found = serve_and_log(Site(root), tmp_path / "access.log", ["/hello", "/big", "/style.css"])
    assert {m["alloc"] for m in found} == {"-"}


def test_interleaved_requests_are_each_logged_with_their_own_bytes(tmp_path):
    """While one request sleeps, four others run on the same thread and allocate 1.2 MB:
    the sleeping request's line still shows only its own 1 MB (its page counted step by step)."""
    load("c")
    root = write_site(tmp_path / "site", INTERLEAVED_PAGES)
    site = Site(root, profile_alloc=True)
    log = tmp_path / "access.log"
    with pyweb.testing.serve(
        site, access_log=str(log), access_log_format="alloc", error_log=None
    ) as client:
        interleave(site, client)
    by_target: dict[str, list[int]] = {}
    for line in log.read_text().splitlines():
        m = LINE.match(line)
        assert m, line
        by_target.setdefault(m["target"], []).append(int(m["b"]))
    assert len(by_target["/small"]) == 4
    assert all(300_000 <= b < 400_000 for b in by_target["/small"]), by_target
    [big_bytes] = by_target["/big"]
    assert 1_000_000 <= big_bytes < 1_200_000, big_bytes  # not 2.2 MB


def test_the_timed_format_is_unchanged_by_profiling(root, tmp_path):
    load("c")
    log = tmp_path / "access.log"
    site = Site(root, profile_alloc=True)
    with pyweb.testing.serve(
        site, access_log=str(log), access_log_format="timed", error_log=None
    ) as client:
        client.get("/hello")
    [line] = log.read_text().splitlines()
    assert re.search(r'"GET /hello HTTP/1\.1" 200 5 "-" "[^"]*" rt=\d+\.\d{6} worker=-$', line)


def serve_once(
    root: Path, flags: list[str], regions: str, target: str, text: str
) -> tuple[str, str]:
    """``pyweb serve root *flags`` in a subprocess (``PYWEB_REGIONS=regions``): one GET of
    ``target``, which must answer ``text``, then SIGTERM; returns its banner and stderr. On
    the test's loop."""
    proc = subprocess.Popen(
        serve_command(root, "--port", "0", *flags),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYWEB_REGIONS": regions},
    )
    try:
        banner = proc.stdout.readline()  # type: ignore[union-attr]
        port = int(re.search(r":(\d+)/", banner).group(1))  # type: ignore[union-attr]
        with pyweb.testing.Client(f"http://127.0.0.1:{port}") as client:
            assert client.get(target).text == text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        return banner, proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("regions", ["python", "c"])
def test_pyweb_serve_says_why_the_field_is_a_dash(root, tmp_path, regions):
    """``pyweb serve`` with ``access_log_format = "alloc"`` in pyweb.toml: the fallback
    (even with --profile-alloc) and a server without --profile-alloc say at start-up why
    every line will end with alloc=-, and the lines do."""
    if regions == "c":
        load("c")
    log = tmp_path / "access.log"
    (root / "pyweb.toml").write_text(f'access_log_format = "alloc"\naccess_log = "{log}"\n')
    flags = ["--profile-alloc"] if regions == "python" else []
    banner, err = serve_once(root, flags, regions, "/hello", "hello")
    why = "not available" if regions == "python" else "--profile-alloc was not given"
    assert "the access log's alloc field will be '-'" in err and why in err, err
    [line] = log.read_text().splitlines()
    assert LINE.match(line) and line.endswith(" alloc=-"), line


def test_pyweb_serve_with_profile_alloc_logs_numbers(root, tmp_path):
    load("c")
    log = tmp_path / "access.log"
    flags = ["--profile-alloc", "--access-log", str(log), "--access-log-format", "alloc"]
    banner, err = serve_once(root, flags, "", "/big", "big 200000")
    assert banner.endswith(", regions c)\n"), banner
    assert "alloc field" not in err, err
    [line] = log.read_text().splitlines()
    m = LINE.match(line)
    assert m and 200_000 <= int(m["b"]) < 300_000, line
