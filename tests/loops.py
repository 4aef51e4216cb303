"""Running the suite on both of pyweb's loops: the marks, and what asyncio lacks.

A test module that starts servers says ``pytestmark = pytest.mark.loops("trio",
"asyncio")``; each of its tests then runs once per loop (ids ``[trio]`` and ``[asyncio]``,
so ``-k asyncio`` picks one side), and every server it starts through
:mod:`pyweb.testing` (``serve``, ``ServerThread``, the ``kit`` of tests/server) runs on that
loop. A test about trio itself keeps ``@pytest.mark.loops("trio")`` with a comment saying
why; one case of a parametrised test, ``pytest.param(..., marks=pytest.mark.trio_only("why"))``
(its asyncio run is skipped, with the reason). ``--loops trio`` (or ``PYWEB_TEST_LOOPS=trio``) runs one loop only; ``make test`` runs
both.

The asyncio server does not do everything the trio server does yet. A test that needs
such a feature says so with ``@asyncio_lacks("<feature>")``: its asyncio run is then an
expected failure, strictly (the day the feature lands, the test passes, pytest reports the
unexpected pass as a failure, and the mark, and the feature's line below, go). The features
are listed here, in one place, so that the list is the to-do of the asyncio server.
"""

from __future__ import annotations

import pytest

LOOPS = ("trio", "asyncio")

ASYNCIO_LACKS: dict[str, str] = {
    # the name the marks use -> what the asyncio server does not do yet
    # (landed: the logs, unread bodies, handler results, failing streams, WebSockets, a
    # fresh connection at shutdown, unframeable Fragments, the chat's long polls, the
    # connection slots)
    "schedulers": "the schedulers' concurrency (pool_size, nothread: one request at a time)",
    "regions header": "the X-Pyweb-Regions header of development mode (a page's regions "
    "report)",
    "reply checks": "a 500 for a head larger than the reply arena (the asyncio server has no "
    "arena: it sends such a head)",
}


def asyncio_lacks(*features: str) -> pytest.MarkDecorator:
    """Mark a test whose asyncio run fails for want of ``features`` (strict xfail)."""
    for feature in features:
        if feature not in ASYNCIO_LACKS:
            raise ValueError(
                f"asyncio_lacks({feature!r}): not in tests/loops.py ASYNCIO_LACKS "
                "(if it has landed on the asyncio server, remove the mark)"
            )
    return pytest.mark.asyncio_lacks(*features)


def xfail_on_asyncio(features: tuple[str, ...]) -> pytest.MarkDecorator:
    """The strict xfail an ``asyncio_lacks`` mark stands for."""
    what = ", ".join(ASYNCIO_LACKS[f] for f in features)
    return pytest.mark.xfail(strict=True, reason=f"asyncio server: {what} not yet")


def selected(option: str) -> tuple[str, ...]:
    """The loops named by ``--loops`` / ``PYWEB_TEST_LOOPS`` ("trio,asyncio"), checked."""
    names = tuple(name.strip() for name in option.split(",") if name.strip())
    unknown = [name for name in names if name not in LOOPS]
    if unknown or not names:
        raise pytest.UsageError(f"--loops: {option!r}: name one or both of {', '.join(LOOPS)}")
    return names
