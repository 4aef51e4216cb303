"""pyweb.app.watched: a WebSocket handler and a streamed body are watched as a page is.

tests/reliability/test_cpu_ws_stream.py stops them in real ``pyweb serve`` processes; here,
in a server run in-process (where nothing can be interrupted: the loop is not in the main
thread), one that held the loop for a while and went on by itself is named in the error
log once, by file and line, when it ends; and a Close frame's reason always fits its frame.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from websockets.sync.client import connect

import pyweb.testing
from pyweb.app import interrupt, watched
from tests.helpers import until, write_site

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

# Each holds the loop until the watchdog has seen it hold (its Watched's ``held``), found
# on its own stack: a wait on the watchdog, not on the clock.
SITE = {
    "sockets.py": """\
        import sys
        import pyweb

        def watched_of(name):
            frame = sys._getframe()
            while frame.f_code.co_name != name or "watched" not in frame.f_locals:
                frame = frame.f_back
            return frame.f_locals["watched"]

        @pyweb.websocket("/hold")
        async def hold(ws):
            watched = watched_of("run_handler")
            await ws.recv()
            while watched.held is None:
                pass
            await ws.send("went on")
        """,
    "stream.py": """\
        import sys

        def watched_of(name):
            frame = sys._getframe()
            while frame.f_code.co_name != name or "watched" not in frame.f_locals:
                frame = frame.f_back
            return frame.f_locals["watched"]

        async def pieces():
            yield "first\\n"
            watched = watched_of("__anext__")
            while watched.held is None:
                pass
            yield "last\\n"

        conn.return_(pieces(), content_type="text/plain")
        """,
}


@pytest.fixture
def served(tmp_path: Path, loop: str):
    site = write_site(tmp_path / "site", SITE)
    log = io.StringIO()
    with pyweb.testing.serve(site, loop=loop, error_log=log) as client:
        yield client, log


def named(log: io.StringIO, name: str) -> list[str]:
    return [line for line in log.getvalue().splitlines() if f"{name}: site/" in line]


def test_a_websocket_handler_that_held_the_loop_is_named_once_when_it_ends(served):
    client, log = served
    for _ in range(2):  # the same line twice: named once
        with connect(f"ws://127.0.0.1:{client.server.port}/hold") as ws:
            ws.send("go")
            assert ws.recv(timeout=30) == "went on"
        until(lambda: named(log, "WebSocket handler hold"), "the handler to be named", 30)
    (line,) = named(log, "WebSocket handler hold")
    assert re.search(r"site/sockets\.py, line 1[45] \(.*\) held the server for", line), line


def test_a_streamed_body_that_held_the_loop_is_named_once_when_it_ends(served):
    client, log = served
    for _ in range(2):
        answer = client.get("/stream")
        assert (answer.status, answer.text) == (200, "first\nlast\n")
        until(lambda: named(log, "the streamed body of site/stream.py"), "the body named", 30)
    (line,) = named(log, "the streamed body of site/stream.py")
    assert re.search(r"site/stream\.py, line 1[23] \(.*\) held the server for", line), line


def make_exc(filename: str, line: int) -> interrupt.PageTimeout:
    return interrupt.PageTimeout("WebSocket handler spin", filename, line, "n += 1", 31.0, "x")


def test_a_close_reason_names_the_handler_and_line_and_fits_its_frame():
    reason = watched.close_reason(make_exc("/srv/site/chat.py", 9), lambda p: "site/chat.py")
    assert reason == "spin held the server at site/chat.py, line 9, and was stopped"
    deep = "/srv/" + "é" * 200 + "/chat.py"  # (two bytes each: cut between characters)
    reason = watched.close_reason(make_exc(deep, 9), lambda p: p)
    assert reason.startswith("spin held the server at /srv/é")
    assert len(reason.encode()) <= watched.MAX_REASON
