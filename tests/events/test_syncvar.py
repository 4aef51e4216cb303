"""CML's synchronizing variables (IVar, MVar, Latch) and ClientGoneEvt, as base events: alone,
in a choice, under a timeout, cancelled. Every test runs on trio and on asyncio, on virtual time
(see conftest)."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyweb.events import (
    ClientGoneEvt,
    IVar,
    Latch,
    MVar,
    PutError,
    choose,
    poll,
    select,
    sync,
    timeout,
    wrap,
)
from pyweb.runtime.testing import run, wait_all_tasks_blocked

pytestmark = pytest.mark.timeout(30)


# ---------------------------------------------------------------- IVar


async def test_ivar_every_reader_sees_the_one_value():
    var: IVar[str] = IVar()
    got: list[str] = []

    async def reader():
        got.append(await var.get())

    async with anyio.create_task_group() as n:
        for _ in range(3):
            n.start_soon(reader)
        await wait_all_tasks_blocked()
        assert var.waiting == 3 and not var.is_full
        var.put("v")
    assert got == ["v", "v", "v"]
    assert await var.get() == "v"  # stays full: a later reader does not block
    assert var.poll() == "v" and var.waiting == 0


async def test_ivar_second_put_raises_and_keeps_the_first_value():
    var: IVar[int] = IVar()
    assert var.poll() is None
    var.put(1)
    with pytest.raises(PutError, match="put\\(2\\)"):
        var.put(2)
    assert await var.get() == 1


async def test_ivar_in_a_choice_with_timeout_withdraws_its_offer():
    var: IVar[int] = IVar()
    assert await select(var.get_evt(), wrap(timeout(1), lambda _: "late")) == "late"
    assert var.waiting == 0  # the losing branch left nothing behind
    var.put(5)
    assert await select(var.get_evt(), wrap(timeout(1), lambda _: "late")) == 5


async def test_ivar_cancelled_get_leaves_no_offer():
    var: IVar[int] = IVar()
    with anyio.move_on_after(1):
        await var.get()
    assert var.waiting == 0


# ---------------------------------------------------------------- Latch


async def test_latch_set_twice_is_harmless_and_stays_set():
    latch = Latch()
    assert not latch.is_set
    assert await poll(latch.evt()) is None
    async with anyio.create_task_group() as n:
        woke = []

        async def waiter():
            await sync(latch.evt())
            woke.append(anyio.current_time())

        n.start_soon(waiter)
        await anyio.sleep(2)
        latch.set()
        latch.set()
    assert woke == [2.0]
    assert latch.is_set
    await sync(latch.evt())  # enabled forever


# ---------------------------------------------------------------- MVar


async def test_mvar_take_empties_put_fills():
    var: MVar[int] = MVar()
    assert not var.is_full
    var.put(1)
    with pytest.raises(PutError):
        var.put(2)
    assert await var.get() == 1 and var.is_full  # get leaves it full
    assert await var.take() == 1 and not var.is_full
    var.put(3)  # empty again: put is allowed
    assert var.peek() == 3 and var.is_full  # mGetPoll leaves it
    assert var.poll() == 3 and var.poll() is None and var.peek() is None


async def test_mvar_initial_value_and_swap():
    var = MVar("a")
    assert var.is_full
    assert await var.swap("b") == "a"
    assert await var.take() == "b"


async def test_mvar_put_serves_readers_then_one_taker():
    var: MVar[str] = MVar()
    log: list[tuple[str, str]] = []

    async def getter(name):
        log.append((name, await var.get()))

    async def taker(name):
        log.append((name, await var.take()))

    async with anyio.create_task_group() as n:
        n.start_soon(taker, "t1")
        n.start_soon(taker, "t2")
        n.start_soon(getter, "g")
        await wait_all_tasks_blocked()
        var.put("x")  # g sees it, one taker takes it, the other still waits
        await wait_all_tasks_blocked()
        assert len(log) == 2 and ("g", "x") in log
        first = next(name for name, value in log if name != "g")
        assert not var.is_full
        var.put("y")
    second = {"t1": "t2", "t2": "t1"}[first]
    assert (second, "y") in log and not var.is_full


async def test_mvar_parked_swapper_puts_its_value_back():
    var: MVar[str] = MVar()
    got: list[str] = []

    async def swapper():
        got.append(await var.swap("new"))

    async with anyio.create_task_group() as n:
        n.start_soon(swapper)
        await wait_all_tasks_blocked()
        var.put("old")
    assert got == ["old"]
    assert var.is_full and await var.get() == "new"


async def test_mvar_take_in_a_choice_is_taken_once():
    var: MVar[int] = MVar()
    other = MVar()
    results = []

    async def chooser():
        results.append(await sync(choose(var.take_evt(), wrap(other.take_evt(), lambda v: -v))))

    async with anyio.create_task_group() as n:
        n.start_soon(chooser)
        await wait_all_tasks_blocked()
        var.put(7)
        other.put(8)  # the choice already committed: 8 stays in `other`
    assert results == [7]
    assert other.poll() == 8 and not var.is_full


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.sampled_from(["put", "take", "get"]), max_size=30))
def test_mvar_model(ops, runtime):
    """Without blocking, an MVar behaves as an Optional cell: put on full raises, take on
    empty would block (poll returns None), get leaves it alone."""

    async def main():
        var: MVar[int] = MVar()
        model: int | None = None
        for i, op in enumerate(ops):
            if op == "put":
                if model is None:
                    var.put(i)
                    model = i
                else:
                    with pytest.raises(PutError):
                        var.put(i)
            elif op == "take":
                assert var.poll() == model
                model = None
            else:
                assert await poll(var.get_evt()) == model
            assert var.is_full == (model is not None)

    run(main, runtime)


# ---------------------------------------------------------------- ClientGoneEvt


class FakeWatcher:
    """A watcher whose 'look' reports what the test decides (the server's is a socket)."""

    def __init__(self) -> None:
        self.latch = Latch()
        self.seen = False
        self.checks = 0
        self.starts = 0

    def check(self) -> bool:
        self.checks += 1
        if self.seen:
            self.latch.set()
        return self.latch.is_set

    def start(self) -> None:
        self.starts += 1


async def test_client_gone_evt_looks_first_then_waits_on_the_latch():
    w = FakeWatcher()
    w.seen = True
    await sync(ClientGoneEvt(w))  # the look finds it at once: no waiting, no watcher task
    assert w.checks == 1 and w.starts == 0

    w2 = FakeWatcher()
    async with anyio.create_task_group() as n:
        done = []

        async def waiter():
            await sync(ClientGoneEvt(w2))
            done.append(True)

        n.start_soon(waiter)
        await wait_all_tasks_blocked()
        assert w2.starts == 1 and w2.latch.waiting == 1
        w2.latch.set()  # what the background watcher does when it sees the FIN
    assert done == [True]


async def test_client_gone_evt_losing_branch_leaves_nobody_waiting():
    w = FakeWatcher()
    assert await select(ClientGoneEvt(w), wrap(timeout(1), lambda _: "t")) == "t"
    assert w.latch.waiting == 0  # so the watcher stops: nobody listens
