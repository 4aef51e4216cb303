"""The runtime seam holds: events/, cache/, db/ and app/ reach the event loop only
through pyweb.runtime (they never import trio or asyncio-loop code directly)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PYWEB = Path(__file__).resolve().parent.parent / "pyweb"
SEAM_USERS = ["events", "cache", "db", "app"]
LOOP_LIBRARIES = {"trio", "anyio", "sniffio", "uvloop", "trio_asyncio"}


def imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("room", SEAM_USERS)
def test_room_reaches_the_loop_only_through_the_runtime(room):
    offenders = {
        str(path.relative_to(PYWEB)): sorted(imported_modules(path) & LOOP_LIBRARIES)
        for path in sorted((PYWEB / room).rglob("*.py"))
        if imported_modules(path) & LOOP_LIBRARIES
    }
    assert offenders == {}, f"these modules import an event loop library directly: {offenders}"


def test_the_seam_has_both_implementations_with_the_same_names():
    from pyweb.runtime import _asyncio, _trio

    assert _trio.name == "trio" and _asyncio.name == "asyncio"
    assert set(_trio.__all__) == set(_asyncio.__all__)
    for name in _trio.__all__:
        assert hasattr(_trio, name) and hasattr(_asyncio, name), name


def test_current_picks_the_running_loop():
    import asyncio

    import trio

    from pyweb import runtime

    async def which():
        return runtime.current().name

    assert trio.run(which) == "trio"
    assert asyncio.run(which()) == "asyncio"
    with pytest.raises(RuntimeError, match="inside trio or asyncio"):
        runtime.current()
    assert runtime.get("asyncio").name == "asyncio"
    with pytest.raises(ValueError, match="unknown runtime 'curio'"):
        runtime.get("curio")


def test_asyncio_semaphore_survives_a_release_between_cancel_and_wakeup():
    # The broken order: a waiter's task is cancelled (its future is cancelled at once), then
    # release() runs before the task wakes: release() skips the cancelled future and drops
    # it from the queue, so the waiter must not try to remove it again (ValueError before).
    import asyncio

    from pyweb.runtime import _asyncio

    async def main() -> None:
        sem = _asyncio.Semaphore(0)
        waiter = asyncio.ensure_future(sem.acquire())
        await asyncio.sleep(0)  # the waiter is queued
        waiter.cancel()
        sem.release()  # before the waiter runs again
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert sem.value == 1  # the unit was not lost to the cancelled waiter
        await sem.acquire()
        assert sem.value == 0

    asyncio.run(main())


@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_acquire_within_gives_up_in_time_and_loses_no_unit(loop):
    """A bounded wait for a unit (a database pool's handle): False after the time, and the
    unit released later goes to the next waiter or back to the count, not to the one that
    gave up; True when a unit is handed over in time."""
    import asyncio
    import time

    import trio

    from pyweb import runtime

    async def main():
        rt = runtime.current()
        sem = rt.Semaphore(0)
        started = time.monotonic()
        assert await rt.acquire_within(sem, 0.05) is False
        assert time.monotonic() - started >= 0.04
        sem.release()  # nobody waits any more: the unit is counted
        assert sem.value == 1
        assert await rt.acquire_within(sem, 0.05) is True
        assert sem.value == 0

        async def release_soon():  # runs once main waits in acquire_within
            sem.release()

        rt.spawn_background(release_soon)
        assert await rt.acquire_within(sem, 5.0) is True
        assert sem.value == 0

    if loop == "trio":
        trio.run(main)
    else:
        asyncio.run(main())


def test_both_implementations_keep_the_typed_contract():
    """pyweb.runtime.contract.Runtime (what mypy checks both modules against) is met at run
    time too, and a module lacking one of its names is not a Runtime."""
    import types

    from pyweb import runtime
    from pyweb.runtime.contract import Runtime

    for name in ("trio", "asyncio"):
        assert isinstance(runtime.get(name), Runtime), name
    partial = types.ModuleType("partial")
    partial.__dict__.update({k: getattr(runtime.get("trio"), k) for k in runtime.get("trio").__all__})
    del partial.park
    assert not isinstance(partial, Runtime)


@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_notify_closing_wakes_the_socket_waiter_with_closed_resource_error(loop):
    """Before a socket another task waits on is closed, ``notify_closing`` ends that wait
    with the runtime's ClosedResourceError (the loop stops watching the descriptor), and
    the socket can be waited on again afterwards by another task."""
    import asyncio
    import socket

    import trio

    from pyweb import runtime

    async def main():
        rt = runtime.current()
        a, b = socket.socketpair()
        a.setblocking(False)
        seen = []
        done = rt.Event()

        async def wait():
            try:
                await rt.wait_readable(a)
                seen.append("readable")
            except rt.ClosedResourceError:
                seen.append("closed")
            done.set()

        rt.spawn_background(wait)
        for _ in range(10):
            await rt.sleep(0)
        assert seen == []
        rt.notify_closing(a)
        await done.wait()
        assert seen == ["closed"]
        b.send(b"x")  # the descriptor is free for a new wait
        await rt.wait_readable(a)
        a.close()
        b.close()

    if loop == "trio":
        trio.run(main)
    else:
        asyncio.run(main())


@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_thread_handoff_runs_a_call_in_the_loops_thread(loop):
    """What a worker thread uses to touch the loop's state (the log's bridge): the call
    runs in the loop's own thread, soon, without the loop being woken by anything else."""
    import asyncio
    import threading

    import trio

    from pyweb import runtime

    async def main():
        rt = runtime.current()
        handoff = rt.thread_handoff()
        ran_in = []
        done = rt.Event()

        def in_the_loop():
            ran_in.append(threading.get_ident())
            done.set()

        thread = threading.Thread(target=handoff, args=(in_the_loop,))
        thread.start()
        with rt.move_on_after(10):
            await done.wait()
        thread.join()
        assert ran_in == [threading.get_ident()]

    if loop == "trio":
        trio.run(main)
    else:
        asyncio.run(main())
