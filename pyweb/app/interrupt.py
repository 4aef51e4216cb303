"""Stopping a page that holds the server: the page timeout for code that never awaits, and
Ctrl-C or SIGTERM while a page holds the loop.

A page that awaits is stopped at its deadline by a cancel scope (Marlow §4: a handler gets
a time limit, then the client gets an error and the server goes on). A cancel scope only
acts at an ``await``, so a page that never gets there (``while n >= 0: n += 1``, a
``time.sleep(100)``) holds the event loop for good: no other request is answered, and the
signals that stop the server (Ctrl-C, SIGTERM) wait in the loop's queue, which never runs.

The fix is to interrupt the page *where it runs*, as Ctrl-C interrupts a plain Python
program. Python runs a signal handler in the main thread between two bytecodes, and a
signal also ends a blocking call such as ``time.sleep``; whatever the handler raises is
raised there, in the running frame. So:

* :class:`~pyweb.app.blocking.Watchdog`'s thread, which already sees a page that holds the
  loop, calls :func:`consider`; past ``page_timeout`` it names the page as the target and
  sends :data:`PAGE_SIGNAL` to the main thread (``signal.pthread_kill``). Its handler
  (:func:`_on_alarm`) raises :class:`PageTimeout` in the page, and the site answers 503
  naming the page and its line (``Site._interrupted``). The watchdog asks again every
  50 ms while the page holds on (a page may catch the exception).
* SIGINT and SIGTERM get a handler in front of the loop's own (:func:`guard_stop_signals`):
  it passes the signal on to the loop (which starts the graceful shutdown as soon as it
  runs again) and, if a page holds the loop at that moment, raises :class:`ServerStopping`
  in it. A second signal while a page still holds the loop exits at once; so does the
  watchdog's thread if the loop stays held :data:`STOP_GRACE` seconds after a stop signal
  (a page that catches every exception). So Ctrl-C always stops the server, never only
  a page.

A WebSocket handler and the generator of a streamed body run after their page has
answered, outside the runner's frame; :mod:`pyweb.app.watched` runs each in a frame the
watchdog finds as well (:data:`~pyweb.app.blocking.page_codes`), so they are interrupted
by the same handlers, and it ends them as their kind needs (the socket closed with 1011,
the stream cut).

The exception is raised only in the page's own code (or a library it called): never when
the running frame is the framework's (pyweb, trio, asyncio, ...), whose state must stay
whole for the server to go on. There the handler does nothing, and the watchdog asks again
a moment later, when the page is most likely back in its own code. It is a
``BaseException`` (as ``KeyboardInterrupt`` is), so a page's ``except Exception:`` does not
swallow it.

What cannot be interrupted: one long call into C that holds the interpreter (a huge
``sum(range(...))``, a regular expression that backtracks): Python runs no handler until
it returns, the same as for Ctrl-C in a plain script. This works in ``pyweb serve``
(:func:`arm`), whose loop runs in the main thread; a server in another thread (tests,
notebooks) only names the page, as before.
"""

from __future__ import annotations

import importlib.util
import linecache
import os
import selectors
import signal
import sys
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import blocking

__all__ = [
    "PAGE_SIGNAL",
    "STOP_GRACE",
    "PageInterrupted",
    "PageTimeout",
    "ServerStopping",
    "arm",
    "consider",
    "describe",
    "guard_stop_signals",
]

PAGE_SIGNAL = signal.SIGALRM
"""The signal the watchdog's thread sends the main thread to interrupt a page."""

STOP_GRACE = 3.0
"""Seconds the loop may stay held after SIGINT/SIGTERM before the process exits at once."""


class PageInterrupted(BaseException):
    """Raised inside a page that held the server: where it was, and why it was stopped."""

    def __init__(
        self, page: str, filename: str, line: int, source: str, seconds: float, why: str
    ) -> None:
        super().__init__(f"{page} stopped at {filename}, line {line}: {why}")
        self.page = page
        self.filename = filename
        self.line = line
        self.source = source
        """The line's code, stripped (``n += 1``)."""
        self.seconds = seconds
        """How long the page had held the loop."""
        self.why = why


class PageTimeout(PageInterrupted):
    """The page held the loop longer than ``page_timeout``."""


class ServerStopping(PageInterrupted):
    """SIGINT or SIGTERM came while the page held the loop: the server is shutting down."""


@dataclass
class _Armed:
    """What the main thread's handlers and the watchdog's thread share."""

    limit: float
    """``page_timeout``: seconds a page may hold the loop."""
    main: int
    """The main thread, where the loop runs and where Python runs signal handlers."""
    target: Any = None
    """The page (its ``conn``) to interrupt, set by the watchdog's thread."""
    stopping: str | None = None
    """The name of the first stop signal (``SIGINT``), once one came."""
    stop_at: float = 0.0


_armed: _Armed | None = None


def _framework() -> tuple[str, ...]:
    """Where the server's own code lives: an exception raised in one of its frames could
    leave a lock held or a loop's queue half-updated, so a page is never interrupted
    while one of them runs. (Found, not imported: pages reach the loops only through
    pyweb.runtime.)"""
    dirs = []
    for name in ("pyweb", "asyncio", "anyio", "outcome", "sniffio", "trio", "uvloop"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            dirs.append(os.path.dirname(spec.origin) + os.sep)
    return (*dirs, threading.__file__, signal.__file__, selectors.__file__)


_FRAMEWORK = _framework()


def arm(page_timeout: float) -> None:
    """Interrupt pages that hold the loop longer than ``page_timeout`` seconds (called by
    ``pyweb serve`` in the main thread, before its loop starts, and again on reload)."""
    global _armed
    if _armed is None:
        signal.signal(PAGE_SIGNAL, _on_alarm)
        _armed = _Armed(page_timeout, threading.main_thread().ident or 0)
    _armed.limit = page_timeout


def set_limit(page_timeout: float) -> None:
    """A new ``page_timeout`` (SIGHUP re-read the settings), if :func:`arm` was called."""
    if _armed is not None:
        _armed.limit = page_timeout


def disarm() -> None:
    """Undo :func:`arm` (the default handler again): for tests that arm in their process."""
    global _armed
    if _armed is not None:
        _armed = None
        signal.signal(PAGE_SIGNAL, signal.SIG_DFL)


def guard_stop_signals(signums: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> None:
    """Put :func:`_on_stop` in front of the handlers the loop installed for ``signums``
    (called in the main thread once the loop watches its signals; only once armed)."""
    if _armed is None:
        return
    for signum in signums:
        previous = signal.getsignal(signum)
        signal.signal(signum, _stop_handler(previous))


def _stop_handler(previous: Any) -> Callable[[int, types.FrameType | None], None]:
    def on_stop(signum: int, frame: types.FrameType | None) -> None:
        if callable(previous):
            previous(signum, frame)  # the loop's own handling: it acts when it runs again
        _on_stop(signum, frame)

    return on_stop


def _on_stop(signum: int, frame: types.FrameType | None) -> None:
    armed = _armed
    if armed is None:
        return
    name = signal.Signals(signum).name
    first = armed.stopping is None
    if first:
        armed.stopping, armed.stop_at = name, time.monotonic()
    page = _page_in(frame)
    if page is None:
        return  # the loop is free: it handles the signal itself
    if not first:
        _say(f"second signal while {page.page} holds the server: stopping now")
        os._exit(1)
    armed.target = page
    _raise_in(frame, page, ServerStopping, f"when the server was told to stop ({name})")


def _on_alarm(signum: int, frame: types.FrameType | None) -> None:
    """The watchdog's signal: stop the target page if it is the one running now."""
    armed = _armed
    if armed is None or armed.target is None:
        return  # (the signal came from elsewhere)
    if _page_in(frame) is not armed.target:
        armed.target = None  # that page has ended meanwhile: nothing to stop
        return
    if armed.stopping is not None:
        kind: type[PageInterrupted] = ServerStopping
        why = f"when the server was told to stop ({armed.stopping})"
    else:
        kind, why = PageTimeout, f"longer than the page timeout ({armed.limit:g} s, --page-timeout)"
    _raise_in(frame, armed.target, kind, why)


def _raise_in(
    frame: types.FrameType | None, page: Any, kind: type[PageInterrupted], why: str
) -> None:
    """Raise ``kind`` here, in the page's running frame, unless that frame is the
    framework's (then the watchdog asks again shortly)."""
    if frame is None or frame.f_code.co_filename.startswith(_FRAMEWORK):
        return
    where = frame
    root = (page.site_root or "") + os.sep
    f: types.FrameType | None = frame
    while f is not None:  # the innermost line in the site's own files names the cause
        if f.f_code.co_filename.startswith(root):
            where = f
            break
        f = f.f_back
    filename, line = where.f_code.co_filename, where.f_lineno or 0
    source = linecache.getline(filename, line).strip()
    dog = page.watchdog
    seconds = time.monotonic() - dog.ticked if dog is not None else 0.0
    raise kind(page.page, filename, line, source, seconds, why)


def _page_in(frame: types.FrameType | None) -> Any:
    """The innermost page running in ``frame`` or its callers (None: not in a page)."""
    f = frame
    while f is not None:
        name = blocking.page_codes.get(f.f_code)
        if name is not None:
            return f.f_locals.get(name)
        f = f.f_back
    return None


def consider(dog: blocking.Watchdog, page: Any, seconds: float) -> None:
    """The watchdog's thread saw ``page`` hold ``dog``'s loop for ``seconds``: past the
    limit, or once the server is stopping, interrupt it."""
    armed = _armed
    if armed is None or dog.loop_thread != armed.main:
        return  # not armed, or a loop in another thread: signals cannot reach it
    if armed.stopping is None and seconds <= armed.limit:
        return
    armed.target = page
    signal.pthread_kill(armed.main, PAGE_SIGNAL)


def check_stopping(dog: blocking.Watchdog) -> None:
    """The watchdog's thread, at each look: a stop signal came and the loop has been held
    for :data:`STOP_GRACE` seconds since; a page that will not stop must not keep the
    server (and its port) alive, so the process exits now."""
    armed = _armed
    if armed is None or armed.stopping is None or dog.loop_thread != armed.main:
        return
    if time.monotonic() - max(dog.ticked, armed.stop_at) > STOP_GRACE:
        _say(
            f"{armed.stopping}: the server is held and did not stop in {STOP_GRACE:g} s; stopping now"
        )
        os._exit(1)


def describe(exc: PageInterrupted, display: Callable[[str], str]) -> str:
    """What the error log and the 503 page (in development mode) say."""
    code = f" ({exc.source})" if exc.source else ""
    advice = (
        "No other request is answered while a page holds the server: a long computation "
        "or a blocking call belongs in a worker thread (await pyweb.to_thread(fn, *args))"
    )
    if isinstance(exc, ServerStopping):
        advice = "The server stops once the other requests in progress are answered"
    where = display(exc.filename)
    page = "" if where == exc.page else f" {exc.page}"  # (else: the line is in a module)
    return (
        f"{where}, line {exc.line}{code} held the server for {exc.seconds:.1f} s, "
        f"{exc.why}, and{page} was stopped there. {advice}."
    )


def _say(text: str) -> None:
    print(f"pyweb: {text}", file=sys.stderr, flush=True)
