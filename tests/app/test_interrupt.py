"""pyweb.app.interrupt's rules, one by one (tests/reliability/test_cpu_page.py runs them in
real ``pyweb serve`` processes): the exception is raised only in the page's own code, never
in the framework's; a signal that comes after the page ended stops nothing; a loop in
another thread is never signalled; the message names the file and line."""

from __future__ import annotations

import json  # noqa: F401 - a library whose frame a page may be in
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import pyweb
from pyweb.app import interrupt


def frame_in(
    filename: str, source: str = "import sys\nframe = sys._getframe()\n"
) -> types.FrameType:
    """A frame whose code comes from ``filename`` (as if that file were running)."""
    scope: dict[str, object] = {}
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - a frame of a given file
    return scope["frame"]  # type: ignore[return-value]


def a_page(root: Path) -> types.SimpleNamespace:
    """What interrupt reads of a running page (its conn)."""
    dog = types.SimpleNamespace(ticked=time.monotonic() - 2.0, loop_thread=threading.get_ident())
    return types.SimpleNamespace(page="site/spin.py", site_root=str(root), watchdog=dog)


@pytest.fixture
def armed() -> Iterator[None]:
    assert threading.current_thread() is threading.main_thread()
    before = signal.getsignal(interrupt.PAGE_SIGNAL)
    interrupt.arm(1.0)
    try:
        yield
    finally:
        interrupt.disarm()
        signal.signal(interrupt.PAGE_SIGNAL, before)


def test_raised_in_the_pages_own_frame_naming_its_file_and_line(tmp_path):
    page_file = tmp_path / "spin.py"
    page_file.write_text("n = 0\nimport sys\nframe = sys._getframe()\n")
    frame = frame_in(str(page_file), page_file.read_text())
    with pytest.raises(interrupt.PageTimeout) as caught:
        interrupt._raise_in(frame, a_page(tmp_path), interrupt.PageTimeout, "too long")
    exc = caught.value
    assert (exc.page, exc.filename, exc.line) == ("site/spin.py", str(page_file), 3)
    assert exc.source == "frame = sys._getframe()"
    assert exc.seconds >= 2.0
    said = interrupt.describe(exc, lambda path: "site/spin.py")
    assert said.startswith("site/spin.py, line 3 (frame = sys._getframe()) held the server for")
    assert "too long, and was stopped there" in said


@pytest.mark.parametrize("module", [pyweb, pytest.importorskip("trio"), __import__("asyncio")])
def test_never_raised_in_the_frameworks_own_code(tmp_path, module):
    frame = frame_in(module.__file__)
    assert interrupt._raise_in(frame, a_page(tmp_path), interrupt.PageTimeout, "x") is None


def test_a_library_the_page_called_is_interrupted_too(tmp_path):
    library = frame_in(sys.modules["json"].__file__)  # not the framework: a page's call
    with pytest.raises(interrupt.PageTimeout) as caught:
        interrupt._raise_in(library, a_page(tmp_path), interrupt.PageTimeout, "x")
    assert caught.value.filename == sys.modules["json"].__file__  # (no site frame above it)


def test_a_signal_after_the_page_ended_stops_nothing(armed, tmp_path):
    state = interrupt._armed
    assert state is not None
    state.target = a_page(tmp_path)  # the watchdog named it; it ended before the handler ran
    interrupt._on_alarm(interrupt.PAGE_SIGNAL, sys._getframe())  # no page on this stack
    assert state.target is None


def test_a_loop_in_another_thread_is_never_signalled(armed, tmp_path):
    page = a_page(tmp_path)
    page.watchdog.loop_thread = -1  # (not the main thread: signals cannot reach its frames)
    interrupt.consider(page.watchdog, page, seconds=100.0)  # type: ignore[arg-type]
    assert interrupt._armed is not None and interrupt._armed.target is None


def test_within_the_limit_nothing_happens_past_it_the_page_is_named(armed, tmp_path):
    page = a_page(tmp_path)
    state = interrupt._armed
    assert state is not None
    interrupt.consider(page.watchdog, page, seconds=0.5)  # type: ignore[arg-type]
    assert state.target is None
    caught = []
    signal.signal(interrupt.PAGE_SIGNAL, lambda signum, frame: caught.append(signum))
    interrupt.consider(page.watchdog, page, seconds=1.5)  # type: ignore[arg-type]
    assert state.target is page
    deadline = time.monotonic() + 10
    while not caught and time.monotonic() < deadline:  # the handler runs at the next bytecode
        time.sleep(0.01)
    assert caught == [interrupt.PAGE_SIGNAL]


def test_not_armed_nothing_is_signalled(tmp_path):
    assert interrupt._armed is None  # in-process servers (tests, notebooks) only name pages
    page = a_page(tmp_path)
    interrupt.consider(page.watchdog, page, seconds=100.0)  # type: ignore[arg-type]
    interrupt.check_stopping(page.watchdog)  # type: ignore[arg-type]
    before = signal.getsignal(signal.SIGINT)
    interrupt.guard_stop_signals()
    assert signal.getsignal(signal.SIGINT) is before
