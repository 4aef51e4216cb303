"""Unit tests of pyweb.events: channels, combinators and the commit semantics
(CML §2.1-§2.4).  Every test runs on trio and on asyncio, on virtual time (see conftest)."""

from __future__ import annotations

import collections
import socket

import anyio
import pytest

from pyweb import events as ev
from pyweb import runtime as rt
from pyweb.events import (
    Channel,
    always,
    at_time,
    choose,
    guard,
    never,
    poll,
    select,
    sync,
    timeout,
    with_nack,
    wrap,
    wrap_abort,
    wrap_handler,
)
from pyweb.runtime.testing import wait_all_tasks_blocked

from .asyncsocket import socketpair

pytestmark = pytest.mark.timeout(30)


def queues_empty(*channels: Channel) -> bool:
    return all(not c._senders and not c._receivers for c in channels)


# --------------------------------------------------------------------- channels


async def test_send_then_recv_and_recv_then_send():
    ch = Channel()
    async with anyio.create_task_group() as n:
        n.start_soon(ch.send, "a")
        await wait_all_tasks_blocked()
        assert await ch.recv() == "a"
        n.start_soon(ch.send, "b")
        assert await ch.recv() == "b"
    assert queues_empty(ch)


async def test_send_blocks_until_received():
    ch = Channel()
    done = []

    async def sender():
        await ch.send(1)
        done.append(anyio.current_time())

    async with anyio.create_task_group() as n:
        n.start_soon(sender)
        await anyio.sleep(5)
        assert done == []  # unbuffered: no receiver yet
        assert await ch.recv() == 1
    assert done == [5.0]


async def test_event_forms_and_fifo_order_of_senders():
    ch = Channel()
    async with anyio.create_task_group() as n:
        for i in range(5):
            n.start_soon(sync, ch.send_evt(i))
            await wait_all_tasks_blocked()
        got = [await sync(ch.recv_evt()) for _ in range(5)]
    assert got == [0, 1, 2, 3, 4]


async def test_send_evt_commits_with_waiting_receiver():
    ch = Channel()
    got = []

    async def receiver():
        got.append(await ch.recv())

    async with anyio.create_task_group() as n:
        n.start_soon(receiver)
        await wait_all_tasks_blocked()
        assert await sync(ch.send_evt("x")) is None
    assert got == ["x"]


# --------------------------------------------------------------------- choose


async def test_choose_commits_exactly_one_of_two_ready_senders():
    ch1, ch2 = Channel(), Channel()
    sent = []

    async def sender(ch, v):
        await ch.send(v)
        sent.append(v)

    async with anyio.create_task_group() as n:
        n.start_soon(sender, ch1, 1)
        n.start_soon(sender, ch2, 2)
        await wait_all_tasks_blocked()
        first = await select(ch1.recv_evt(), ch2.recv_evt())
        await wait_all_tasks_blocked()
        assert sent == [first]  # the other sender is still blocked
        other = await select(ch1.recv_evt(), ch2.recv_evt())
    assert {first, other} == {1, 2}
    assert queues_empty(ch1, ch2)


async def test_choice_is_uniformly_random_among_enabled():
    ev.seed(7)
    counts = collections.Counter()
    for _ in range(3000):
        counts[await select(always("a"), always("b"), always("c"), never())] += 1
    for k in "abc":
        assert 850 < counts[k] < 1150, counts


async def test_choose_flattens_and_checks_types():
    with pytest.raises(TypeError):
        choose(always(1), 42)
    with pytest.raises(TypeError):
        wrap(always(1), 3)
    assert await sync(choose(choose(always(1)))) == 1


async def test_empty_choice_blocks_until_cancelled():
    with anyio.move_on_after(10) as scope:
        await sync(choose())
    assert scope.cancelled_caught


async def test_no_rendezvous_with_itself():
    ch = Channel()
    result = await select(ch.send_evt(1), ch.recv_evt(), wrap(timeout(1), lambda _: "timeout"))
    assert result == "timeout"
    assert queues_empty(ch)


async def test_two_sided_choice_rendezvous():
    a, b, c = Channel(), Channel(), Channel()
    results = {}

    async def left():
        results["left"] = await select(
            wrap(a.send_evt("from-left"), lambda _: "sent on a"),
            wrap(b.recv_evt(), lambda v: ("got on b", v)),
        )

    async def right():
        results["right"] = await select(
            wrap(a.recv_evt(), lambda v: ("got on a", v)),
            wrap(c.recv_evt(), lambda v: ("got on c", v)),
        )

    async with anyio.create_task_group() as n:
        n.start_soon(left)
        await wait_all_tasks_blocked()
        n.start_soon(right)
    assert results == {"left": "sent on a", "right": ("got on a", "from-left")}
    assert queues_empty(a, b, c)


async def test_two_parked_choices_are_matched_by_a_third():
    a, b = Channel(), Channel()
    results = {}

    async def chooser(name, evt):
        results[name] = await sync(evt)

    async with anyio.create_task_group() as n:
        n.start_soon(chooser, "x", choose(a.recv_evt(), b.recv_evt()))
        n.start_soon(chooser, "y", choose(a.recv_evt(), b.recv_evt()))
        await wait_all_tasks_blocked()
        await a.send(1)
        await b.send(2)
    assert sorted(results.values()) == [1, 2]
    assert queues_empty(a, b)


# --------------------------------------------------------------------- wrap / guard


async def test_wrappers_compose_inner_first_and_only_for_the_chosen_branch():
    calls = []

    def f(tag, fn):
        def w(v):
            calls.append(tag)
            return fn(v)

        return w

    evt = choose(
        wrap(wrap(always(1), f("inner", lambda v: v + 1)), f("outer", lambda v: v * 10)),
        wrap(never(), f("loser", lambda v: v)),
    )
    assert await sync(evt) == 20
    assert calls == ["inner", "outer"]


async def test_async_wrapper():
    async def slow_double(v):
        await anyio.sleep(1)
        return 2 * v

    assert await sync(wrap(always(21), slow_double)) == 42


async def test_wrapper_exception_propagates_and_message_was_consumed():
    ch = Channel()

    def boom(v):
        raise ValueError(v)

    async with anyio.create_task_group() as n:
        n.start_soon(ch.send, "m")
        with pytest.raises(ValueError, match="m"):
            await sync(wrap(ch.recv_evt(), boom))
    assert queues_empty(ch)


async def test_wrap_handler_catches_inner_wrapper_errors_only():
    def boom(v):
        raise KeyError(v)

    handled = wrap(wrap_handler(wrap(always(1), boom), lambda exc: ("handled", exc.args)), repr)
    assert await sync(handled) == repr(("handled", (1,)))
    # An exception raised outside the handler is not caught by it.
    outside = wrap(wrap_handler(always(1), lambda exc: "no"), boom)
    with pytest.raises(KeyError):
        await sync(outside)
    # A handler is not called when nothing failed.
    assert await sync(wrap_handler(always(5), lambda exc: "no")) == 5


async def test_guard_runs_once_per_sync_before_commit():
    runs = []

    def thunk():
        runs.append(anyio.current_time())
        return choose(always("now"), never())

    g = guard(thunk)
    assert await sync(g) == "now"
    assert await sync(choose(g, never())) == "now"
    assert await poll(g) == "now"
    assert len(runs) == 3


async def test_async_guard_may_communicate():
    req, rep = Channel(), Channel()

    async def server():
        x = await req.recv()
        await rep.send(x * 2)

    async def call_guard():
        await req.send(21)  # the guard communicates before the commit point
        return rep.recv_evt()

    async with anyio.create_task_group() as n:
        n.start_soon(server)
        assert await sync(guard(call_guard)) == 42


async def test_guard_must_return_an_event():
    with pytest.raises(TypeError):
        await sync(guard(lambda: 3))


# --------------------------------------------------------------------- nacks


async def test_nack_fires_iff_branch_lost():
    nacks = {}

    def branch(name, evt):
        def make(nack):
            nacks[name] = nack
            return wrap(evt, lambda _: name)

        return with_nack(make)

    ev.seed(1)
    for _ in range(20):
        won = await sync(choose(branch("a", always()), branch("b", always()), branch("c", never())))
        for name, nack in nacks.items():
            assert (await poll(wrap(nack, lambda _: True)) is True) == (name != won)


async def test_nack_wakes_a_task_waiting_on_it_and_fires_on_cancel():
    ch = Channel()
    seen = []

    async def watcher(nack):
        await sync(nack)
        seen.append(anyio.current_time())

    async with anyio.create_task_group() as n:

        def make(nack):
            n.start_soon(watcher, nack)
            return ch.recv_evt()

        with anyio.move_on_after(3):
            await sync(choose(with_nack(make), with_nack(make)))
    assert seen == [3.0, 3.0]
    assert queues_empty(ch)


async def test_nack_fires_when_a_guard_raises():
    fired = []

    def make(nack):
        nack.callbacks.append(lambda: fired.append(1))
        return always(1)

    def bad():
        raise RuntimeError("guard failed")

    with pytest.raises(RuntimeError):
        await sync(choose(with_nack(make), guard(bad)))
    assert fired == [1]


async def test_nack_of_chosen_branch_in_nested_with_nack():
    outer_nack = []

    def outer(nack):
        outer_nack.append(nack)
        return choose(always("x"), never())

    assert await sync(with_nack(outer)) == "x"
    assert await poll(outer_nack[0]) is None and not outer_nack[0].fired


async def test_wrap_abort_plain_and_async():
    aborted = []

    async def async_abort():
        aborted.append("async")

    evt = choose(
        wrap_abort(never(), lambda: aborted.append("plain")),
        wrap_abort(never(), async_abort),
        wrap_abort(always("win"), lambda: aborted.append("winner?!")),
    )
    assert await sync(evt) == "win"
    await wait_all_tasks_blocked()
    assert sorted(aborted) == ["async", "plain"]


# --------------------------------------------------------------------- cancellation


async def test_cancelled_sync_withdraws_offers_and_queues_do_not_grow():
    a, b = Channel(), Channel()
    for _ in range(500):
        with anyio.move_on_after(0.001):
            await select(a.recv_evt(), b.send_evt(1), a.send_evt(2))
        assert queues_empty(a, b)


async def test_cancelled_sender_racing_receiver_loses_no_message():
    import random

    rnd = random.Random(3)
    ch = Channel()
    taken, received = [], []

    async def sender(i, d):
        with anyio.move_on_after(d):
            await ch.send(i)
            taken.append(i)

    async def receiver(d):
        await anyio.sleep(d)
        with anyio.move_on_after(0.5):
            received.append(await ch.recv())

    async with anyio.create_task_group() as n:
        for i in range(300):
            n.start_soon(sender, i, rnd.choice([1, 2, 3]))
            n.start_soon(receiver, rnd.choice([1, 2, 3]))
    assert sorted(taken) == sorted(received)
    assert len(set(received)) == len(received)
    assert queues_empty(ch)


async def test_fail_after_around_select():
    ch = Channel()
    with pytest.raises(TimeoutError):
        with anyio.fail_after(2):
            await select(ch.recv_evt(), ch.send_evt(0))
    assert queues_empty(ch)


# --------------------------------------------------------------------- time


async def test_timeout_and_at_time_use_the_loops_clock():
    ch = Channel()
    t0 = anyio.current_time()
    assert await select(ch.recv_evt(), wrap(timeout(5), lambda _: "t")) == "t"
    assert anyio.current_time() - t0 == 5
    deadline = anyio.current_time() + 2
    assert (
        await select(at_time(deadline + 1), wrap(at_time(deadline), lambda _: "first")) == "first"
    )
    assert anyio.current_time() == deadline
    assert await poll(wrap(at_time(deadline), lambda _: "past")) == "past"
    assert queues_empty(ch)


async def test_timeout_is_forced_at_each_sync():
    t = timeout(1)
    await sync(t)
    start = anyio.current_time()
    await sync(t)
    assert anyio.current_time() - start == 1


async def test_message_beats_timeout():
    ch = Channel()

    async def late_sender():
        await anyio.sleep(1)
        await ch.send("msg")

    async with anyio.create_task_group() as n:
        n.start_soon(late_sender)
        assert await select(ch.recv_evt(), wrap(timeout(2), lambda _: "t")) == "msg"


# --------------------------------------------------------------------- poll / always / never


async def test_poll():
    ch = Channel()
    assert await poll(ch.recv_evt()) is None
    assert await poll(always(None)) is None  # the documented ambiguity
    assert await poll(wrap(always(None), lambda v: (v,))) == (None,)
    async with anyio.create_task_group() as n:
        n.start_soon(ch.send, 9)
        await wait_all_tasks_blocked()
        assert await poll(ch.recv_evt()) == 9
    assert queues_empty(ch)


# --------------------------------------------------------------------- tasks and I/O


async def test_task_done_evt_result_exception_and_cancel():
    async def work(x):
        await anyio.sleep(1)
        return x + 1

    async def fail():
        raise ValueError("bad")

    got = []
    with pytest.raises(ExceptionGroup):
        async with anyio.create_task_group() as n:
            h = ev.spawn(n, work, 1)
            assert await sync(ev.task_done_evt(h)) == 2
            assert await poll(h.done_evt()) == 2  # stays enabled
            hf = ev.spawn(n, fail)
            got.append(await sync(wrap_handler(hf.done_evt(), lambda e: ("caught", str(e)))))
    assert got == [("caught", "bad")]

    async with anyio.create_task_group() as n:
        hc = ev.spawn(n, anyio.sleep_forever)
        await wait_all_tasks_blocked()
        n.cancel_scope.cancel()
    with pytest.raises(ev.TaskCancelled):
        await sync(hc.done_evt())


async def test_readable_evt_and_losing_branch_stops_waiting():
    a, b = socketpair()
    with a, b:
        assert await select(ev.readable_evt(a), wrap(timeout(1), lambda _: "t")) == "t"
        # The helper of the losing branch is gone: waiting again is allowed.
        assert await select(ev.readable_evt(a), wrap(timeout(1), lambda _: "t")) == "t"
        await b.send(b"x")
        assert await sync(wrap(ev.readable_evt(a), lambda _: "readable")) == "readable"
        assert await sync(ev.writable_evt(b)) is None

        async def later():
            await anyio.sleep(1)
            await b.send(b"y")

        await a.recv(10)
        async with anyio.create_task_group() as n:
            n.start_soon(later)
            assert await select(ev.readable_evt(a), wrap(timeout(5), lambda _: "t")) is None
            assert await a.recv(10) == b"y"


async def test_readable_evt_on_closed_socket_raises_into_handler():
    s = socket.socket()
    s.close()
    assert await sync(wrap_handler(ev.readable_evt(s), lambda e: "closed")) == "closed"


# --------------------------------------------------------------------- library


async def test_mailbox_fifo_never_blocks_and_works_in_choose():
    box = ev.Mailbox()
    for i in range(100):
        box.send(i)  # no await: never blocks
    assert len(box) == 100
    assert [await box.recv() for _ in range(100)] == list(range(100))
    ch = Channel()

    async def later():
        await anyio.sleep(1)
        box.send("late")

    async with anyio.create_task_group() as n:
        n.start_soon(later)
        assert await select(box.recv_evt(), ch.recv_evt()) == "late"
    assert not box._receivers


async def test_multicast_every_port_sees_every_later_message_in_order():
    mc = ev.Multicast()
    p1 = mc.port()
    mc.send(1)
    p2 = mc.port()
    mc.send(2)
    mc.send(3)
    assert [await p1.recv() for _ in range(3)] == [1, 2, 3]
    assert [await sync(p2.recv_evt()) for _ in range(2)] == [2, 3]
    p2.close()
    mc.send(4)
    assert await poll(p2.recv_evt()) is None
    assert await p1.recv() == 4


async def test_rpc_commit_at_reply():
    rpc = ev.RPC()
    replies = []

    async def server(delay):
        while True:
            req = await rpc.accept()
            await anyio.sleep(delay)
            replies.append(await req.reply(req.arg * 2))

    async with anyio.create_task_group() as n:
        n.start_soon(server, 3)
        assert await rpc.call(4) == 8
        # The server accepts the request at once but replies after 3 s: with
        # the reply as the commit point, the 1 s timeout wins...
        assert await select(rpc.call_evt(5), wrap(timeout(1), lambda _: "t")) == "t"
        # ...and the server, replying 2 s later, learns that its reply was not taken.
        with anyio.fail_after(10):
            while len(replies) < 2:
                await anyio.sleep(0.5)
        assert replies == [True, False]
        n.cancel_scope.cancel()


async def test_rpc_serve_loop():
    rpc = ev.RPC()
    async with anyio.create_task_group() as n:
        n.start_soon(rpc.serve, lambda x: x + 1)
        assert [await rpc.call(i) for i in range(3)] == [1, 2, 3]
        n.cancel_scope.cancel()


# --------------------------------------------------------------------- threads


async def test_from_another_thread_through_from_thread():
    ch = Channel()

    def worker():
        # Documented way: let the loop run the send in its own thread.
        anyio.from_thread.run(ch.send, "from thread")

    async with anyio.create_task_group() as n:
        n.start_soon(anyio.to_thread.run_sync, worker)
        assert await ch.recv() == "from thread"


async def test_wrap_abort_runs_on_cancel_and_rpc_server_sees_abort():
    aborted = []
    ch = Channel()
    with anyio.move_on_after(1):
        await sync(wrap_abort(ch.recv_evt(), lambda: aborted.append("cancelled")))
    assert aborted == ["cancelled"]
    assert queues_empty(ch)


async def test_readable_evt_on_file_descriptors():
    import os

    r, w = os.pipe()
    try:
        assert await poll(ev.readable_evt(r)) is None
        os.write(w, b"z")
        assert await poll(wrap(ev.readable_evt(r), lambda _: "ready")) == "ready"
    finally:
        os.close(r)
        os.close(w)
    # A closed descriptor: the event commits with an error.
    assert await sync(wrap_handler(ev.readable_evt(r), lambda e: type(e).__name__)) == "OSError"


async def test_readable_evt_in_a_choice_with_a_channel_uses_a_helper_that_stops():
    a, b = socketpair()
    ch = Channel()
    with a, b:
        async with anyio.create_task_group() as n:

            async def later(delay, fn, *args):
                await anyio.sleep(delay)
                await fn(*args)

            # The channel wins: the helper waiting on `a` must let go at once...
            n.start_soon(later, 1, ch.send, "msg")
            assert await select(ev.readable_evt(a), ch.recv_evt()) == "msg"
            # ...so that waiting on `a` again is allowed (no BusyResourceError).
            n.start_soon(later, 1, b.send, b"x")
            assert await select(wrap(ev.readable_evt(a), lambda _: "readable"), ch.recv_evt()) == (
                "readable"
            )
            assert queues_empty(ch)
            with anyio.move_on_after(1):
                await select(ev.readable_evt(b), ch.recv_evt(), timeout(5))
            assert await a.recv(10) == b"x"


async def test_nan_times_are_rejected():
    with pytest.raises(ValueError):
        at_time(float("nan"))
    with pytest.raises(ValueError):
        timeout(float("nan"))


async def test_nested_choice_is_uniform_over_all_leaves():
    ev.seed(11)
    counts = collections.Counter()
    for _ in range(3000):
        counts[await select(always("a"), choose(always("b"), always("c")))] += 1
    for k in "abc":
        assert 850 < counts[k] < 1150, counts


async def test_wrap_abort_of_a_choice_runs_iff_none_of_its_events_won():
    aborted = []
    inner = wrap_abort(choose(never(), always("inner")), lambda: aborted.append("inner"))
    assert await sync(choose(inner, never())) == "inner"
    assert aborted == []
    outer = wrap_abort(choose(never(), never()), lambda: aborted.append("lost"))
    assert await sync(choose(outer, always("other"))) == "other"
    assert aborted == ["lost"]


async def test_each_test_runs_on_the_runtime_it_names(runtime):
    import asyncio

    assert rt.current().name == runtime
    assert (asyncio._get_running_loop() is not None) == (runtime == "asyncio")
