"""Workers: one server process per core under a supervisor that never gives up.

One trio server uses one core. ``pyweb serve --workers N`` runs N copies of it, each a
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
* **Recycles.** With ``--max-requests N`` a worker shuts down gracefully after N requests
  and exits with status :data:`RECYCLE_EXIT`; the supervisor replaces it at once.
* **Forwards signals.** SIGHUP goes to every worker (each re-reads its configuration and
  pages: Marlow §6), and so does SIGUSR1 (each reopens its log files). SIGTERM or SIGINT is forwarded too; each worker drains (finishes the
  requests it accepted) and the supervisor exits 0 when the last one has. A second
  SIGTERM/SIGINT kills the workers (exit 1).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import trio

__all__ = ["Supervisor", "WorkerSlot", "RECYCLE_EXIT", "worker_table"]

RECYCLE_EXIT = 75
"""Exit status of a worker that stopped on purpose after ``--max-requests`` (EX_TEMPFAIL)."""

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

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


def worker_table(path: str | None = None) -> list[dict[str, int]]:
    """The live workers as the supervisor last wrote them (``[{"worker": i, "pid": p}]``);
    empty when not running under a supervisor. Read by the status page."""
    path = path or os.environ.get("PYWEB_WORKERS_FILE")
    if not path:
        return []
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return []


class Supervisor:
    """Run ``count`` workers, each ``command(index, fd)``, on one shared listening socket."""

    def __init__(
        self,
        listener: socket.socket,
        count: int,
        command: Callable[[int, int], Sequence[str]],
        *,
        say: Callable[[str], None] | None = None,
    ) -> None:
        if count < 1:
            raise ValueError(f"workers must be at least 1, got {count}")
        self.listener = listener
        self.slots = [WorkerSlot(i) for i in range(count)]
        self.command = command
        self.stopping = False
        self.say = say or (lambda text: print(f"pyweb: {text}", file=sys.stderr, flush=True))
        handle, self.table_path = tempfile.mkstemp(prefix="pyweb-workers-", suffix=".json")
        os.close(handle)
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None

    def _write_table(self) -> None:
        rows = [{"worker": s.index, "pid": s.pid} for s in self.slots if s.pid is not None]
        temporary = self.table_path + ".new"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(rows, f)
        os.replace(temporary, self.table_path)  # readers never see half a file

    async def _start(self, slot: WorkerSlot) -> trio.Process:
        fd = self.listener.fileno()
        env = dict(os.environ, PYWEB_WORKERS_FILE=self.table_path, PYWEB_WORKER_ID=str(slot.index))
        slot.starting = True
        try:
            process = await trio.lowlevel.open_process(
                list(self.command(slot.index, fd)), pass_fds=(fd,), env=env
            )
        finally:
            slot.starting = False
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

    async def _run_slot(self, slot: WorkerSlot) -> None:
        while not self.stopping:
            process = await self._start(slot)
            status = await process.wait()
            slot.exits.append(status)
            lived = time.monotonic() - slot.started_at
            if self.stopping:
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
