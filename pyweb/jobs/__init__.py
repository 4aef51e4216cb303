"""pyweb.jobs: scheduled jobs, SMLserver's ``Web.schedule``, ``scheduleDaily`` and
``scheduleWeekly`` (SMLserver §3), run exactly once per due time by a whole cluster.

* :mod:`.timing`: when a job is due (``every``, ``daily``, ``weekly``);
* :mod:`.job`: a job, and the decorators ``@pyweb.every``, ``@pyweb.daily``, ``@pyweb.weekly``;
* :mod:`.schedule_file`: ``[[schedule]]`` scripts in ``pyweb.toml``;
* :mod:`.store`: the leases (Redis ``SET NX PX``, or a file under ``flock``) and records;
* :mod:`.scheduler`: the task per job that sleeps, takes the lease and runs it.

:func:`find_jobs` collects a loaded site's jobs. Reference: docs/scheduling.md.
"""

from __future__ import annotations

import os
import sys

from .job import Job, daily, every, weekly
from .schedule_file import read_schedule
from .scheduler import Scheduler
from .store import FileStore, RedisStore, open_store
from .timing import Daily, Every, Weekly

__all__ = [
    "Job", "every", "daily", "weekly", "Every", "Daily", "Weekly", "Scheduler",
    "RedisStore", "FileStore", "open_store", "find_jobs", "read_schedule",
]  # fmt: skip


def find_jobs(site_root: str, config_path: str | None = None) -> list[Job]:
    """The jobs of a loaded site: the decorated functions of its service modules (already
    imported by :class:`pyweb.app.site.Site`) and the ``[[schedule]]`` scripts of
    ``config_path``. ValueError for a bad ``[[schedule]]`` entry."""
    from .job import SERVICE_PREFIX

    root = os.path.realpath(site_root) + os.sep
    found: list[Job] = []
    for name, module in sorted(sys.modules.items()):
        if not name.startswith(SERVICE_PREFIX) or module is None:
            continue
        if not (getattr(module, "__file__", None) or "").startswith(root):
            continue
        found.extend(v for v in vars(module).values() if isinstance(v, Job))
    if config_path is not None:
        found.extend(read_schedule(config_path, site_root))
    return found
