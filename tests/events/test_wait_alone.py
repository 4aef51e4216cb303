"""A socket-readiness branch in a choice with channel branches (``_core._wait_alone``).

The server waits for "request bytes, the keep-alive deadline or the shutdown message" on
every idle connection, so that choice must not cost a helper task: the readiness branch is
awaited directly and a partner that takes another branch's offer interrupts the wait.
"""

from __future__ import annotations

import anyio
import pytest

from pyweb import events as ev
from pyweb.events import Channel, Mailbox, Multicast, select, sync, timeout, wrap
from pyweb.runtime import _asyncio, _trio
from pyweb.runtime.testing import wait_all_tasks_blocked

from .asyncsocket import socketpair


@pytest.fixture
def no_helpers(monkeypatch):
    def refuse(*args):
        raise AssertionError("a helper task was spawned")

    for implementation in (_trio, _asyncio):
        monkeypatch.setattr(implementation, "spawn_background", refuse)


async def later(delay, fn, *args):
    await anyio.sleep(delay)
    result = fn(*args)
    if hasattr(result, "__await__"):
        await result


async def test_mailbox_message_interrupts_a_socket_wait(no_helpers):
    a, b = socketpair()
    box = Mailbox()
    with a, b:
        async with anyio.create_task_group() as n:
            n.start_soon(later, 1, box.send, "stop")
            got = await select(wrap(ev.readable_evt(a), lambda _: "data"), box.recv_evt())
            assert got == "stop"
            assert len(box) == 0 and not box._receivers
            # The socket is free again: waiting on it is allowed at once.
            n.start_soon(later, 1, b.send, b"x")
            got = await select(wrap(ev.readable_evt(a), lambda _: "data"), box.recv_evt())
            assert got == "data" and not box._receivers


async def test_timer_and_channel_and_socket(no_helpers):
    a, b = socketpair()
    ch = Channel()
    with a, b:
        got = await select(ev.readable_evt(a), ch.recv_evt(), wrap(timeout(3), lambda _: "timeout"))
        assert got == "timeout" and not ch._receivers
        async with anyio.create_task_group() as n:
            n.start_soon(later, 1, ch.send, "msg")
            assert await select(ev.readable_evt(a), ch.recv_evt(), timeout(3)) == "msg"


async def test_multicast_port_message_is_not_lost_when_the_socket_wins(no_helpers):
    a, b = socketpair()
    mc = Multicast()
    port = mc.port()
    with a, b:
        await b.send(b"x")
        # Readable at once: the socket branch commits and the port keeps its message.
        mc.send("later")
        ev.seed(1)
        seen = []
        for _ in range(2):
            seen.append(await select(wrap(ev.readable_evt(a), lambda _: "data"), port.recv_evt()))
            if seen[-1] == "later":
                break
        assert "later" in seen or await sync(port.recv_evt()) == "later"


async def test_outer_cancel_withdraws_the_offers(no_helpers):
    a, b = socketpair()
    box = Mailbox()
    with a, b:
        with anyio.move_on_after(1):
            await select(ev.readable_evt(a), box.recv_evt())
        assert not box._receivers
        box.send(1)  # buffered, not given to the cancelled sync
        assert len(box) == 1


async def test_a_message_committed_as_the_sync_is_cancelled_is_not_lost(no_helpers):
    a, b = socketpair()
    box = Mailbox()
    got = []
    with a, b:
        async with anyio.create_task_group() as n:
            scope = anyio.CancelScope()

            async def waiter():
                with scope:
                    got.append(await select(ev.readable_evt(a), box.recv_evt()))
                    await anyio.sleep_forever()  # the cancellation arrives here, not before

            n.start_soon(waiter)
            await wait_all_tasks_blocked()
            box.send("kept")  # commits the waiter's sync...
            scope.cancel()  # ...and cancels it in the same step
        assert got == ["kept"] and len(box) == 0
