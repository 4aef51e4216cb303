"""The runtime's semaphore (a database pool's free handles) as a state machine: whatever
mix of bounded waits, cancellations, releases and passing time, no unit is lost or made up,
no waiter is woken twice, a waiter gives up only once its time has passed, and a unit is
never left free while someone waits. On both loops, on virtual time."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyweb import runtime
from pyweb.runtime.testing import RUNTIMES
from pyweb.runtime.testing import run as run_on

STEP = st.one_of(
    st.tuples(st.just("wait"), st.sampled_from([0.5, 1.0, 2.0, 3.0, float("inf")])),
    st.tuples(st.just("cancel"), st.integers(min_value=0, max_value=30)),
    st.tuples(st.just("release"), st.integers(min_value=0, max_value=30)),
    # a release and a cancellation with no checkpoint between them: who gets the unit?
    st.tuples(st.just("release+cancel"), st.integers(min_value=0, max_value=30)),
    st.tuples(st.just("sleep"), st.sampled_from([0.0, 0.25, 1.0, 2.5])),
)


async def scenario(units: int, steps: list[tuple[str, Any]]) -> None:
    rt = runtime.current()
    sem = rt.Semaphore(units)
    outcomes: dict[int, object] = {}  # waiter -> True (took one), False (gave up), "cancelled"
    scopes: list[Any] = []
    held: list[int] = []  # waiters holding a unit, in the order they took it
    started: dict[int, float] = {}
    timeouts: dict[int, float] = {}

    def record(i: int, what: object) -> None:
        assert i not in outcomes, f"waiter {i} woken twice: {outcomes[i]!r}, then {what!r}"
        outcomes[i] = what

    async def wait(i: int, seconds: float, scope: Any) -> None:
        with scope:
            started[i] = rt.now()
            got = await rt.acquire_within(sem, seconds)
            record(i, got)  # no checkpoint between the answer and this
            if got:
                held.append(i)
            else:
                assert rt.now() - started[i] >= seconds - 1e-6, "gave up early"
            return
        record(i, "cancelled")

    def free_one(k: int) -> None:
        if held:
            held.pop(k % len(held))
            sem.release()

    def check() -> None:
        waiting = len(scopes) - len(outcomes)
        assert sem.value >= 0
        assert not (sem.value > 0 and waiting > 0 and _queued(sem)), "a unit free while waited"

    for kind, arg in steps:
        if kind == "wait":
            i = len(scopes)
            scope = rt.CancelScope()
            scopes.append(scope)
            timeouts[i] = arg
            rt.spawn_background(wait, i, arg, scope)
            await rt.sleep(0)
        elif kind == "cancel":
            if scopes:
                scopes[arg % len(scopes)].cancel()
            await rt.sleep(0)
        elif kind == "release":
            free_one(arg)
            await rt.sleep(0)
        elif kind == "release+cancel":
            free_one(arg)
            if scopes:
                scopes[arg % len(scopes)].cancel()
            await rt.sleep(0)
        else:
            await rt.sleep(arg)
        check()

    # The end: every waiter with a deadline has answered once it has passed; the others are
    # cancelled; every unit taken is given back, and all of them are free again.
    for scope in scopes:
        scope.cancel()
    for _ in range(20):  # on the virtual clock: until every waiter has answered
        if set(outcomes) == set(range(len(scopes))):
            break
        await rt.sleep(0.5)
    assert set(outcomes) == set(range(len(scopes)))
    while held:
        free_one(0)
    assert sem.value == units
    assert not _queued(sem)
    # a unit is still a unit: all of them can be taken, and no more
    for _ in range(units):
        assert await rt.acquire_within(sem, 1.0) is True
    assert await rt.acquire_within(sem, 1.0) is False


def _queued(sem: Any) -> int:
    waiters = sem._waiters
    if waiters and hasattr(waiters[0], "done"):  # asyncio's futures stay until skipped
        return sum(not f.done() for f in waiters)
    return len(waiters)


@settings(max_examples=150, deadline=None)
@given(units=st.integers(min_value=0, max_value=3), steps=st.lists(STEP, max_size=40))
@pytest.mark.parametrize("loop", RUNTIMES)
def test_semaphore_loses_no_unit_and_wakes_no_waiter_twice(
    loop: str, units: int, steps: list[tuple[str, Any]]
) -> None:
    async def bounded() -> None:
        rt = runtime.current()
        with rt.move_on_after(10_000) as guard:  # virtual seconds: a lost wake-up fails
            await scenario(units, steps)
        assert not guard.cancelled_caught, "a waiter was never woken"

    run_on(bounded, loop)


@pytest.mark.parametrize("loop", RUNTIMES)
def test_waits_with_different_timeouts_give_up_each_at_its_own_time(loop: str) -> None:
    """A shorter wait queued behind a longer one still gives up on time (the trio timer
    task sleeps until the earliest deadline, not the first waiter's)."""

    async def main() -> None:
        rt = runtime.current()
        sem = rt.Semaphore(0)
        answers: dict[str, tuple[bool, float]] = {}

        async def wait(name: str, seconds: float) -> None:
            t0 = rt.now()
            got = await rt.acquire_within(sem, seconds)
            answers[name] = (got, rt.now() - t0)

        rt.spawn_background(wait, "long", 5.0)
        await rt.sleep(0.1)
        rt.spawn_background(wait, "short", 1.0)
        await rt.sleep(2.0)
        assert answers["short"][0] is False and 1.0 <= answers["short"][1] < 1.5
        assert "long" not in answers
        sem.release()
        await rt.sleep(0)
        await rt.sleep(0)
        assert answers["long"][0] is True
        # the timer waits for waiters again, and still bounds a new one
        await rt.sleep(10.0)
        t0 = rt.now()
        assert await rt.acquire_within(sem, 0.5) is False
        assert 0.5 <= rt.now() - t0 < 1.0

    run_on(main, loop)
