"""Blocking code in a page, named: a watchdog for the event loop, and :func:`to_thread`.

Every page of a pyweb server runs in one thread, taking turns at each ``await`` (Marlow §3
runs one lightweight thread per connection; Hop §2.4's schedulers share one loop). A page
that does not ``await`` while it waits (``time.sleep``, a blocking HTTP or database client,
a long computation) holds that loop: no other request is answered, not even a static file,
until it lets go. Nothing breaks visibly; everything is just slow. So pyweb watches.

How: a task on the loop (:meth:`Watchdog.tick`) notes the time every 50 ms. A thread
(:meth:`Watchdog.watch`) looks every 50 ms; when the loop has not ticked for more than
:data:`HELD` (0.25 s) it reads the loop thread's stack (``sys._current_frames``), finds the
frame that runs a page (a frame of a code object in :data:`page_codes`: the site's
``run_in_guards``) and the line in the site's own files that holds the loop, and notes it on
the page's ``conn`` (``conn.held``); it looks again every 50 ms while the hold lasts, and
names the hold by the line it saw most (:meth:`Blocked.saw`). The page reports it when it
ends: one line in the error log, once per page and line, with the fix, and in development
mode a banner on the page.

The watchdog costs the server two wake-ups every 50 ms and, per request, one field of
``conn`` (``conn.watchdog``: this loop's watchdog, found cheaply by :func:`current`); it
never slows a page down (the thread only reads).

The fix is :func:`to_thread`: ``await pyweb.to_thread(fn, *args)`` runs ``fn(*args)`` in a
worker thread while the loop goes on serving everybody else.

Naming is not enough for a page that never lets go (a loop that never ends): under
``pyweb serve`` the watching thread also hands such a page, once it has held the loop past
``page_timeout`` or when a stop signal came, to :mod:`pyweb.app.interrupt`, which stops it
where it runs.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import time
import types
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from threading import get_ident
from typing import Any, NamedTuple, Protocol, TypeVar

from pyweb import runtime

__all__ = ["HELD", "Blocked", "PageRun", "Watchdog", "watchdog", "to_thread"]

HELD = 0.25
"""Seconds a page may hold the event loop before it is named."""

_TICK = 0.05  # how often the loop ticks and the thread looks

T = TypeVar("T")


async def to_thread(fn: Callable[..., T], /, *args: Any) -> T:
    """Run the blocking call ``fn(*args)`` in a worker thread and wait for it without
    holding the event loop: ``rows = await pyweb.to_thread(requests.get, url)``.

    The call sees the page's context (``pyweb.forms`` getters, ``current_conn()``). When the
    request is cancelled (the page deadline, the server stopping) the page stops waiting at
    once; the thread cannot be interrupted, so it finishes its call in the background and
    its result is dropped. At most 40 such threads run at once on trio (its default limit);
    on asyncio, the loop's default executor decides."""
    return await runtime.to_thread(fn, *args, abandon_on_cancel=True)


@dataclass
class Blocked:
    """One time a page held the loop: where (a file of the site and its line) and how long."""

    filename: str
    line: int
    source: str
    """The line's code, stripped (``time.sleep(1)``)."""
    seconds: float
    step: int = field(repr=False)
    own: bool = field(default=True, repr=False)
    """``filename`` is the site's own code (not a library's, not the framework's)."""
    seen: dict[tuple[str, int], int] = field(default_factory=dict, repr=False)
    """How many of the watchdog's looks found the page at each (file, line)."""

    def saw(self, filename: str, line: int, own: bool) -> None:
        """One more look found the page at ``filename:line``. The hold is named by the line
        seen most (the site's own code before any other; on a tie, the line that got there
        first), not by the last one: a look delayed on a busy machine can find the page a
        line past the one that held (``time.sleep(1)`` over, the next line running), and a
        sampler that kept the last look named that next line."""
        key = (filename, line)
        count = self.seen[key] = self.seen.get(key, 0) + 1
        best = self.seen.get((self.filename, self.line), 0)
        if (own and not self.own) or (own == self.own and count > best):
            self.filename, self.line, self.own = filename, line, own
            self.source = linecache.getline(filename, line).strip()


@dataclass
class PageRun:
    """A page that held the loop, as the watchdog saw it (made by the watching thread, the
    first time it finds the page holding the loop: a page that never does costs no
    PageRun)."""

    page: str
    root: str
    """The site directory: frames in files under it are the site's own code."""
    blocked: list[Blocked] = field(default_factory=list)
    """Filled by the watchdog thread while the page holds the loop."""


class WatchedPage(Protocol):
    """What a watchdog reads of a running page (the site's ``conn``)."""

    page: str
    """The page's name for messages."""
    site_root: str | None
    """The site directory: frames in files under it are the site's own code."""
    watchdog: Watchdog | None
    """The watchdog of the loop the page runs on (set by the site before the page runs)."""
    held: PageRun | None
    """What the watchdog saw the page hold (set by the watching thread)."""


class Look(NamedTuple):
    """One look of the watching thread at the loop's stack: the page and its line."""

    page: WatchedPage
    filename: str
    line: int
    own: bool
    """``filename`` is the site's own code."""


page_codes: dict[types.CodeType, str] = {}
"""The code objects whose frames run a page (the site's ``run_in_guards``; for a WebSocket
handler and a streamed body, those of :mod:`pyweb.app.watched`) → the name of their local
variable holding the page (a :class:`WatchedPage`): how a watchdog finds the page on its
loop's stack, with nothing to register per request."""


class Watchdog:
    """One per event loop (see :func:`watchdog`): the ticking task and the watching thread,
    which names the page holding the loop (see the module doc)."""

    def __init__(self) -> None:
        self.ticked = time.monotonic()
        self.ticks = 0
        self.loop_thread = threading.get_ident()
        self.reported: set[tuple[str, str, int]] = set()
        """(page, file, line) already named in the error log: once per page and cause."""
        self.ended = False
        """The loop's heartbeat has stopped: the loop has ended."""
        self._stop = threading.Event()

    async def tick(self) -> None:
        """The loop's heartbeat (a background task: it ends with the loop)."""
        sleep = runtime.current().sleep
        try:
            while True:
                self.ticked = time.monotonic()
                self.ticks += 1
                await sleep(_TICK)
        finally:
            self.ended = True
            self._stop.set()

    def watch(self) -> None:
        """The watching thread: look every 50 ms, read the loop's stack when it is held;
        a page held too long, or when the server is told to stop, is interrupted
        (:mod:`pyweb.app.interrupt`, where ``pyweb serve`` arms it)."""
        from . import interrupt  # (here: it imports this module)

        woke = time.monotonic()
        suspect = -1  # the tick count at which the loop was first seen held
        first_look: Look | None = None  # where the page was then
        while not self._stop.wait(_TICK):
            interrupt.check_stopping(self)
            now = time.monotonic()
            # If this thread itself slept far too long, the whole process was held (the
            # machine is busy): what the stack shows now proves nothing about the page.
            overslept = now - woke > 4 * _TICK
            woke = now
            ticks = self.ticks
            if now - self.ticked <= HELD + _TICK:
                suspect, first_look = -1, None
                continue
            if overslept:
                continue  # look again when this thread keeps time (the suspicion stands)
            if suspect != ticks:  # held: look again next time before naming anybody
                suspect, first_look = ticks, self._look()
                continue
            look = self._look()
            if look is not None:
                page = self._note(look, first_look, ticks, now - self.ticked)
                first_look = None  # counted once
                interrupt.consider(self, page, now - self.ticked)

    def _look(self) -> Look | None:
        """The page holding the loop, and where: the innermost line of the site's own
        files on the loop's stack (``own``), else the innermost frame. ``None`` when the
        loop runs no page (the framework itself, or a library's start-up)."""
        frame = sys._current_frames().get(self.loop_thread)
        page = self._running_page(frame)
        if page is None or frame is None:
            return None
        prefix = (page.site_root or "") + os.sep
        f: types.FrameType | None = frame
        while f is not None:
            if f.f_code.co_filename.startswith(prefix):
                return Look(page, f.f_code.co_filename, f.f_lineno or 0, True)
            f = f.f_back
        return Look(page, frame.f_code.co_filename, frame.f_lineno or 0, False)

    def _note(self, look: Look, earlier: Look | None, step: int, seconds: float) -> WatchedPage:
        """Count ``look`` (and ``earlier``, the look that raised the suspicion, when it saw
        the same page) on the page's hold at ``step`` (``page.held``); returns the page."""
        page = look.page
        run = page.held
        first = run is None
        if run is None:  # its first hold: the record is made here, not per request
            run = PageRun(page.page, page.site_root or "")
        if run.blocked and run.blocked[-1].step == step:
            hold = run.blocked[-1]
            hold.seconds = seconds  # the same hold, still going on: how long so far
        else:
            source = linecache.getline(look.filename, look.line).strip()
            hold = Blocked(look.filename, look.line, source, seconds, step, look.own)
            run.blocked.append(hold)
            if earlier is not None and earlier.page is page:
                hold.saw(earlier.filename, earlier.line, earlier.own)
        hold.saw(look.filename, look.line, look.own)
        if first:  # published whole: the page's own thread may read it at once (watched.py)
            page.held = run
        return page

    def _running_page(self, frame: types.FrameType | None) -> WatchedPage | None:
        """The innermost page running in ``frame`` or its callers, if this watchdog watches
        it (a page of this loop: another loop's watchdog, one whose loop ended unnoticed in
        this thread, never names it). Reading a frame's locals from this thread is safe:
        the loop's thread is stopped meanwhile (the GIL), and these are read only."""
        f = frame
        while f is not None:
            name = page_codes.get(f.f_code)
            if name is not None:
                page = f.f_locals.get(name)
                if getattr(page, "watchdog", None) is self:
                    return page
            f = f.f_back
        return None

    def start(self) -> None:
        runtime.spawn_background(self.tick)
        threading.Thread(target=self.watch, name="pyweb watchdog", daemon=True).start()

    def new_reports(self, run: PageRun) -> list[Blocked]:
        """The holds of ``run`` not named before (once per page, file and line)."""
        fresh = []
        for blocked in run.blocked:
            key = (run.page, blocked.filename, blocked.line)
            if key not in self.reported:
                self.reported.add(key)
                fresh.append(blocked)
        return fresh


_WATCHDOGS: dict[object, Watchdog] = {}
# How to ask whether each loop still runs: a process may have run trio and asyncio loops
# (the test suite does), and each runtime knows only its own kind of loop.
_ALIVE: dict[object, Callable[[object], bool]] = {}


def watchdog() -> Watchdog:
    """This loop's watchdog, started on first use (each test server has its own loop)."""
    rt = runtime.current()
    loop = rt.loop_id()
    dog = _WATCHDOGS.get(loop)
    if dog is None:
        for other in [key for key in _WATCHDOGS if not _ALIVE[key](key)]:
            del _WATCHDOGS[other], _ALIVE[other]  # loops that have ended
        dog = _WATCHDOGS[loop] = Watchdog()
        _ALIVE[loop] = rt.loop_alive
        dog.start()
    return dog


_task_dog: ContextVar[Watchdog | None] = ContextVar("pyweb_watchdog", default=None)
"""The watchdog a task has found: a connection's task serves all its requests."""


def current() -> Watchdog:
    """This loop's watchdog, found cheaply (it is asked on every request): the task
    remembers the watchdog it found, valid while that watchdog's loop runs in this thread.
    Otherwise :func:`watchdog` looks (and starts one). Not the running loop first: on
    Python 3.11, asyncio's ``_get_running_loop()`` makes a ``getpid`` system call each time
    (its check for a fork), which cost more than the rest of this function."""
    dog = _task_dog.get()
    if dog is None or dog.ended or dog.loop_thread != get_ident():
        dog = watchdog()
        _task_dog.set(dog)
    return dog


def describe(blocked: Blocked, display: Callable[[str], str]) -> str:
    """What the error log and the banner say about one hold."""
    code = f" ({blocked.source})" if blocked.source else ""
    return (
        f"{display(blocked.filename)}, line {blocked.line}{code} held the server for "
        f"{blocked.seconds:.1f} s: no other request was answered meanwhile. Blocking code "
        f"(time.sleep, a blocking client, a long computation) belongs in a worker thread: "
        f"await pyweb.to_thread(fn, *args); use await {runtime.current().name}.sleep(s) to wait"
    )
