"""The trio side of the database bridge (``pyweb/runtime/bridge.py``): each query crosses
to the driver's asyncio loop and back, waking the trio task through a *bell* (a socket
pair) that is lent to one call at a time and kept for the next."""

from __future__ import annotations

import asyncio
import os

import pytest
import trio

from pyweb.runtime.bridge import IDLE_BELLS, LoopThread


@pytest.fixture
def bridge():
    lt = LoopThread(name="pyweb-test-bridge")
    yield lt
    lt.loop.call_soon_threadsafe(lt.loop.stop)
    lt._close_bells()


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_burst_of_queries_keeps_at_most_IDLE_BELLS(bridge):
    async def query(i: int) -> int:
        await asyncio.sleep(0.01)
        return i * 2

    async def main() -> list[int]:
        results = [0] * 200
        async with trio.open_nursery() as nursery:
            for i in range(200):
                async def one(i: int = i) -> None:
                    results[i] = await bridge.call(query(i))
                nursery.start_soon(one)
        return results

    before = _open_fds()
    assert trio.run(main) == [i * 2 for i in range(200)]
    assert len(bridge._bells) == IDLE_BELLS  # 200 made for the burst, 64 kept
    # (the loop thread's own sockets are made before; two per kept bell remain)
    assert _open_fds() - before <= 2 * IDLE_BELLS + 8


def test_a_bell_is_lent_again(bridge):
    async def main() -> None:
        for _ in range(20):
            assert await bridge.call(asyncio.sleep(0, result="ok")) == "ok"

    trio.run(main)
    assert len(bridge._bells) == 1


def test_a_cancelled_call_cancels_the_query_and_keeps_its_bell(bridge):
    cancelled = []

    async def slow() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main() -> None:
        with trio.move_on_after(0.05):
            await bridge.call(slow())
        assert await bridge.call(asyncio.sleep(0, result=1)) == 1

    trio.run(main)
    assert cancelled == [True]
    assert len(bridge._bells) == 1  # heard after the clean-up, put back, lent again
