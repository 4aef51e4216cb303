"""memoize: plain and async functions, types of results, dogpile protection, failures."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest
import trio

from pyweb import cache
from pyweb.cache import Int, Option, Real, String, TimeOut
from pyweb.runtime.testing import RUNTIMES
from pyweb.runtime.testing import run as run_on


def test_memoize_plain_function(clock, name):
    calls = []

    def square(n):
        calls.append(n)
        return n * n

    c = cache.get(Int, Int, name, TimeOut(60))
    f = cache.memoize(c, square)
    assert [f(3), f(3), f(4)] == [9, 9, 16]
    assert calls == [3, 4]
    clock.advance(60)
    assert f(3) == 9
    assert calls == [3, 4, 3]
    assert c.memoize(square)(4) == 16  # the method form shares the entries


def test_memoize_caches_none_for_option_ranges(clock, name):
    calls = []

    def rate(url):
        calls.append(url)
        return None

    f = cache.memoize(cache.get(String, Option(Real), name, TimeOut(300)), rate)
    assert f("x") is None and f("x") is None
    assert calls == ["x"]  # the paper's NONE is a value: cached like any other


def test_a_failing_function_is_not_cached(clock, name):
    calls = []

    def flaky(n):
        calls.append(n)
        if len(calls) == 1:
            raise ConnectionError("down")
        return n

    f = cache.memoize(cache.get(Int, Int, name, TimeOut(60)), flaky)
    with pytest.raises(ConnectionError):
        f(1)
    assert f(1) == 1
    assert calls == [1, 1]


def test_a_result_of_the_wrong_type_names_the_function(clock, name):
    def half(n):
        return n / 2

    f = cache.memoize(cache.get(Int, Int, name, TimeOut(60)), half)
    with pytest.raises(cache.CacheTypeError, match=r"half returned 0.5 \(float\), not of type Int"):
        f(1)


def test_dogpile_threads_compute_once(clock, name):
    calls = []
    started = threading.Event()

    def slow_increment(n):
        calls.append(n)
        started.set()
        time.sleep(0.3)
        return n + 1

    f = cache.memoize(cache.get(Int, Int, name, TimeOut(60)), slow_increment)
    results = []
    threads = [threading.Thread(target=lambda: results.append(f(7))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [8] * 8
    assert calls == [7]


def test_dogpile_threads_share_a_failure(clock, name):
    calls = []

    def slow_failure(n):
        calls.append(n)
        time.sleep(0.3)
        raise ValueError(f"no value for {n}")

    f = cache.memoize(cache.get(Int, Int, name, TimeOut(60)), slow_failure)
    errors = []

    def call():
        try:
            f(5)
        except ValueError as error:
            errors.append(str(error))

    threads = [threading.Thread(target=call) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == ["no value for 5"] * 5
    assert len(calls) == 1  # the waiters got the leader's exception, they did not retry


@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_dogpile_async_computes_once(clock, name, loop):
    calls = []
    c = cache.get(String, Real, name, TimeOut(300))

    async def main():
        sleep = trio.sleep if loop == "trio" else asyncio.sleep

        async def slow_rate(url):
            calls.append(url)
            await sleep(0.2)
            return 6.5

        f = cache.memoize(c, slow_rate)
        if loop == "trio":
            results = []
            async with trio.open_nursery() as nursery:
                for _ in range(20):
                    nursery.start_soon(lambda: _append(results, f("usd")))
        else:
            results = await asyncio.gather(*(f("usd") for _ in range(20)))
        assert list(results) == [6.5] * 20
        assert await f("usd") == 6.5

    trio.run(main) if loop == "trio" else asyncio.run(main())
    assert calls == ["usd"]


async def _append(results, awaitable):
    results.append(await awaitable)


@pytest.mark.parametrize("loop", RUNTIMES)
def test_dogpile_async_failure_reaches_every_waiter_and_is_not_cached(clock, name, loop):
    calls = []
    c = cache.get(Int, Int, name, TimeOut(300))

    async def site_down_once(n):
        calls.append(n)
        await anyio.sleep(0.1)
        if len(calls) == 1:
            raise OSError("foreign site down")
        return 42

    f = cache.memoize(c, site_down_once)
    outcomes = []

    async def call():
        try:
            outcomes.append(await f(1))
        except OSError as error:
            outcomes.append(str(error))

    async def main():
        async with anyio.create_task_group() as nursery:
            for _ in range(6):
                nursery.start_soon(call)
        assert await f(1) == 42  # not cached: computed again

    run_on(main, loop, virtual_time=False)
    assert outcomes == ["foreign site down"] * 6
    assert calls == [1, 1]


@pytest.mark.parametrize("loop", RUNTIMES)
def test_dogpile_cancelled_leader_lets_a_waiter_take_over(clock, name, loop):
    calls = []
    c = cache.get(Int, Int, name, TimeOut(300))

    async def slow_double(n):
        calls.append(n)
        await anyio.sleep(0.2)
        return n * 2

    f = cache.memoize(c, slow_double)

    async def main():
        results = []
        leader_scope = anyio.CancelScope()

        async def leader():
            with leader_scope:
                await f(3)

        async with anyio.create_task_group() as nursery:
            nursery.start_soon(leader)
            while not calls:  # the leader computes (after the backend's own I/O)
                await anyio.sleep(0.001)
            nursery.start_soon(lambda: _append(results, f(3)))
            await anyio.wait_all_tasks_blocked()  # the waiter waits for the leader
            leader_scope.cancel()
        assert results == [6]

    run_on(main, loop, virtual_time=False)
    assert calls == [3, 3]


def test_memoize_needs_a_cache():
    with pytest.raises(TypeError, match="memoize takes a cache"):
        cache.memoize({}, abs)
