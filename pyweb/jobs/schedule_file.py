"""``[[schedule]]`` in ``pyweb.toml``: SMLserver's scheduled scripts, written as settings.

SMLserver's ``Web.schedule "cleanup.sml" ... 3600`` runs a script every hour (§3). In
``pyweb.toml`` (beside the settings of ``pyweb serve``) each scheduled script is one table::

    [[schedule]]
    script = "_cleanup.py"        # a file in the site directory
    every = 3600                  # seconds

    [[schedule]]
    script = "_report.py"
    daily = "03:30"               # local time
    timeout = 600                 # seconds (default: the job_timeout setting)

    [[schedule]]
    script = "_backup.py"
    weekly = "sunday 04:00"

The script must not be a page (anyone could run it by opening its URL): give it a name that
starts with ``_`` (as library code), and it is never served. A bad entry is refused with the
file, its line and the reason, as a bad setting is.
"""

from __future__ import annotations

import os
import re
import tomllib
from typing import Any

from .job import Job, script_job
from .timing import Daily, Every, Weekly, When, parse_day

__all__ = ["read_schedule", "KEYS"]

KEYS = ("script", "every", "daily", "weekly", "timeout")


def _line_of_entry(text: str, index: int) -> int | None:
    count = -1
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(r"^\s*\[\[\s*schedule\s*\]\]", line):
            count += 1
            if count == index:
                return number
    return None


def _time(text: object, what: str) -> tuple[int, int]:
    found = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", text) if isinstance(text, str) else None
    if found is None:
        raise ValueError(f"{what} is a time \"HH:MM\", got {text!r}")
    return int(found.group(1)), int(found.group(2))


def _when(entry: dict[str, Any]) -> When:
    given = [key for key in ("every", "daily", "weekly") if key in entry]
    if len(given) != 1:
        raise ValueError("give exactly one of every = SECONDS, daily = \"HH:MM\", "
                         "weekly = \"DAY HH:MM\"")  # fmt: skip
    key = given[0]
    value = entry[key]
    if key == "every":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"every is a number of seconds, got {value!r}")
        return Every(value)
    if key == "daily":
        return Daily(*_time(value, "daily"))
    if not isinstance(value, str) or len(value.split()) != 2:
        raise ValueError(f"weekly is \"DAY HH:MM\" (\"sunday 04:00\"), got {value!r}")
    day, at = value.split()
    return Weekly(parse_day(day), *_time(at, "weekly's time"))


def read_schedule(path: str, site_root: str) -> list[Job]:
    """The jobs of ``path``'s ``[[schedule]]`` tables; ValueError ``path:line: reason``."""
    from pyweb.app import pages

    with open(path, encoding="utf-8") as f:
        text = f.read()
    entries = tomllib.loads(text).get("schedule", [])
    if not isinstance(entries, list):
        raise ValueError(f"{path}: schedule is a list of tables: write [[schedule]]")
    jobs = []
    for index, entry in enumerate(entries):
        where = f"{path}:{_line_of_entry(text, index) or 1}"
        try:
            if not isinstance(entry, dict):
                raise ValueError("each schedule entry is a table: write [[schedule]]")
            unknown = sorted(set(entry) - set(KEYS))
            if unknown:
                raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
            script = entry.get("script")
            if not isinstance(script, str) or not script:
                raise ValueError("script = \"FILE.py\" is required")
            full = os.path.join(site_root, script)
            if not pages.is_library_path(site_root, full):
                raise ValueError(
                    f"script {script!r} is a page too (anyone could run it by opening its "
                    f"URL): rename it to start with '_' (such as '_{os.path.basename(script)}')"
                )
            timeout = entry.get("timeout")
            job = script_job(site_root, script, _when(entry), timeout, where)
        except ValueError as exc:
            message = str(exc)
            raise ValueError(message if message.startswith(path) else f"{where}: {message}") from None
        jobs.append(job)
    return jobs
