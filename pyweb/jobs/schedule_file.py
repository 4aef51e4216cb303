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

__all__ = ["read_schedule", "schedule_problems", "KEYS"]

KEYS = ("script", "every", "daily", "weekly", "timeout")


class _BadKey(ValueError):
    """A bad entry, and the key whose line says where (None: the entry's own line)."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key


def _entry_lines(text: str) -> list[tuple[int, int]]:
    """Each ``[[schedule]]`` entry's first and last line numbers (1-based), in order."""
    lines = text.splitlines()
    spans: list[tuple[int, int]] = []
    for number, line in enumerate(lines, start=1):
        if re.match(r"^\s*\[", line):  # any table header ends the entry before it
            if spans and spans[-1][1] == 0:
                spans[-1] = (spans[-1][0], number - 1)
            if re.match(r"^\s*\[\[\s*schedule\s*\]\]", line):
                spans.append((number, 0))
    if spans and spans[-1][1] == 0:
        spans[-1] = (spans[-1][0], len(lines))
    return spans


def _line_of(text: str, span: tuple[int, int] | None, key: str | None) -> int:
    """The line of ``key`` inside the entry (its header's line when not found)."""
    if span is None:
        return 1
    if key is not None:
        lines = text.splitlines()
        for number in range(span[0] + 1, span[1] + 1):
            if re.match(rf"^\s*{re.escape(key)}\s*=", lines[number - 1]):
                return number
    return span[0]


def _time(text: object, what: str) -> tuple[int, int]:
    found = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", text) if isinstance(text, str) else None
    if found is None:
        raise ValueError(f"{what} is a time \"HH:MM\", got {text!r}")
    return int(found.group(1)), int(found.group(2))


def _when(entry: dict[str, Any]) -> When:
    given = [key for key in ("every", "daily", "weekly") if key in entry]
    if len(given) != 1:
        raise _BadKey(given[1] if given else None,
                      "give exactly one of every = SECONDS, daily = \"HH:MM\", "
                      "weekly = \"DAY HH:MM\"")  # fmt: skip
    key = given[0]
    value = entry[key]
    try:
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
    except ValueError as exc:
        raise _BadKey(key, f"{key}: {exc}" if not str(exc).startswith(key) else str(exc)) from None


def _job(entry: object, site_root: str, where: str) -> Job:
    """The job of one ``[[schedule]]`` entry; :class:`_BadKey` says what is wrong."""
    from pyweb.app import pages

    if not isinstance(entry, dict):
        raise _BadKey(None, "each schedule entry is a table: write [[schedule]]")
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise _BadKey(unknown[0], f"unknown key {unknown[0]!r} (known: {', '.join(KEYS)})")
    script = entry.get("script")
    if not isinstance(script, str) or not script:
        raise _BadKey("script", "script = \"FILE.py\" is required")
    full = os.path.join(site_root, script)
    if not pages.is_library_path(site_root, full):
        raise _BadKey("script",
            f"script {script!r} is a page too (anyone could run it by opening its "
            f"URL): rename it to start with '_' (such as '_{os.path.basename(script)}')"
        )  # fmt: skip
    when = _when(entry)
    try:
        return script_job(site_root, script, when, entry.get("timeout"), where)
    except ValueError as exc:
        message = str(exc)
        if message.startswith(where + ": "):  # (script_job names the entry itself)
            message = message[len(where) + 2 :]
        raise _BadKey("timeout" if "timeout" in message else "script", message) from None


def _read(path: str, site_root: str) -> tuple[list[Job], list[tuple[int, str]]]:
    """Every entry of ``path``: the jobs of the good ones, ``(line, reason)`` of the bad."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        entries = tomllib.loads(text).get("schedule", [])
    except tomllib.TOMLDecodeError as exc:  # (pyweb check reads the settings first)
        found = re.search(r"at line (\d+)", str(exc))
        return [], [(int(found.group(1)) if found else 1, f"not valid TOML: {exc}")]
    if not isinstance(entries, list):
        return [], [(1, "schedule is a list of tables: write [[schedule]]")]
    spans = _entry_lines(text)
    jobs, problems = [], []
    for index, entry in enumerate(entries):
        span = spans[index] if index < len(spans) else None
        where = f"{path}:{_line_of(text, span, None)}"
        try:
            jobs.append(_job(entry, site_root, where))
        except _BadKey as bad:
            problems.append((_line_of(text, span, bad.key), str(bad)))
    names = [job.name for job in jobs]
    for job in jobs:
        if names.count(job.name) > 1:
            line = int(job.where.rpartition(":")[2] or 1)
            problems.append((line, f"{job.name[len('script:'):]} is scheduled twice: "
                                   "one entry per script"))  # fmt: skip
            names.remove(job.name)
    return jobs, sorted(problems)


def read_schedule(path: str, site_root: str) -> list[Job]:
    """The jobs of ``path``'s ``[[schedule]]`` tables; ValueError ``path:line: reason`` for
    the first bad entry (``pyweb check`` lists them all: :func:`schedule_problems`)."""
    jobs, problems = _read(path, site_root)
    if problems:
        line, reason = problems[0]
        raise ValueError(f"{path}:{line}: {reason}")
    return jobs


def schedule_problems(path: str, site_root: str) -> list[tuple[int, str]]:
    """Every bad ``[[schedule]]`` entry of ``path`` as ``(line, reason)``: the line of the
    offending key (``daily = "25:00"``), else of the entry's ``[[schedule]]``. The same
    reader the server uses (:func:`read_schedule`), so ``pyweb check`` says what
    ``pyweb serve`` would refuse."""
    return _read(path, site_root)[1]
