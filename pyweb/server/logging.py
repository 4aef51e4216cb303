"""The access log and the error log, written by one logging task (Marlow §5).

Marlow §5: "The actual generation of the log entries and writing of log entries to the
file is done by a separate thread. Worker threads communicate with the logging subsystem
via a global unbounded channel [...] The logging thread can batch multiple requests and
write them out in one go, which is likely to be more efficient than writing them one at a
time." And: "The logging thread is designed to be fault tolerant: if it receives an
exception of any kind, it attempts to restart itself by re-opening the log file."

pyweb does the same with one task (on trio or asyncio: it waits through ``pyweb.events``
and writes through ``pyweb.runtime.to_thread``, so both servers share it):

* a connection calls :meth:`ServerLog.access` with an :class:`AccessRecord` (or
  :meth:`ServerLog.error`); that only puts the record in a :class:`~pyweb.events.Mailbox`,
  the buffered channel of CML's Figure 3, whose ``send`` never blocks. Marlow's channel
  is unbounded, and so is the Mailbox; the logger adds the bound itself (10 000 records
  by default): ``access`` looks at ``len(mailbox)`` first and, when the logging task has
  fallen that far behind, drops the record and counts it, so memory stays constant under
  any load (Marlow §1, §8) and a connection never waits for the disk;
* :meth:`ServerLog.run`, the logging task, syncs on the mailbox's ``recv_evt()`` for
  the first record, drains what else is waiting, formats it and writes each log's share
  of the batch with one ``write()`` call (in a worker thread, so a slow disk or a
  stalled stderr pipe never stalls the server);
* a failed write (a full disk: ``ENOSPC``) drops that batch's lines, counts them and says
  so once on stderr; a log file that was removed or renamed (log rotation) is noticed by
  comparing the inode of the path with the inode of the open file, at most once a second,
  and reopened. :meth:`ServerLog.reopen` forces a reopen (for SIGUSR1).

Access lines are in the Combined Log Format of Apache and nginx, so the usual tools read
them (see :func:`format_access` and docs/logging.md)::

    127.0.0.1 - - [22/Nov/2026:05:47:35 +0000] "GET /index.html HTTP/1.1" 200 984 "-" "curl/8.5.0"
"""

from __future__ import annotations

import json
import logging as pylogging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pyweb.events import Mailbox
from pyweb.runtime import current, to_thread

__all__ = [
    "AccessRecord",
    "access_record",
    "PythonLogBridge",
    "ServerLog",
    "format_access",
    "ACCESS_FORMATS",
    "format_error",
    "format_access_json",
    "format_error_json",
    "LOG_FORMATS",
    "log_time",
]


@dataclass(slots=True)
class AccessRecord:
    """What the server knows about one finished request (Marlow's ``logAccess`` arguments)."""

    peer: str
    """The client: ``"host:port"``, ``"[v6]:port"`` or just the host."""
    time: float
    """When the request was received (``time.time()``); the log shows this time."""
    method: str
    target: str
    """The request-target as sent (with its query string)."""
    http_version: str
    """``"1.1"`` or ``"1.0"``."""
    status: int
    size: int
    """Body bytes sent (not counting the head); logged as ``-`` when 0."""
    referer: str = ""
    user_agent: str = ""
    duration: float = 0.0
    """Seconds from receiving the request to the end of the response."""
    alloc: tuple[int, int] | None = None
    """Bytes and calls the request's page allocated (``--profile-alloc``, C only:
    :mod:`pyweb.regions`); ``None`` when not counted (no page ran, accounting off or not
    available). Only the ``alloc`` format shows it."""


def access_record(
    client: str,
    request: Any,
    status: int,
    sent: int,
    received_at: float,
    alloc: tuple[int, int] | None = None,
) -> AccessRecord:
    """The record of one finished request (Marlow's ``logAccess``); ``request`` is a
    :class:`~pyweb.protocol.messages.Request`, or ``None`` when none could be parsed."""
    referer = user_agent = ""
    if request is None:
        return AccessRecord(client, received_at, "-", "-", "-", status, sent,
                            duration=time.time() - received_at)  # fmt: skip
    for name, value in request.headers:  # one pass for both fields
        if name == "referer":
            referer = value
        elif name == "user-agent":
            user_agent = value
    return AccessRecord(
        client, received_at, request.method, request.target, request.http_version, status,
        sent, referer, user_agent, time.time() - received_at, alloc,
    )  # fmt: skip


# --- formatting ------------------------------------------------------------------------------

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_time_cache: tuple[int, str] = (-1, "")


def log_time(when: float) -> str:
    """``22/Nov/2026:05:47:35 +0000`` (the CLF time, in UTC), cached per second.

    Built by hand rather than with ``strftime("%b")``, whose month names follow the locale.
    """
    global _time_cache
    second = int(when)
    if _time_cache[0] == second:
        return _time_cache[1]
    t = time.gmtime(second)
    text = f"{t.tm_mday:02d}/{_MONTHS[t.tm_mon - 1]}/{t.tm_year}:{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} +0000"
    _time_cache = (second, text)
    return text


# Apache's ap_escape_logitem: '"' and '\' get a backslash, \b \n \r \t \v \f their C
# escapes, every other control or non-ASCII byte \xhh, so one record is always one line
# and a client cannot forge entries with a newline in its User-Agent.
_ESCAPES: dict[int, str] = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0x100))}
_ESCAPES.update(
    {
        ord('"'): '\\"',
        ord("\\"): "\\\\",
        8: "\\b",
        10: "\\n",
        13: "\\r",
        9: "\\t",
        11: "\\v",
        12: "\\f",
    }
)
_ESCAPE_TABLE = str.maketrans(_ESCAPES)
_SAFE = frozenset(map(chr, range(0x20, 0x7F))) - {'"', "\\"}


def _escape(field: str) -> str:
    # Most fields need nothing; the set test is cheaper than building a translated copy.
    if _SAFE.issuperset(field):
        return field
    return field.translate(_ESCAPE_TABLE)


def _host(peer: str) -> str:
    if peer.startswith("["):  # "[::1]:8000"
        return peer[1 : peer.find("]")] if "]" in peer else peer
    if peer.count(":") == 1:  # "127.0.0.1:5000"
        return peer.partition(":")[0]
    return peer  # a bare host or a bare IPv6 address


ACCESS_FORMATS = ("combined", "timed", "alloc")

REPEAT_WINDOW = 60.0
"""Seconds during which an identical traceback is counted instead of written again."""
"""``combined``: Apache's Combined Log Format. ``timed``: the same line followed by
``rt=SECONDS worker=N`` (the request's duration, and which ``--workers`` process served
it, ``-`` without workers), for finding slow pages and a misbehaving worker. ``alloc``: the
``timed`` line followed by ``alloc=BYTES/CALLS``, what the request's page allocated (Hop
§3.1's per-request count; ``--profile-alloc``), ``alloc=-`` when nothing was counted.
Each format's fields are fixed by its name alone, so a parser never meets a line whose
shape depends on another flag."""


def format_access(
    record: AccessRecord, timed_suffix: str | None = None, *, alloc: bool = False
) -> str:
    """One Combined Log Format line for ``record``, ending with a newline.

    >>> format_access(AccessRecord("127.0.0.1:5000", 0.0, "GET", "/", "1.1", 200, 984,
    ...                            "-", 'curl "8"'))
    '127.0.0.1 - - [01/Jan/1970:00:00:00 +0000] "GET / HTTP/1.1" 200 984 "-" "curl \\\\"8\\\\""\\n'

    The fields are host, identity (always ``-``), user (always ``-``), time, request line,
    status, body size (``-`` when 0), Referer and User-Agent (``-`` when absent).
    With ``timed_suffix`` (the ``timed`` format: ``" worker=N"``), the line ends with
    ``rt=SECONDS`` and that suffix, as nginx logs ``$request_time``. With ``alloc`` (the
    ``alloc`` format) it then ends with ``alloc=BYTES/CALLS`` from ``record.alloc``, or
    ``alloc=-`` when that is ``None``: "not counted", never a made-up number.
    """
    if record.method and record.method != "-":
        request_line = (
            f"{_escape(record.method)} {_escape(record.target)} HTTP/{_escape(record.http_version)}"
        )
    else:
        request_line = "-"  # no request could be parsed (a 400 before the request line ended)
    line = (
        f'{_host(record.peer)} - - [{log_time(record.time)}] "{request_line}" '
        f"{record.status} {record.size or '-'} "
        f'"{_escape(record.referer) if record.referer else "-"}" '
        f'"{_escape(record.user_agent) if record.user_agent else "-"}"'
    )
    if timed_suffix is not None:
        line += f" rt={record.duration:.6f}{timed_suffix}"
    if alloc:
        counts = record.alloc
        line += " alloc=-" if counts is None else f" alloc={counts[0]}/{counts[1]}"
    return line + "\n"


def format_error(
    message: str,
    *,
    request_line: str = "",
    exc: BaseException | None = None,
    when: float | None = None,
    level: str = "error",
) -> str:
    """``[22/Nov/2026:05:47:35 +0000] [error] message (request: GET / HTTP/1.1)``, then
    the traceback of ``exc`` if there is one. Always ends with a newline. ``level`` is
    ``error``, or ``warning``/``critical`` for records from Python's ``logging``."""
    line = f"[{log_time(time.time() if when is None else when)}] [{level}] {message}"
    if request_line:
        line += f" (request: {_escape(request_line)})"
    line += "\n"
    if exc is not None:
        line += "".join(traceback.format_exception(exc))
    return line


LOG_FORMATS = ("text", "json")
"""``text``: the access log in :data:`ACCESS_FORMATS`, the error log as ``[time] [level]``
lines; ``json``: one JSON object a line in both (for a log collector)."""


def _iso_time(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f".{int(when % 1 * 1000):03d}Z"


def format_access_json(record: AccessRecord, worker: str) -> str:
    """The access record as one JSON object on a line: the Combined Log Format's fields,
    named, with the time in ISO 8601 (UTC), the duration in seconds and the worker.

    >>> line = format_access_json(
    ...     AccessRecord("127.0.0.1:5000", 0.0, "GET", "/", "1.1", 200, 984), "-")
    >>> json.loads(line)["time"], json.loads(line)["host"], json.loads(line)["status"]
    ('1970-01-01T00:00:00.000Z', '127.0.0.1', 200)
    """
    entry = {
        "time": _iso_time(record.time),
        "host": _host(record.peer),
        "method": record.method or None,
        "target": record.target or None,
        "http_version": record.http_version or None,
        "status": record.status,
        "size": record.size,
        "referer": record.referer or None,
        "user_agent": record.user_agent or None,
        "duration": round(record.duration, 6),
        "worker": worker,
    }
    return json.dumps(entry, ensure_ascii=False) + "\n"


def format_error_json(
    message: str,
    *,
    request_line: str = "",
    traceback_text: str = "",
    when: float | None = None,
    level: str = "error",
) -> str:
    """An error-log entry as one JSON object on a line (the traceback in one field, its
    line ends escaped, so each entry stays one line)."""
    entry = {
        "time": _iso_time(time.time() if when is None else when),
        "level": level,
        "message": message,
        "request": request_line or None,
        "traceback": traceback_text or None,
    }
    return json.dumps(entry, ensure_ascii=False) + "\n"


# --- where lines go --------------------------------------------------------------------------


class _Sink:
    """One log destination: a file path, ``"-"`` (stderr) or a writable text stream.

    All methods run in the logging task or its worker thread, never concurrently.
    """

    def __init__(self, target: Any, name: str, reopen_interval: float):
        self.target = target
        self.name = name
        self.reopen_interval = reopen_interval
        self.fd: int | None = None
        self.ino: tuple[int, int] | None = None
        self.checked_at = 0.0
        self.dropped = 0
        self.failing = False  # reported on stderr, not yet recovered
        self.is_path = isinstance(target, (str, os.PathLike)) and target != "-"

    def open(self) -> None:
        if not self.is_path:
            return
        self.close()
        try:
            # O_APPEND: each write() lands at the end even if another process appends too.
            fd = os.open(self.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            self.checked_at = time.monotonic()
            self._report(exc)
            return
        self.fd = fd
        st = os.fstat(fd)
        self.ino = (st.st_dev, st.st_ino)
        self.checked_at = time.monotonic()

    def close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None

    def _maybe_reopen(self) -> None:
        """Reopen when the file was removed or replaced (log rotation), at most once a second."""
        now = time.monotonic()
        if now - self.checked_at < self.reopen_interval:
            return  # also paces retries of a path that cannot be opened
        self.checked_at = now
        if self.fd is None:
            self.open()
            return
        try:
            st = os.stat(self.target)
            current = (st.st_dev, st.st_ino)
        except OSError:
            current = None
        if current != self.ino:
            self.open()

    def write(self, text: str, lines: int) -> None:
        """Write ``text`` (``lines`` lines) in one call; on failure count and go on."""
        try:
            if self.is_path:
                data = text.encode("ascii", "backslashreplace")
                self._maybe_reopen()
                if self.fd is None:
                    raise OSError(f"{self.target} is not open")
                view = memoryview(data)
                while view:  # a regular file takes it all at once; a pipe may not
                    view = view[os.write(self.fd, view) :]
            else:
                # Looked up per write: sys.stderr may be replaced (pytest, notebooks).
                stream = sys.stderr if self.target == "-" else self.target
                stream.write(text)
                flush: Callable[[], Any] | None = getattr(stream, "flush", None)
                if flush is not None:
                    flush()
        except Exception as exc:  # OSError above all, but nothing may stop the logger
            self.dropped += lines
            self._report(exc)
            return
        if self.failing:
            self.failing = False
            _stderr(
                f"pyweb: {self.name} log {self.target!r} is writable again; {self.dropped} lines were dropped"
            )

    def _report(self, exc: BaseException) -> None:
        if not self.failing:
            self.failing = True
            _stderr(
                f"pyweb: cannot write {self.name} log {self.target!r}: {exc}; dropping lines until it works again"
            )


def _stderr(message: str) -> None:
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:
        pass  # nowhere left to complain


_CLOSE = object()  # the last message: run() writes what came before it and returns


class TaskStatus(Protocol):
    """What ``trio``'s ``nursery.start`` passes a task to say it has started (any object
    with ``started()`` will do: on asyncio nobody waits for it)."""

    def started(self, value: Any = None, /) -> None: ...


class _NobodyWaits:
    def started(self, value: Any = None, /) -> None:
        pass


NOBODY_WAITS: TaskStatus = _NobodyWaits()
"""The default ``task_status``: :meth:`ServerLog.run` was started without ``nursery.start``."""


class _ErrorEntry:
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class ServerLog:
    """The server's two logs and the task that writes them.

    ``access`` and ``error`` are each a file path (appended to), ``"-"`` for stderr, a
    writable text stream (handy in tests and notebooks) or ``None`` (nowhere)::

        log = ServerLog("access.log", "-")
        async with trio.open_nursery() as nursery:
            await nursery.start(log.run)     # on asyncio: task = loop.create_task(log.run())
            log.access(AccessRecord("127.0.0.1:5000", time.time(), "GET", "/", "1.1", 200, 984))
            log.close()          # run() writes what is queued, then returns

    Counters: ``dropped_full`` (records refused because the channel was full),
    ``dropped`` (that plus lines lost to failed writes).
    """

    def __init__(
        self,
        access: Any = "-",
        error: Any = "-",
        *,
        buffer: int = 10_000,
        reopen_interval: float = 1.0,
        access_format: str = "combined",
        log_format: str = "text",
    ):
        if log_format not in LOG_FORMATS:
            raise ValueError(f"unknown log format {log_format!r}; choose text or json")
        self._json = log_format == "json"
        self._worker = os.environ.get("PYWEB_WORKER_ID", "-")
        if access_format not in ACCESS_FORMATS:
            raise ValueError(
                f"unknown access log format {access_format!r}; choose "
                f"{', '.join(ACCESS_FORMATS[:-1])} or {ACCESS_FORMATS[-1]}"
            )
        # The worker id does not change while the process lives: format it once.
        self._timed_suffix = (
            f" worker={os.environ.get('PYWEB_WORKER_ID', '-')}"
            if access_format in ("timed", "alloc")
            else None
        )
        self._alloc_field = access_format == "alloc"
        self._access = _Sink(access, "access", reopen_interval) if access is not None else None
        self._error = _Sink(error, "error", reopen_interval) if error is not None else None
        self.access_enabled = self._access is not None
        self._mailbox: Mailbox[Any] = Mailbox()
        self._buffer = buffer
        self.dropped_full = 0
        self._reported_full = 0
        self._reopen_requested = False
        self._closed = False
        self._repeats: dict[str, list] = {}
        """Traceback text -> [when written, repeats since, summaries written, its message]."""

    # -- called by connections: never block, never raise --

    def access(self, record: AccessRecord) -> None:
        """Queue ``record`` for the access log; drop it (and count) if the queue is full."""
        if self._access is None or self._closed:
            return  # (closed: the server is shutting down)
        if len(self._mailbox) >= self._buffer:
            self.dropped_full += 1  # the bound Marlow's unbounded channel doesn't have
            return
        self._mailbox.send(record)

    def error(
        self,
        message: str,
        *,
        request_line: str = "",
        exc: BaseException | None = None,
        level: str = "error",
    ) -> None:
        """Queue an error-log entry (with ``exc``'s traceback, formatted now while it exists).
        Call it from the server's loop thread (other threads: :class:`PythonLogBridge`)."""
        if self._error is None or self._closed:
            return
        if len(self._mailbox) >= self._buffer:
            self.dropped_full += 1
            return
        try:
            tb = "".join(traceback.format_exception(exc)) if exc is not None else ""
            if tb and not self._first_of_kind(tb, message):
                return  # the same traceback again: counted, summarised (see _repeats)
            text = self._error_line(message, request_line=request_line, level=level, tb=tb)
        except Exception:
            return  # an exception whose traceback cannot be formatted: never raise here
        self._mailbox.send(_ErrorEntry(text))

    def _error_line(
        self, message: str, *, request_line: str = "", level: str = "error", tb: str = ""
    ) -> str:
        """One error-log entry in this log's format (``tb``: a formatted traceback)."""
        if self._json:
            return format_error_json(
                message, request_line=request_line, traceback_text=tb, level=level
            )
        return format_error(message, request_line=request_line, level=level) + tb

    def _first_of_kind(self, tb: str, message: str) -> bool:
        """Whether a traceback is to be written in full: the first of its kind in
        :data:`REPEAT_WINDOW` seconds. A repeat is counted, and at 10, 100, 1,000... repeats
        one line says so; the count of the window is given with the next full copy. A page
        that fails the same way 20,000 times writes a handful of lines, not 20,000
        tracebacks."""
        now = time.monotonic()
        seen = self._repeats.get(tb)
        if seen is None or now - seen[0] >= REPEAT_WINDOW:
            if seen is not None and seen[1]:
                self._summary(seen)
            if len(self._repeats) >= 256:
                self._repeats.clear()
            self._repeats[tb] = [now, 0, 0, message.split(" [from ", 1)[0]]
            return True
        seen[1] += 1
        if seen[1] >= 10 ** (seen[2] + 1):
            seen[2] += 1
            self._summary(seen, so_far=True)
        return False

    def _summary(self, seen: list, so_far: bool = False) -> None:
        first = seen[3]
        what = "so far" if so_far else "in all"
        line = self._error_line(
            f"the same error as at {log_time(time.time() - (time.monotonic() - seen[0]))} "
            f"({first}) repeated {seen[1]:,} times {what}; its traceback is shown at most "
            f"once every {REPEAT_WINDOW:g} s"
        )
        self._mailbox.send(_ErrorEntry(line))

    def reopen(self) -> None:
        """Reopen the log files before the next write (after log rotation; SIGUSR1)."""
        self._reopen_requested = True

    def close(self) -> None:
        """Stop accepting records; :meth:`run` writes what is queued, then returns."""
        if not self._closed:
            for seen in self._repeats.values():
                if seen[1] and self._error is not None:
                    self._summary(seen)
            self._repeats.clear()
            self._closed = True
            self._mailbox.send(_CLOSE)  # past the bound: it must get through

    @property
    def dropped(self) -> int:
        """All records lost: refused by a full queue, or in a batch whose write failed."""
        return (
            self.dropped_full
            + (self._access.dropped if self._access else 0)
            + (self._error.dropped if self._error else 0)
        )

    # -- the logging task --

    async def run(self, *, task_status: TaskStatus = NOBODY_WAITS) -> None:
        """The logging task: write batches until :meth:`close`, then return. The same
        task on both loops: it waits through ``pyweb.events`` and writes through
        ``pyweb.runtime.to_thread``; ``task_status`` is for trio's ``nursery.start``."""
        sinks = [s for s in (self._access, self._error) if s is not None]
        for sink in sinks:
            sink.open()
        bridge = PythonLogBridge(self, name="") if self._error is not None else None
        task_status.started()
        batch: list[Any] = []
        mailbox = self._mailbox
        closing = False
        try:
            while not closing:
                first = await mailbox.recv()  # sync(mailbox.recv_evt())
                batch = [first, *mailbox.drain()]
                if _CLOSE in batch:
                    closing = True
                    batch = [item for item in batch if item is not _CLOSE]
                if batch:
                    # In a thread: a file on a slow disk or a stderr pipe nobody reads would
                    # otherwise stall every connection. While it writes, the next batch grows.
                    await to_thread(self._write_batch, batch)
                batch = []
        finally:
            # Cancelled or closed: the batch in hand and whatever is still queued are
            # written here, synchronously, so nothing accepted is lost.
            if bridge is not None:
                bridge.remove()
            leftover = [item for item in batch + mailbox.drain() if item is not _CLOSE]
            if leftover or self.dropped_full != self._reported_full:
                self._write_batch(leftover)
            for sink in sinks:
                sink.close()

    def _write_batch(self, batch: list[Any]) -> None:
        if self._reopen_requested:
            self._reopen_requested = False
            for sink in (self._access, self._error):
                if sink is not None:
                    sink.open()
        access_lines: list[str] = []
        error_lines: list[str] = []
        for item in batch:
            if isinstance(item, AccessRecord):
                try:
                    access_lines.append(
                        format_access_json(item, self._worker)
                        if self._json
                        else format_access(item, self._timed_suffix, alloc=self._alloc_field)
                    )
                except Exception as exc:  # a malformed record must not kill the logger
                    tb = "".join(traceback.format_exception(exc))
                    error_lines.append(self._error_line("cannot format access record", tb=tb))
            else:
                error_lines.append(item.text)
        if self.dropped_full != self._reported_full:
            lost = self.dropped_full - self._reported_full
            self._reported_full = self.dropped_full
            error_lines.append(self._error_line(f"log queue full: {lost} records dropped"))
        if access_lines and self._access is not None:
            self._access.write("".join(access_lines), len(access_lines))
        if error_lines and self._error is not None:
            self._error.write("".join(error_lines), len(error_lines))


class PythonLogBridge(pylogging.Handler):
    """Sends Python ``logging`` records of level WARNING and up to the server's error log,
    while the server's logging task runs (installed on the root logger and removed by
    :meth:`ServerLog.run`). So pyweb's own modules, the libraries a site uses and the
    site's own code all write::

        log = logging.getLogger("mysite")
        log.warning("the exchange rate service is down, showing yesterday's rate")

    and the line lands in the error log, in its format, as ``[warning] mysite: the
    exchange rate service is down...``, not as a raw line on stderr.
    Records from another thread (a worker thread, a database driver's thread) go through
    the server's loop (``pyweb.runtime``'s ``thread_handoff``), since the
    log's mailbox belongs to the loop's thread. With
    several servers in one process (tests), each server's log gets every record.
    """

    def __init__(self, log: ServerLog, name: str = "pyweb", level: int = pylogging.WARNING):
        super().__init__(level)
        self.log = log
        self.logger = pylogging.getLogger(name)
        self.thread = threading.get_ident()
        self.call_soon = current().thread_handoff()  # made in the loop's thread, used by others
        self.logger.addHandler(self)

    def remove(self) -> None:
        self.logger.removeHandler(self)

    def emit(self, record: pylogging.LogRecord) -> None:
        try:
            message = f"{record.name}: {record.getMessage()}"
            exc = record.exc_info[1] if record.exc_info else None
            level = record.levelname.lower()
            if threading.get_ident() == self.thread:
                self.log.error(message, exc=exc, level=level)
            else:
                self.call_soon(lambda: self.log.error(message, exc=exc, level=level))
        except Exception:  # the run is over, a bad format string...: logging must not raise
            self.handleError(record)
