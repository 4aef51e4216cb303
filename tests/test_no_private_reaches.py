"""A module of pyweb uses another's names only through their public, documented form, so a
student reading one module sees what it depends on. This walks every file of pyweb/ with
``ast`` (``scripts/count_private.py``'s :func:`private_uses`) and refuses ``obj._name``
where ``_name`` belongs to another module, unless it is named below with its reason. The
standard library's documented underscore names (``os._exit``, ``sys._getframe``) are listed
in that script's ``DOCUMENTED`` table, with the reason for each, and counted apart."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location(
    "count_private", ROOT / "scripts" / "count_private.py"
)
assert _spec is not None and _spec.loader is not None
count_private = importlib.util.module_from_spec(_spec)
sys.modules["count_private"] = count_private  # (dataclasses look their module up there)
_spec.loader.exec_module(count_private)

NO_PUBLIC_FORM = {
    ("pyweb/db/postgresql.py", "conn._cancellations"): "asyncpg has no public way to wait "
    "until the server acknowledged a cancelled query (its pool reaches into the same set); "
    "a probe query instead would fail in an aborted transaction",
    ("pyweb/runtime/testing.py", "task._fut_waiter"): "asyncio tells no public way whether a "
    "task waits (trio.testing.wait_all_tasks_blocked's asyncio twin, for tests only)",
    ("pyweb/server/listener.py", "listener._accept"): "socket.socket's accept step below "
    "its wrapper, which turns the listener's family and type into enums for every new "
    "socket: a third of an accept's work (docs/performance.md)",
    ("pyweb/server/scheduling.py", "listener._accept"): "the same, in accept_now, the "
    "accept the schedulers of both loops call when a burst takes what is queued",
}
"""Reaches that stay, with the reason: another library's internals with no public form, and
the standard library's accept below its wrapper."""


def test_no_new_private_reaches_across_modules():
    reaches = [
        finding
        for finding in count_private.private_uses(ROOT / "pyweb")
        if not count_private.is_documented(finding)
        and (finding.path, finding.text) not in NO_PUBLIC_FORM
    ]
    assert not reaches, (
        "private names of another module (give the name a public, documented form):\n"
        + "\n".join(str(finding) for finding in reaches)
    )


def test_every_named_exception_is_still_needed():
    found = {(f.path, f.text) for f in count_private.private_uses(ROOT / "pyweb")}
    stale = [key for key in NO_PUBLIC_FORM if key not in found]
    assert not stale, f"these exceptions are gone: remove them from the list: {stale}"


def test_the_rule_sees_a_reach_and_spares_own_names_and_documented_ones(tmp_path, monkeypatch):
    monkeypatch.setattr(count_private, "ROOT", tmp_path)
    (tmp_path / "m.py").write_text(
        textwrap.dedent("""\
        import os, sys

        class Box:
            def __init__(self):
                self._items = []

        def peek(box, conn):
            frame = sys._getframe(1)
            if conn._session is None:
                os._exit(1)
            return box._items, frame
        """)
    )
    found = sorted(count_private.private_uses(tmp_path), key=lambda f: f.line)
    assert [(f.function, f.text) for f in found] == [
        ("peek", "sys._getframe"),
        ("peek", "conn._session"),
        ("peek", "os._exit"),
    ]
    assert [count_private.is_documented(f) for f in found] == [True, False, True]
