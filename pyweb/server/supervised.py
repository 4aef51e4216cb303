"""What a worker process knows of its supervisor: the few agreements between them.

``pyweb serve --workers N`` runs N server processes under a supervisor (``workers.py``).
The supervisor is a separate program; a worker, on either loop, only keeps three
agreements with it, and they live here so that the servers of both loops, the status page
and the metrics page share them without depending on the supervisor's code:

* it says it is ready, once it listens, by writing a byte to the pipe named by
  ``PYWEB_READY_FD`` (:func:`announce_ready`);
* it exits with :data:`RECYCLE_EXIT` when it stops on purpose after ``--max-requests``, so
  the supervisor replaces it at once instead of backing off;
* it may read who the other workers are from the table the supervisor keeps in the file
  named by ``PYWEB_WORKERS_FILE`` (:func:`worker_table`).
"""

from __future__ import annotations

import json
import os
import sys

__all__ = ["RECYCLE_EXIT", "announce_ready", "worker_table"]

RECYCLE_EXIT = 75
"""Exit status of a worker that stopped on purpose after ``--max-requests`` (EX_TEMPFAIL)."""


def announce_ready(worker: str) -> None:
    """In a worker: say that this worker listens, on stdout (``pyweb worker I (pid P)
    ready``, for people and test scripts) and to the supervisor through the pipe named by
    ``PYWEB_READY_FD`` (once; no pipe when the process was not started by a supervisor).

    The line goes out in one ``write``: the workers share the supervisor's stdout, and
    ``print`` on an unbuffered stdout (``python -u``, ``PYTHONUNBUFFERED``) writes the text
    and its newline apart, so two workers that start together could print
    ``...readypyweb worker 1 ... ready`` and a reader of lines would see one of them."""
    sys.stdout.write(f"pyweb worker {worker} (pid {os.getpid()}) ready\n")
    sys.stdout.flush()
    fd = os.environ.pop("PYWEB_READY_FD", None)
    if fd is None:
        return
    try:
        os.write(int(fd), b"1")
        os.close(int(fd))
    except (OSError, ValueError):  # the supervisor is gone, or the variable is not ours
        pass


def worker_table(path: str | None = None) -> list[dict[str, int]]:
    """The live workers as the supervisor last wrote them (``[{"worker": i, "pid": p}]``);
    empty when not running under a supervisor. Read by the status and metrics pages."""
    path = path or os.environ.get("PYWEB_WORKERS_FILE")
    if not path:
        return []
    try:
        with open(path, encoding="utf-8") as f:
            result: list[dict[str, int]] = json.load(f)
            return result
    except (OSError, ValueError):
        return []
