"""What runs beside the requests of ``pyweb serve``: the job scheduler and the work after replies.

The server (``pyweb.server``, ``pyweb.server.aio``) knows nothing of pages, jobs or mail; the
command line makes one :class:`Background` for the site it serves and hands it to the server
process on either loop, which:

* runs :meth:`Background.run` beside the server (the scheduler of :mod:`pyweb.jobs`, in the
  processes that run jobs);
* awaits :meth:`Background.drain` once the last request is answered at shutdown: the
  ``conn.after`` work still pending (:mod:`pyweb.app.after`) gets ``after_grace`` seconds,
  then is cancelled;
* shows :meth:`Background.jobs_status` and the after-work counts on the status page.

**Which processes run jobs.** With the Redis cache every worker (on every host) runs the
scheduler and Redis's leases let exactly one run each due job. With the in-memory cache the
workers share nothing, so only worker 0 (or the single process without ``--workers``) runs
them; the supervisor restarts a worker 0 that dies under the same number.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from pyweb.app import after
from pyweb.jobs import RedisStore, Scheduler, find_jobs, open_store

__all__ = ["Background"]

log = logging.getLogger("pyweb.jobs")


class Background:
    """The scheduler and the after-work of one server process."""

    def __init__(
        self,
        site_root: str,
        config: Any,
        config_path: str | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        after.WORK.limit = config.after_limit
        self.grace = config.after_grace
        jobs = find_jobs(site_root, config_path)  # ValueError: a bad [[schedule]] entry
        cache_url = config.cache or os.environ.get("PYWEB_CACHE")
        self.store = open_store(site_root, cache_url)
        worker = os.environ.get("PYWEB_WORKER_ID") if config.listen_fd is not None else None
        self.runs_jobs = isinstance(self.store, RedisStore) or worker in (None, "0")
        """Whether this process runs the jobs (see the module docstring)."""
        self.scheduler = Scheduler(
            jobs, self.store, timeout=config.job_timeout, missed=config.missed_jobs, clock=clock
        )
        from pyweb.server.status import STATUS_SECTIONS

        STATUS_SECTIONS["jobs"] = self.jobs_status
        STATUS_SECTIONS["after"] = after.WORK.status

    async def run(self) -> None:
        """Run the scheduler until cancelled (returns at once when there is nothing to run)."""
        if not self.scheduler.jobs:
            return
        if not self.runs_jobs:
            log.info("jobs run in worker 0 (the in-memory cache shares no leases)")
            return
        names = ", ".join(f"{job.name} ({job.when})" for job in self.scheduler.jobs)
        log.info("scheduling %d job(s) with leases in %s: %s",
                 len(self.scheduler.jobs), self.store, names)  # fmt: skip
        await self.scheduler.run()

    async def drain(self) -> None:
        """Give pending ``conn.after`` work ``after_grace`` seconds, then cancel it."""
        await after.WORK.drain(self.grace)

    def jobs_status(self) -> dict[str, Any]:
        return {
            "runs_here": self.runs_jobs,
            "store": str(self.store),
            "jobs": self.scheduler.status(),
        }
