"""Helpers shared by test modules all over tests/ (one definition each).

* :func:`until` waits, in a plain thread, for a condition to hold (a bounded poll);
* :func:`until_async` does the same inside a trio run, sleeping between polls;
* :func:`until_settled` checkpoints until a condition holds, without letting time pass
  (for tests on trio's virtual clock, where sleeping would move the clock);
* :func:`write_site` writes a site's files under a directory;
* :func:`reachable` (from :mod:`pyweb.testing`) says whether a TCP service answers.

The server in a thread is :mod:`pyweb.testing` itself (``serve``, ``ServerThread``).
"""

from __future__ import annotations

import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import trio

from pyweb.testing import reachable

__all__ = ["until", "until_async", "until_settled", "write_site", "reachable"]


def until(predicate: Callable[[], object], what: str = "the condition",
          limit: float = 10.0, poll: float = 0.01) -> None:
    """Poll ``predicate`` until it is true; AssertionError naming ``what`` after ``limit``
    seconds (bounded generously: the machine is shared)."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)


async def until_async(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    """Inside trio: sleep in small steps until ``predicate`` holds (TooSlowError after
    ``timeout`` seconds)."""
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.005)


async def until_settled(predicate: Callable[[], object]) -> None:
    """Inside trio on a virtual clock: checkpoint until ``predicate`` holds; real I/O
    readiness arrives between checkpoints, virtual time does not move."""
    for _ in range(100_000):
        if predicate():
            return
        await trio.sleep(0)
    raise AssertionError("condition never became true")


def write_site(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create ``root`` with the given files (text is dedented; bytes written as they are)."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
    return root
