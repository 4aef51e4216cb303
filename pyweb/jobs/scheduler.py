"""The scheduler: one task per job that sleeps until the job is due, takes the lease, runs it.

SMLserver runs scheduled scripts inside the web server (§3); so does pyweb, beside the
requests, on the same loop (trio or asyncio). For each job, forever:

1. compute the next due time (:mod:`pyweb.jobs.timing`) and sleep until then;
2. ask the store for the lease on ``(job, due)`` (:mod:`pyweb.jobs.store`); the process
   that gets it runs the job, every other one goes back to 1: **exactly once per due
   time**, however many workers and hosts serve the site;
3. run it under its timeout; an exception or a timeout is logged with the job's name and
   recorded as the outcome. A job never stops the server, and a run that is still going
   when the next due time comes delays that run (a job does not overlap itself).

At start-up a job whose last recorded run is older than its latest due time missed that
run while the site was down: with ``missed_jobs = "run"`` (the default) it runs once now
(under the same lease, so once in all), with ``"skip"`` it waits for its next due time.

The clock is a parameter: seconds since the epoch, ``time.time`` by default. Tests pass a
clock that follows the loop's virtual time (trio's ``MockClock``), so a day passes in
milliseconds.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import anyio

from pyweb import runtime

from .job import Job

__all__ = ["Scheduler", "MISSED"]

log = logging.getLogger("pyweb.jobs")

MISSED = ("run", "skip")
"""The ``missed_jobs`` setting: run a missed run once at start-up, or skip it."""


def iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t).astimezone().isoformat(timespec="seconds")


class Scheduler:
    """Runs ``jobs`` with leases from ``store`` until cancelled (:meth:`run`)."""

    def __init__(
        self,
        jobs: Sequence[Job],
        store: Any,
        *,
        timeout: float = 300.0,
        missed: str = "run",
        clock: Callable[[], float] = time.time,
    ) -> None:
        if missed not in MISSED:
            raise ValueError(f"missed_jobs is 'run' or 'skip', got {missed!r}")
        names = [job.name for job in jobs]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"two jobs are called {name!r}: rename one")
        self.jobs = list(jobs)
        self.store = store
        self.timeout = timeout
        self.missed = missed
        self.clock = clock
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self.records: dict[str, dict[str, Any]] = {}
        """The last record of each job (this process's runs, and others' read from the store)."""
        self.running: set[str] = set()
        self.started = False

    async def run(self) -> None:
        """Schedule every job until cancelled."""
        await self.refresh()
        self.started = True
        async with anyio.create_task_group() as tasks:
            for job in self.jobs:
                tasks.start_soon(self._loop, job)
            if self.jobs:
                tasks.start_soon(self._refresh_now_and_then)

    async def refresh(self) -> None:
        """Read the records from the store (another process may have run a job)."""
        try:
            self.records.update(await self.store.records())
        except Exception as exc:
            log.warning("cannot read the jobs' records from %s: %s", self.store, exc)

    async def _refresh_now_and_then(self) -> None:
        while True:
            await runtime.sleep(10.0)
            await self.refresh()

    async def _sleep_until(self, due: float) -> None:
        # The clock may be coarser or later than the loop's: sleep again until it says so.
        while (left := due - self.clock()) > 0:
            await runtime.sleep(left)

    async def _loop(self, job: Job) -> None:
        record = self.records.get(job.name)
        if record is not None and self.missed == "run":
            latest = job.when.last_due(self.clock())
            if record.get("due", latest) < latest:
                log.info("job %s missed its run of %s: running it now", job.name, iso(latest))
                await self.fire(job, latest)
        while True:
            due = job.when.next_due(self.clock())
            await self._sleep_until(due)
            await self.fire(job, due)

    async def fire(self, job: Job, due: float) -> bool:
        """Take the lease on ``(job, due)`` and run the job if it is ours: True if it ran."""
        ttl = max(2 * job.when.period, (job.timeout or self.timeout) + 60.0)
        try:
            ours = await self.store.claim(job.name, due, ttl, self.owner)
        except Exception as exc:  # no lease, no run: never twice (said loudly)
            log.error("job %s (due %s) not run: cannot take its lease in %s: %s",
                      job.name, iso(due), self.store, exc)  # fmt: skip
            return False
        if not ours:
            return False
        await self._run(job, due)
        return True

    async def _run(self, job: Job, due: float) -> None:
        rt = runtime.current()
        timeout = job.timeout or self.timeout
        started = self.clock()
        self.running.add(job.name)
        outcome = "ok"
        try:
            with rt.move_on_after(timeout) as scope:
                await job.run()
            if scope.cancelled_caught:
                outcome = f"timed out after {timeout:g} s"
                log.error("job %s (due %s) timed out after %g s and was stopped",
                          job.name, iso(due), timeout)  # fmt: skip
        except Exception as exc:
            outcome = f"failed: {type(exc).__name__}: {exc}"
            log.error("job %s (due %s) failed", job.name, iso(due), exc_info=exc)
        finally:
            self.running.discard(job.name)
        record = {
            "due": due, "started": started, "ended": self.clock(), "outcome": outcome,
            "by": self.owner, "worker": os.environ.get("PYWEB_WORKER_ID"),
        }  # fmt: skip
        self.records[job.name] = record
        try:
            await self.store.record(job.name, record)
        except Exception as exc:
            log.warning("job %s ran (%s) but its record was not kept: %s", job.name, outcome, exc)

    def status(self) -> list[dict[str, Any]]:
        """Every job with its next and last run and outcome (the status page, ``pyweb jobs``)."""
        now = self.clock()
        return [describe(job, self.records.get(job.name), now, job.name in self.running)
                for job in self.jobs]  # fmt: skip


def describe(job: Job, record: dict[str, Any] | None, now: float, running: bool = False) -> dict[str, Any]:
    record = record or {}
    return {
        "name": job.name,
        "when": str(job.when),
        "next_run": iso(job.when.next_due(now)),
        "last_run": iso(record.get("started")),
        "last_due": iso(record.get("due")),
        "outcome": "running" if running else record.get("outcome", "never run"),
        "by": record.get("by"),
        "where": job.where,
    }
