"""``pyweb jobs DIR``: every scheduled job of a site, with its next and last run and outcome.

The site is loaded as ``pyweb check`` loads it (service modules imported, so their
``@every``/``@daily``/``@weekly`` functions are found), the ``[[schedule]]`` entries are read
from ``pyweb.toml``, and the records come from where the server keeps them: the Redis
cache (``--cache``, ``PYWEB_CACHE`` or the file's ``cache``) or ``DIR/data/jobs.json``.
"""

from __future__ import annotations

import os
import sys
import time
import tomllib

import trio

from . import find_jobs, open_store
from .scheduler import describe

__all__ = ["run_jobs", "format_table"]


def format_table(rows: list[dict[str, str | None]]) -> str:
    columns = ("name", "when", "next_run", "last_run", "outcome")
    titles = ("job", "when", "next run", "last run", "outcome")
    cells = [titles] + [tuple(str(row.get(c) or "-") for c in columns) for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line[:-1], widths, strict=True)) + "  " + line[-1]
        for line in cells
    )


def run_jobs(directory: str, config: str | None, cache: str | None) -> int:
    from pyweb.app.site import check_site
    from pyweb.server.configfile import find_config_file

    site, problems = check_site(directory)
    for problem in problems:
        print(problem, file=sys.stderr)
    try:
        path = find_config_file(directory, config)
        if cache is None and path is not None:
            with open(path, "rb") as f:
                cache = tomllib.load(f).get("cache")
        jobs = find_jobs(site.root, path)
    except (ValueError, OSError) as exc:
        print(f"pyweb: error: {exc}", file=sys.stderr)
        return 2
    store = open_store(site.root, cache or os.environ.get("PYWEB_CACHE"))
    try:
        records = trio.run(store.records)
    except (OSError, EOFError) as exc:
        print(f"pyweb: error: cannot read the jobs' records from {store}: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
    now = time.time()
    if not jobs:
        print(f"pyweb jobs {directory}: no scheduled jobs")
        return 0
    print(format_table([describe(job, records.get(job.name), now) for job in jobs]))
    print(f"\n{len(jobs)} job(s); records in {store}")
    return 1 if problems else 0
