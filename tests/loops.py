"""Running the suite on both of pyweb's loops: the marks, and what asyncio lacks.

A test module that starts servers says ``pytestmark = pytest.mark.loops("trio",
"asyncio")``; each of its tests then runs once per loop (ids ``[trio]`` and ``[asyncio]``,
so ``-k asyncio`` picks one side), and every server it starts through
:mod:`pyweb.testing` (``serve``, ``ServerThread``, the ``kit`` of tests/server) runs on that
loop, and so does every ``pyweb serve`` process started with ``tests.helpers.serve_command``
(``start_serve``), which adds ``--loop``. A test about trio itself keeps
``@pytest.mark.loops("trio")`` with a comment saying why; one case of a parametrised test,
``pytest.param(..., marks=pytest.mark.trio_only("why"))`` (its asyncio run is skipped, with
the reason). A test of such a module that starts no server (a property of pure code, a
signature, a parser) is marked ``@pytest.mark.loop_free``: it runs once, on the first of
the module's loops that the run selected, since the other loop would run the same code
again. ``--loops trio`` (or ``PYWEB_TEST_LOOPS=trio``) runs one loop only; ``make
test`` runs both.

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
    # connection slots, the X-Pyweb-Regions header of development mode, the 500 for a
    # reply head larger than the reply arena, --profile-alloc, upload fairness, the
    # schedulers)
}


def asyncio_lacks(
    *features: str, when: dict[str, str] | None = None, strict: bool = True
) -> pytest.MarkDecorator:
    """Mark a test whose asyncio run fails for want of ``features`` (strict xfail); with
    ``when``, only its runs whose other parameters have those values (``when={"use_impl":
    "c"}``: the C extension's run; the Python fallback's passes). ``strict=False`` only for
    a gap that shows as a time bound missed in some runs and met in others (a strict mark
    would fail the runs that happen to pass); its line in ASYNCIO_LACKS says so."""
    for feature in features:
        if feature not in ASYNCIO_LACKS:
            raise ValueError(
                f"asyncio_lacks({feature!r}): not in tests/loops.py ASYNCIO_LACKS "
                "(if it has landed on the asyncio server, remove the mark)"
            )
    return pytest.mark.asyncio_lacks(*features, when=when or {}, strict=strict)


def lacked(item: pytest.Item, params: dict[str, object]) -> list[pytest.Mark]:
    """The ``asyncio_lacks`` marks that apply to the asyncio run of ``item`` (with its
    ``params``)."""
    return [
        mark
        for mark in item.iter_markers("asyncio_lacks")
        if all(params.get(k) == v for k, v in mark.kwargs.get("when", {}).items())
    ]


def xfail_on_asyncio(marks: list[pytest.Mark]) -> pytest.MarkDecorator:
    """The xfail the ``asyncio_lacks`` marks stand for: strict unless one says otherwise."""
    what = ", ".join(ASYNCIO_LACKS[f] for mark in marks for f in mark.args)
    strict = all(mark.kwargs.get("strict", True) for mark in marks)
    return pytest.mark.xfail(strict=strict, reason=f"asyncio server: {what} not yet")


def selected(option: str) -> tuple[str, ...]:
    """The loops named by ``--loops`` / ``PYWEB_TEST_LOOPS`` ("trio,asyncio"), checked."""
    names = tuple(name.strip() for name in option.split(",") if name.strip())
    unknown = [name for name in names if name not in LOOPS]
    if unknown or not names:
        raise pytest.UsageError(f"--loops: {option!r}: name one or both of {', '.join(LOOPS)}")
    return names
