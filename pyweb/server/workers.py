"""Workers: one server process per core under a supervisor that never gives up.

(What a worker itself does for its supervisor, on either loop, is ``supervised.py``;
this module is the supervisor, a program of its own that serves no pages. It runs on
trio whichever loop its workers serve on: what it needs, child processes with piped
stderr, a signal receiver and a nursery of watchers, is outside what pages and
connections ask of an event loop, so it stays out of ``pyweb.runtime``.)

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
  pages: Marlow §6), and so does SIGUSR1 (each reopens its log files). SIGTERM or SIGINT is forwarded too; each worker drains (finishes the
  requests it accepted) and the supervisor exits 0 when the last one has. A second
  SIGTERM/SIGINT kills the workers (exit 1).
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import trio

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


@dataclass
class WorkerSlot:
    """One of the N places a worker runs in; its process changes as workers are replaced."""

    index: int
    process: trio.Process | None = None
    started_at: float = 0.0
    starts: int = 0
    delay: float = FIRST_DELAY
    exits: list[int] = field(default_factory=list)
    starting: bool = False
    """A worker is being started (its process does not exist yet)."""
    ready: bool = False
    """The current worker said it listens (:func:`announce_ready`)."""
    failed_starts: int = 0
    """Exits in a row before the worker was ready."""
    tail: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=TAIL_LINES)
    )
    """The last lines the current worker wrote to stderr."""
    stderr_done: trio.Event = field(default_factory=trio.Event)
    """Set when the current worker's stderr reached its end."""
    ready_known: trio.Event = field(default_factory=trio.Event)
    """Set when the current worker said it is ready, or died without saying so."""

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


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
        self.say = say or (lambda text: print(f"pyweb: {text}", file=sys.stderr, flush=True))
        self.banner = banner
        """Printed (stdout) by :meth:`run` once the signal handlers are installed."""
        handle, self.table_path = tempfile.mkstemp(prefix="pyweb-workers-", suffix=".json")
        os.close(handle)
        self.metrics_dir = tempfile.mkdtemp(prefix="pyweb-metrics-")
        """Where the workers leave their counts for ``/_pyweb/metrics`` (metrics.py)."""
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.failed = False
        """A worker could not start (:data:`START_FAILURES` exits before it was ready)."""

    def _write_table(self) -> None:
        rows = [{"worker": s.index, "pid": s.pid} for s in self.slots if s.pid is not None]
        temporary = self.table_path + ".new"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(rows, f)
        os.replace(temporary, self.table_path)  # readers never see half a file

    async def _start(self, slot: WorkerSlot) -> trio.Process:
        fd = self.listener.fileno()
        ready_r, ready_w = os.pipe()
        env = dict(
            os.environ,
            PYWEB_WORKERS_FILE=self.table_path,
            PYWEB_METRICS_DIR=self.metrics_dir,
            PYWEB_WORKER_ID=str(slot.index),
            PYWEB_READY_FD=str(ready_w),
        )
        slot.starting = True
        slot.ready = False
        slot.tail.clear()
        try:
            process = await trio.lowlevel.open_process(
                list(self.command(slot.index, fd)),
                pass_fds=(fd, ready_w),
                env=env,
                stderr=subprocess.PIPE,
            )
        except BaseException:
            os.close(ready_r)
            raise
        finally:
            os.close(ready_w)
            slot.starting = False
        assert self._nursery is not None
        slot.ready_known = trio.Event()
        self._nursery.start_soon(self._watch_ready, slot, ready_r)
        slot.stderr_done = trio.Event()
        self._nursery.start_soon(self._forward_stderr, slot, process)
        slot.process = process
        if self.stopping:
            # stop() came while this worker was being started (its predecessor had just
            # recycled): it missed the SIGTERM the others got, so it gets its own, or it
            # would serve on and the drain would wait for it forever.
            try:
                process.send_signal(signal.SIGTERM)
            except ProcessLookupError:  # pragma: no cover - it died at once
                pass
        slot.started_at = time.monotonic()
        slot.starts += 1
        self._write_table()
        self._changed.set()
        self._changed = trio.Event()
        return process

    async def _watch_ready(self, slot: WorkerSlot, fd: int) -> None:
        """Mark the slot ready when its worker writes to the pipe (EOF: it died first)."""
        stream = trio.lowlevel.FdStream(fd)
        try:
            if await stream.receive_some(1):
                slot.ready = True
        finally:
            slot.ready_known.set()
            await stream.aclose()

    async def _forward_stderr(self, slot: WorkerSlot, process: trio.Process) -> None:
        """Copy the worker's stderr to ours line by line, keeping the last lines."""
        assert process.stderr is not None
        pending = b""
        try:
            while chunk := await process.stderr.receive_some(65536):
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    text = line.decode("utf-8", "replace")
                    slot.tail.append(text)
                    print(text, file=sys.stderr, flush=True)
            if pending:
                text = pending.decode("utf-8", "replace")
                slot.tail.append(text)
                print(text, file=sys.stderr, flush=True)
        except (trio.ClosedResourceError, trio.BrokenResourceError):  # pragma: no cover
            pass
        finally:
            slot.stderr_done.set()

    async def _run_slot(self, slot: WorkerSlot) -> None:
        while not self.stopping:
            process = await self._start(slot)
            status = await process.wait()
            slot.exits.append(status)
            lived = time.monotonic() - slot.started_at
            if self.stopping:
                return
            if await self._gave_up(slot, status):
                return
            if status == RECYCLE_EXIT:
                self.say(f"worker {slot.index} (pid {process.pid}) recycled; starting another")
                slot.delay = FIRST_DELAY
                continue
            if lived >= HEALTHY_AFTER:
                slot.delay = FIRST_DELAY
            how = f"signal {-status}" if status < 0 else f"status {status}"
            self.say(
                f"worker {slot.index} (pid {process.pid}) exited with {how}; "
                f"restarting in {slot.delay:g} s"
            )
            await trio.sleep(slot.delay)
            slot.delay = min(slot.delay * 2, MAX_DELAY)

    async def _gave_up(self, slot: WorkerSlot, status: int) -> bool:
        """Count an exit before the worker was ready; after START_FAILURES in a row, say
        why (the worker's last stderr lines) and stop the supervisor."""
        with trio.move_on_after(2):  # both pipes close when it exits (unless a child of
            await slot.stderr_done.wait()  # the worker holds them: then wait no longer)
            await slot.ready_known.wait()
        if slot.ready or status == RECYCLE_EXIT:
            slot.failed_starts = 0
            return False
        slot.failed_starts += 1
        if slot.failed_starts < self.start_failures:
            return False
        how = f"signal {-status}" if status < 0 else f"status {status}"
        last = "\n".join(f"    {line}" for line in slot.tail) or "    (it wrote nothing to stderr)"
        self.say(
            f"worker {slot.index} exited with {how} before it was ready, {slot.failed_starts} "
            f"times in a row; it cannot start, so the supervisor stops. Its last words:\n{last}"
        )
        self.failed = True
        self.stop()
        return True

    def _signal_all(self, signum: int) -> None:
        for slot in self.slots:
            if slot.process is not None and slot.process.returncode is None:
                try:
                    slot.process.send_signal(signum)
                except ProcessLookupError:  # exited between the check and the signal
                    pass

    async def run(
        self, *, task_status: trio.TaskStatus[Supervisor] = trio.TASK_STATUS_IGNORED
    ) -> int:
        """Supervise until SIGTERM/SIGINT; returns the exit status (0 after a drain)."""
        forced = False
        try:
            watched = (signal.SIGHUP, signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)
            with trio.open_signal_receiver(*watched) as signals:
                if self.banner is not None:  # only now: a signal after it is acted on
                    print(self.banner, flush=True)
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    for slot in self.slots:
                        nursery.start_soon(self._run_slot, slot)
                    task_status.started(self)
                    async for signum in signals:
                        if signum in (signal.SIGHUP, signal.SIGUSR1):
                            # Reload / reopen the logs: each worker does it for itself.
                            self._signal_all(signum)
                        elif not self.stopping:
                            self.say(f"{signal.Signals(signum).name}: draining the workers")
                            self.stop()
                        else:
                            self.say("second signal: killing the workers")
                            forced = True
                            self._signal_all(signal.SIGKILL)
        finally:
            self._signal_all(signal.SIGKILL)  # never leave orphans, whatever happened
            for name in (self.table_path, self.table_path + ".new"):
                try:
                    os.unlink(name)
                except FileNotFoundError:
                    pass
            shutil.rmtree(self.metrics_dir, ignore_errors=True)
        if self.failed:
            return START_FAILED_EXIT
        return 1 if forced else 0

    def stop(self) -> None:
        """Drain: SIGTERM every worker (each finishes what it accepted), then return from
        :meth:`run` with status 0 once the last one has exited."""
        if self.stopping or self._nursery is None:
            return
        self.stopping = True
        self._signal_all(signal.SIGTERM)
        self._nursery.start_soon(self._stop_when_all_exited, self._nursery.cancel_scope)

    async def _stop_when_all_exited(self, scope: trio.CancelScope) -> None:
        for slot in self.slots:
            # Wait for the slot's last process: one may be starting (see _start), in which
            # case the process the slot holds now is its exited predecessor.
            while True:
                process = slot.process
                if process is None and not slot.starting:
                    break  # stopped before its first worker started: it never will
                if process is None or slot.starting:
                    await trio.sleep(0.01)
                    continue
                await process.wait()
                if slot.process is process and not slot.starting:
                    break
        scope.cancel()

    async def wait_for_starts(self, total: int) -> None:
        """Wait until workers have been started ``total`` times in all (for tests)."""
        while sum(slot.starts for slot in self.slots) < total:
            await self._changed.wait()
