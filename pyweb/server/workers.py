"""Workers: one server process per core under a supervisor that never gives up.

(What a worker itself does for its supervisor, on either loop, is ``supervised.py``;
this module is the supervisor, a program of its own that serves no pages. It needs no
event loop, trio's or asyncio's: it serves no connections, and all it ever waits for is a
handful of pipes (each worker's "ready" byte and its stderr), a few signals and two kinds of
deadline. The standard library waits for those directly, so the supervisor is the same
plain program whichever loop its workers serve on. See "How it waits" below.)

One server process uses one core. ``pyweb serve --workers N`` runs N copies of it, each a
process of its own, sharing one listening socket, under a *supervisor*: the parent process,
which serves nothing itself and only keeps the workers alive. This is Marlow's fault
tolerance (§1: "never crash, or restart at once") moved up a level: a page that crashes
its whole worker (a segfault in a C extension, ``os._exit``, the OOM killer) costs the
requests that worker had in flight, and the supervisor starts a replacement.

What the supervisor does, and why:

* **Shares the port.** It opens the listening socket once and passes it to every worker
  (``--listen-fd``). The kernel keeps one queue of waiting connections for the socket, so
  a worker that exits (crash, recycle, shutdown) takes no queued connection with it: the
  others accept it. (``SO_REUSEPORT`` gives each worker a queue of its own and spreads
  load more evenly, but closing a worker's socket resets the connections queued on it,
  which a recycle or a crash must not do; see docs/production.md.)
* **Restarts with back-off.** A worker that exits unexpectedly is started again after a
  delay that doubles while it keeps dying soon after start (0.1 s up to 10 s), so a broken
  deployment does not spin the CPU, and returns to 0.1 s once a worker has lived a while.
* **Gives up on a worker that cannot start.** A worker says it is ready (it writes a byte
  to the pipe named by ``PYWEB_READY_FD``: :func:`announce_ready`) once it listens. One
  that exits :data:`START_FAILURES` times in a row before saying so (a missing module, a
  broken configuration) will never serve: restarting it forever would print "serving"
  while the port never answers. The supervisor stops the other workers and exits with
  status :data:`START_FAILED_EXIT`, showing the last lines the worker wrote to stderr.
* **Recycles.** With ``--max-requests N`` a worker shuts down gracefully after N requests
  and exits with status :data:`RECYCLE_EXIT`; the supervisor replaces it at once.
* **Adds up the metrics.** Each worker counts its own requests; they leave their counts
  in a folder the supervisor makes (``PYWEB_METRICS_DIR``), and the one that answers
  ``/_pyweb/metrics`` sums them (``metrics.py``). The folder goes when the supervisor does.
* **Listens for signals before it speaks.** Its banner ("pyweb serving ...") is printed
  once its signal handlers are in place, so a script that sends SIGTERM as soon as it
  reads the banner gets a drain, not a process killed by the default action.
* **Forwards signals.** SIGHUP goes to every worker (each re-reads its configuration and
  pages: Marlow §6), and so does SIGUSR1 (each reopens its log files). SIGTERM or SIGINT
  is forwarded too; each worker drains (finishes the requests it accepted) and the
  supervisor exits 0 when the last one has. A second SIGTERM/SIGINT kills the workers
  (exit 1).

How it waits (the classic pre-fork "arbiter", as in Apache or gunicorn): one loop in
:meth:`Supervisor.run` asks :mod:`selectors` to wait until a pipe has something to read or
the nearest deadline comes, deals with what happened, and goes round again.

* **Pipes.** Each worker gets two: the ready pipe (one byte, or its end if the worker dies
  first) and its stderr, which the supervisor copies to its own line by line, keeping the
  last :data:`TAIL_LINES` lines to show if the worker cannot start.
* **Signals become bytes on a pipe.** A signal handler may interrupt the loop anywhere, so
  ours do nothing; :func:`signal.set_wakeup_fd` makes Python write each signal's number
  to a pipe of the supervisor's own (the "self-pipe"), which the loop reads like any other.
  SIGCHLD is one of them: a worker exited, so the loop asks each worker whether it has
  (:meth:`subprocess.Popen.poll`, which also reaps it).
* **Deadlines** are moments on :func:`time.monotonic`: when a slot's next worker is due (the
  back-off), and how long to wait after an exit for the worker's pipes to reach their end
  (:data:`PIPES_GRACE`), so that its last words are read before the supervisor decides
  what the exit means.
"""

from __future__ import annotations

import collections
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from .supervised import RECYCLE_EXIT

__all__ = [
    "Supervisor",
    "WorkerSlot",
    "RECYCLE_EXIT",
    "START_FAILED_EXIT",
    "START_FAILURES",
]

START_FAILED_EXIT = 3
"""Exit status of a supervisor whose worker could not start :data:`START_FAILURES` times."""

START_FAILURES = 3
"""Exits in a row before a worker said it was ready, after which the supervisor gives up."""

TAIL_LINES = 20
"""How many of a worker's last stderr lines the supervisor keeps, to show why it died."""

FIRST_DELAY = 0.1
MAX_DELAY = 10.0
HEALTHY_AFTER = 10.0
"""A worker that lived this long resets its slot's back-off to :data:`FIRST_DELAY`."""

PIPES_GRACE = 2.0
"""How long after a worker exits the supervisor waits for its pipes to reach their end
(they do at once, unless a child of the worker still holds them) before acting on it."""

WATCHED = (signal.SIGHUP, signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)
"""The signals the supervisor acts on while it runs (SIGCHLD: a worker exited)."""

WAKE = 0
"""The byte :meth:`Supervisor.stop` writes to the self-pipe (no signal has number 0)."""


@dataclass
class WorkerPipes:
    """The two pipes one worker writes to its supervisor (file descriptors; None once read
    to their end and closed)."""

    ready: int | None
    """Where the worker writes one byte once it listens (:func:`announce_ready`)."""
    stderr: int | None
    """The worker's stderr."""
    partial: bytes = b""
    """The start of a stderr line whose end has not come yet."""

    @property
    def closed(self) -> bool:
        return self.ready is None and self.stderr is None


@dataclass
class WorkerSlot:
    """One of the N places a worker runs in; its process changes as workers are replaced."""

    index: int
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    starts: int = 0
    delay: float = FIRST_DELAY
    exits: list[int] = field(default_factory=list)
    ready: bool = False
    """The current worker said it listens (:func:`announce_ready`)."""
    failed_starts: int = 0
    """Exits in a row before the worker was ready."""
    tail: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=TAIL_LINES)
    )
    """The last lines the current worker wrote to stderr."""
    pipes: WorkerPipes | None = None
    """The current worker's pipes."""
    start_at: float | None = 0.0
    """When to start this slot's next worker (:func:`time.monotonic`); None while one runs."""
    exit_seen_at: float | None = None
    """When the current worker's exit was seen, until the supervisor has acted on it."""

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def alive(self) -> bool:
        """The current worker runs (as far as the supervisor has seen)."""
        return self.process is not None and self.process.returncode is None

    def pipes_settled(self, now: float) -> bool:
        """The exited worker's pipes reached their end, or the wait for them is over."""
        assert self.exit_seen_at is not None
        return self.pipes is None or self.pipes.closed or now >= self.exit_seen_at + PIPES_GRACE


class Supervisor:
    """Run ``count`` workers, each ``command(index, fd)``, on one shared listening socket."""

    def __init__(
        self,
        listener: socket.socket,
        count: int,
        command: Callable[[int, int], Sequence[str]],
        *,
        say: Callable[[str], None] | None = None,
        start_failures: int = START_FAILURES,
        banner: str | None = None,
    ) -> None:
        if count < 1:
            raise ValueError(f"workers must be at least 1, got {count}")
        self.listener = listener
        self.start_failures = start_failures
        self.slots = [WorkerSlot(i) for i in range(count)]
        self.command = command
        self.stopping = False
        """A drain was asked for (:meth:`stop`): no worker starts any more."""
        self.say = say or (lambda text: print(f"pyweb: {text}", file=sys.stderr, flush=True))
        self.banner = banner
        """Printed (stdout) by :meth:`run` once the signal handlers are installed."""
        handle, self.table_path = tempfile.mkstemp(prefix="pyweb-workers-", suffix=".json")
        os.close(handle)
        self.metrics_dir = tempfile.mkdtemp(prefix="pyweb-metrics-")
        """Where the workers leave their counts for ``/_pyweb/metrics`` (metrics.py)."""
        self.failed = False
        """A worker could not start (:data:`START_FAILURES` exits before it was ready)."""
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()  # the self-pipe: signals and stop() write
        os.set_blocking(self._wake_r, False)  # to it, so that the loop wakes up
        os.set_blocking(self._wake_w, False)  # (set_wakeup_fd wants it non-blocking)
        self._wake_lock = threading.Lock()  # stop() from another thread vs. closing it
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._terminated = False  # the drain's SIGTERMs were sent
        self._forced = False  # a second SIGTERM/SIGINT killed the workers
        self._finished = False
        self._changed = threading.Condition()  # for wait_for_starts, in another thread

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> int:
        """Supervise until SIGTERM/SIGINT; returns the exit status (0 after a drain). Call it
        from the main thread: only it may install signal handlers."""
        previous = self._catch_signals()
        try:
            if self.banner is not None:  # only now: a signal after it is acted on
                print(self.banner, flush=True)
            while True:
                if self.stopping:
                    self._terminate_once()
                if self._all_exited():
                    break
                self._start_due()
                self._wait()
                self._reap()
                self._act_on_exits()
        finally:
            self._restore_signals(previous)
            self._kill_all()  # never leave orphans, whatever happened
            self._close_pipes()
            self._remove_files()
            with self._changed:
                self._finished = True
                self._changed.notify_all()
        if self.failed:
            return START_FAILED_EXIT
        return 1 if self._forced else 0

    def _wait(self) -> None:
        """Sleep until a pipe has something to read or the nearest deadline, and read it."""
        for key, _ in self._selector.select(self._timeout()):
            if key.data is None:
                self._read_signals()
            else:
                key.data()  # the reader of one worker's pipe (see _start)

    def _timeout(self) -> float | None:
        """Seconds until the nearest deadline (None: there is none, wait for a pipe)."""
        deadlines = [s.exit_seen_at + PIPES_GRACE for s in self.slots if s.exit_seen_at is not None]
        if not self.stopping:
            deadlines += [s.start_at for s in self.slots if s.start_at is not None]
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - time.monotonic())

    def _all_exited(self) -> bool:
        """Stopping, and every worker has exited and its pipes have been read."""
        if not self.stopping:
            return False
        return not any(slot.alive or slot.exit_seen_at is not None for slot in self.slots)

    # --- starting a worker ------------------------------------------------------------------

    def _start_due(self) -> None:
        """Start the workers whose time has come (none once stopping)."""
        now = time.monotonic()
        for slot in self.slots:
            if not self.stopping and slot.start_at is not None and slot.start_at <= now:
                self._start(slot)

    def _start(self, slot: WorkerSlot) -> None:
        fd = self.listener.fileno()
        ready_r, ready_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        env = dict(
            os.environ,
            PYWEB_WORKERS_FILE=self.table_path,
            PYWEB_METRICS_DIR=self.metrics_dir,
            PYWEB_WORKER_ID=str(slot.index),
            PYWEB_READY_FD=str(ready_w),
        )
        slot.start_at = None
        slot.ready = False
        slot.tail.clear()
        try:
            process = subprocess.Popen(
                list(self.command(slot.index, fd)),
                pass_fds=(fd, ready_w),
                env=env,
                stderr=stderr_w,
            )
        except BaseException:
            os.close(ready_r)
            os.close(stderr_r)
            raise
        finally:  # the worker has its ends; ours would keep the pipes from ever ending
            os.close(ready_w)
            os.close(stderr_w)
        slot.process = process
        slot.pipes = pipes = WorkerPipes(ready_r, stderr_r)
        reading = selectors.EVENT_READ
        self._selector.register(ready_r, reading, lambda: self._read_ready(slot, pipes))
        self._selector.register(stderr_r, reading, lambda: self._read_stderr(slot, pipes))
        slot.started_at = time.monotonic()
        slot.starts += 1
        self._write_table()
        with self._changed:
            self._changed.notify_all()

    def _write_table(self) -> None:
        rows = [{"worker": s.index, "pid": s.pid} for s in self.slots if s.pid is not None]
        temporary = self.table_path + ".new"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(rows, f)
        os.replace(temporary, self.table_path)  # readers never see half a file

    # --- the workers' pipes -----------------------------------------------------------------

    def _read_ready(self, slot: WorkerSlot, pipes: WorkerPipes) -> None:
        """Mark the slot ready when its worker writes to the pipe (its end: it died first)."""
        assert pipes.ready is not None
        if os.read(pipes.ready, 1) and pipes is slot.pipes:
            slot.ready = True
        self._close(pipes.ready)
        pipes.ready = None

    def _read_stderr(self, slot: WorkerSlot, pipes: WorkerPipes) -> None:
        """Copy what the worker wrote to stderr to ours line by line, keeping the last lines."""
        assert pipes.stderr is not None
        chunk = os.read(pipes.stderr, 65536)
        if chunk:
            lines = (pipes.partial + chunk).split(b"\n")
            pipes.partial = lines.pop()
        else:  # its end: the worker (and whoever shared its stderr) has gone
            lines = [pipes.partial] if pipes.partial else []
            self._close(pipes.stderr)
            pipes.stderr = None
        for line in lines:
            text = line.decode("utf-8", "replace")
            slot.tail.append(text)
            print(text, file=sys.stderr, flush=True)

    def _close(self, fd: int) -> None:
        self._selector.unregister(fd)
        os.close(fd)

    def _close_pipes(self) -> None:
        """At the end: close every pipe still open (some may be those of earlier workers,
        held by a child of theirs), the self-pipe last."""
        for key in list(self._selector.get_map().values()):
            if key.fd != self._wake_r:
                self._close(key.fd)
        with self._wake_lock:
            self._close(self._wake_r)
            os.close(self._wake_w)
            self._wake_w = -1
        self._selector.close()

    # --- exits ------------------------------------------------------------------------------

    def _reap(self) -> None:
        """Note the exit of every worker that has exited (poll() reaps it: no zombie)."""
        for slot in self.slots:
            if slot.alive:
                assert slot.process is not None
                status = slot.process.poll()
                if status is not None:
                    slot.exits.append(status)
                    slot.exit_seen_at = time.monotonic()

    def _act_on_exits(self) -> None:
        """Decide about each exited worker once its pipes have been read (its last words,
        whether it said it was ready); when stopping there is nothing to decide."""
        now = time.monotonic()
        for slot in self.slots:
            if slot.exit_seen_at is not None and slot.pipes_settled(now):
                if self.stopping:
                    slot.exit_seen_at = None  # (its deadline is over: no more wake-ups for it)
                else:
                    self._after_exit(slot, now)

    def _after_exit(self, slot: WorkerSlot, now: float) -> None:
        """Give up, replace the worker at once (recycled), or replace it after the back-off."""
        assert slot.process is not None and slot.exit_seen_at is not None
        process, status = slot.process, slot.process.returncode
        assert status is not None
        lived = slot.exit_seen_at - slot.started_at
        slot.exit_seen_at = None
        if self._gave_up(slot, status):
            return
        if status == RECYCLE_EXIT:
            self.say(f"worker {slot.index} (pid {process.pid}) recycled; starting another")
            slot.delay = FIRST_DELAY
            slot.start_at = now
            return
        if lived >= HEALTHY_AFTER:
            slot.delay = FIRST_DELAY
        self.say(
            f"worker {slot.index} (pid {process.pid}) exited with {exit_text(status)}; "
            f"restarting in {slot.delay:g} s"
        )
        slot.start_at = now + slot.delay
        slot.delay = min(slot.delay * 2, MAX_DELAY)

    def _gave_up(self, slot: WorkerSlot, status: int) -> bool:
        """Count an exit before the worker was ready; after START_FAILURES in a row, say
        why (the worker's last stderr lines) and stop the supervisor."""
        if slot.ready or status == RECYCLE_EXIT:
            slot.failed_starts = 0
            return False
        slot.failed_starts += 1
        if slot.failed_starts < self.start_failures:
            return False
        last = "\n".join(f"    {line}" for line in slot.tail) or "    (it wrote nothing to stderr)"
        self.say(
            f"worker {slot.index} exited with {exit_text(status)} before it was ready, "
            f"{slot.failed_starts} times in a row; it cannot start, so the supervisor "
            f"stops. Its last words:\n{last}"
        )
        self.failed = True
        self.stop()
        return True

    # --- signals ----------------------------------------------------------------------------

    def _catch_signals(self) -> tuple[int, list[Any]]:
        """Have every watched signal written to the self-pipe; returns what was there
        before (the wake-up fd, the handlers), for :meth:`_restore_signals`."""
        wakeup_fd = signal.set_wakeup_fd(self._wake_w)
        return wakeup_fd, [signal.signal(signum, do_nothing) for signum in WATCHED]

    def _restore_signals(self, previous: tuple[int, list[Any]]) -> None:
        wakeup_fd, handlers = previous
        for signum, handler in zip(WATCHED, handlers, strict=True):
            # None: a handler not installed from Python; the default is the nearest thing.
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        signal.set_wakeup_fd(wakeup_fd)

    def _read_signals(self) -> None:
        """Act on each signal number (or :data:`WAKE`) written to the self-pipe."""
        while True:
            try:
                received = os.read(self._wake_r, 512)
            except BlockingIOError:
                return
            for signum in received:
                self._on_signal(signum)

    def _on_signal(self, signum: int) -> None:
        if signum in (signal.SIGHUP, signal.SIGUSR1):
            # Reload / reopen the logs: each worker does it for itself.
            self._signal_all(signum)
        elif signum in (signal.SIGTERM, signal.SIGINT):
            if not self.stopping:
                self.say(f"{signal.Signals(signum).name}: draining the workers")
                self.stop()
            else:
                self.say("second signal: killing the workers")
                self._forced = True
                self._signal_all(signal.SIGKILL)
        # SIGCHLD, WAKE: nothing to do here; the loop looks at every worker after a wake-up

    def _signal_all(self, signum: int) -> None:
        for slot in self.slots:
            if slot.process is not None and slot.process.returncode is None:
                try:
                    slot.process.send_signal(signum)
                except ProcessLookupError:  # exited between the check and the signal
                    pass

    # --- stopping ---------------------------------------------------------------------------

    def stop(self) -> None:
        """Drain: SIGTERM every worker (each finishes what it accepted), then return from
        :meth:`run` with status 0 once the last one has exited. May be called from another
        thread, or before :meth:`run` (which then starts no worker)."""
        self.stopping = True
        with self._wake_lock:  # wake the loop up, to send the SIGTERMs
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, bytes([WAKE]))
                except BlockingIOError:  # the pipe is full: the loop will wake anyway
                    pass

    def _terminate_once(self) -> None:
        """The drain's SIGTERM to every worker, sent once. A worker whose start stop() came
        during (its predecessor had just recycled) is running by now and gets it too."""
        if not self._terminated:
            self._terminated = True
            self._signal_all(signal.SIGTERM)

    def _kill_all(self) -> None:
        self._signal_all(signal.SIGKILL)
        for slot in self.slots:
            if slot.process is not None:
                try:
                    slot.process.wait(timeout=5)
                except subprocess.TimeoutExpired:  # pragma: no cover - stuck in the kernel
                    pass

    def _remove_files(self) -> None:
        for name in (self.table_path, self.table_path + ".new"):
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
        shutil.rmtree(self.metrics_dir, ignore_errors=True)

    def wait_for_starts(self, total: int, timeout: float = 20.0) -> None:
        """Wait until workers have been started ``total`` times in all (for tests, from
        another thread than :meth:`run`'s); TimeoutError if that does not happen."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._finished or sum(s.starts for s in self.slots) >= total, timeout
            )
            if sum(s.starts for s in self.slots) < total:
                raise TimeoutError(f"{total} worker starts did not happen")


def exit_text(status: int) -> str:
    """``signal 9`` or ``status 3``: how a worker exited (Popen's negative status: a signal)."""
    return f"signal {-status}" if status < 0 else f"status {status}"


def do_nothing(signum: int, frame: FrameType | None) -> None:
    """The handler of the watched signals: the byte set_wakeup_fd writes is the news."""
