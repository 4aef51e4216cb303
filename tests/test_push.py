"""SharedMulticast (pyweb/push.py): the multicast channel of every process of a site.

On the in-process cache and on a real Redis (127.0.0.1:6379, keys under a prefix of this
run). The outage tests put a proxy of their own between pyweb and Redis and cut it (the
shared Redis is never stopped); another process's publishes are made straight to Redis with
the same script, as another worker would.

Every test runs on both loops (``run_here``: the test's loop, as a page on that loop's
server would call SharedMulticast).
"""

from __future__ import annotations

import os
import socket
import threading
import uuid

import anyio
import pytest
import redis

from pyweb import cache
from pyweb import push as shared_module
from pyweb.events import Channel, choose, select, sync, timeout, wrap
from pyweb.push import MulticastUnavailable, Resync, SharedMulticast
from pyweb.runtime.testing import run
from pyweb.testing import default_loop
from tests.db.proxy import Proxy

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]

RUN_PREFIX = f"pyweb-test:{uuid.uuid4().hex[:8]}:"


def run_here(main):
    """``main()`` to completion on the test's loop (real time: Redis is real)."""
    return run(main, default_loop(), virtual_time=False)


def redis_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.5).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module", autouse=True)
def _remove_this_runs_keys():
    yield
    if redis_up():
        client = redis.Redis(host="127.0.0.1", port=6379)
        keys = list(client.scan_iter(match=RUN_PREFIX + "*", count=1000))
        if keys:
            client.unlink(*keys)


@pytest.fixture
def on_redis():
    """The cache (and so every SharedMulticast) on Redis under a prefix of this test."""
    if not redis_up():
        if os.environ.get("CI") == "true":
            raise AssertionError("Redis is not running on 127.0.0.1:6379")
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    prefix = f"{RUN_PREFIX}{uuid.uuid4().hex[:8]}:"
    cache.configure("redis://127.0.0.1:6379/0", prefix=prefix)
    yield prefix
    cache.configure("memory")


@pytest.fixture
def on_memory():
    cache.configure("memory")
    yield


def other_process_publishes(prefix: str, name: str, text: str) -> int:
    """A publish by another process (straight to Redis, the same script)."""
    client = redis.Redis(host="127.0.0.1", port=6379)
    key = f"{prefix}events:{name}"
    payload = f'{{"text":"{text}"}}'
    return int(
        client.eval(shared_module._PUBLISH, 2, key + ":seq", key + ":log", payload, 100, key)
    )


async def next_message(port, seconds: float = 10.0):
    got = await select(port.recv_evt(), wrap(timeout(seconds), lambda _: "timed out"))
    assert got != "timed out", "no message within the limit"
    return got


async def skip_resyncs(port):
    while isinstance(got := await next_message(port), Resync):
        pass
    return got


# --- the same behaviour on both backends ---------------------------------------------------


@pytest.mark.parametrize("where", ["on_memory", "on_redis"])
def test_every_port_sees_every_message_in_order_with_its_seq(where, request):
    request.getfixturevalue(where)
    ch = SharedMulticast("room")

    async def main():
        ports = [ch.port() for _ in range(3)]
        await settle(ports)
        sent = [await ch.send({"n": i}) for i in range(50)]
        seqs = [m["seq"] for m in sent]
        assert seqs == sorted(seqs) and len(set(seqs)) == 50
        assert all(seqs[i + 1] == seqs[i] + 1 for i in range(49))  # one counter per channel
        for port in ports:
            got = [await skip_resyncs(port) for _ in range(50)]
            assert got == sent
        assert await ch.since(seqs[44]) == sent[45:]

    run_here(main)


async def settle(ports):
    """Wait until the subscription is live (on Redis each early port gets one Resync)."""
    from pyweb.cache.redis_backend import RedisBackend

    if isinstance(cache.backend(), RedisBackend):
        for port in ports:
            assert isinstance(await next_message(port), Resync)


@pytest.mark.parametrize("where", ["on_memory", "on_redis"])
def test_a_port_in_a_choice_with_a_timeout_and_a_client_gone_event(where, request):
    request.getfixturevalue(where)
    ch = SharedMulticast("choice")

    async def main():
        port = ch.port()
        await settle([port])
        gone: Channel[None] = Channel()
        evt = choose(
            wrap(port.recv_evt(), lambda m: ("message", m["text"])),
            wrap(timeout(0.2), lambda _: ("timeout", None)),
            wrap(gone.recv_evt(), lambda _: ("gone", None)),
        )
        assert await sync(evt) == ("timeout", None)
        await ch.send({"text": "hi"})
        assert await sync(evt) == ("message", "hi")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(gone.send, None)
            assert await sync(evt) == ("gone", None)

    run_here(main)


@pytest.mark.parametrize("where", ["on_memory", "on_redis"])
def test_bad_messages_are_refused_naming_the_value(where, request):
    request.getfixturevalue(where)
    ch = SharedMulticast("bad")

    async def main():
        with pytest.raises(TypeError, match="a dict"):
            await ch.send(["not", "an object"])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="must be JSON"):
            await ch.send({"when": object()})

    run_here(main)
    with pytest.raises(ValueError, match="without spaces"):
        SharedMulticast("two words")


def test_the_history_is_bounded(on_memory):
    ch = SharedMulticast("short", history=3)

    async def main():
        for i in range(5):
            await ch.send({"i": i})
        assert [m["i"] for m in await ch.since(0)] == [2, 3, 4]

    run_here(main)


# --- Redis: other processes, outages, gaps --------------------------------------------------


def test_a_message_from_another_process_reaches_the_port(on_redis):
    ch = SharedMulticast("cross")

    async def main():
        port = ch.port()
        await settle([port])
        seq = await anyio.to_thread.run_sync(other_process_publishes, on_redis, "cross", "hello")
        got = await next_message(port)
        assert got == {"seq": seq, "text": "hello"}

    run_here(main)


def test_a_skipped_sequence_number_is_a_resync(on_redis):
    ch = SharedMulticast("gap")

    async def main():
        port = ch.port()
        await settle([port])
        first = await ch.send({"i": 1})
        assert await next_message(port) == first
        # A message this process never saw (as if its delivery had been lost):
        redis.Redis(host="127.0.0.1", port=6379).incr(f"{on_redis}events:gap:seq")
        second = await ch.send({"i": 2})
        got = await next_message(port)
        assert isinstance(got, Resync) and "expected message" in got.reason
        assert await next_message(port) == second

    run_here(main)


def test_a_cut_to_redis_is_a_resync_and_the_history_fills_the_gap():
    """The proxy is cut: messages published meanwhile by another process do not reach this
    one, but its ports are told to resynchronise once it is back, and the history has them."""
    if not redis_up():
        pytest.skip("Redis is not running")
    proxy = Proxy(("127.0.0.1", 6379))
    proxy.start()
    prefix = f"{RUN_PREFIX}{uuid.uuid4().hex[:8]}:"
    cache.configure(f"redis://127.0.0.1:{proxy.port}/0", prefix=prefix)
    ch = SharedMulticast("cut")
    try:

        async def main():
            port = ch.port()
            await settle([port])
            before = await ch.send({"text": "before"})
            assert await next_message(port) == before
            proxy.stop()
            with pytest.raises(MulticastUnavailable):
                await ch.send({"text": "lost?"})  # the sender is told: nothing is silent
            missed = [
                await anyio.to_thread.run_sync(other_process_publishes, prefix, "cut", f"m{i}")
                for i in range(3)
            ]
            proxy.start()  # same port: Redis is back for this process (the subscriber's
            # connection was cut by stop(): it reconnects and reports the gap)
            got = await next_message(port, 20)
            assert isinstance(got, Resync)
            news = await retry_since(ch, before["seq"])
            assert [m["seq"] for m in news] == missed
            assert [m["text"] for m in news] == ["m0", "m1", "m2"]
            after = await ch.send({"text": "after"})
            assert await next_message(port) == after

        run_here(main)
    finally:
        proxy.stop()
        cache.configure("memory")


async def retry_since(ch, after):
    # the cache backend refuses calls for retry_after (1 s) after a failure
    for _ in range(50):
        try:
            return await ch.since(after)
        except MulticastUnavailable:
            await anyio.sleep(0.1)
    raise AssertionError("the history stayed unreadable")


def test_after_redis_loses_its_data_sequence_numbers_keep_increasing(on_redis):
    """A Redis restart without persistence empties the counter and the history: the counter
    restarts from the clock, above every number given before, and the gap is a Resync."""
    ch = SharedMulticast("restart")

    async def main():
        port = ch.port()
        await settle([port])
        old = await ch.send({"i": 1})
        assert await next_message(port) == old
        redis.Redis(host="127.0.0.1", port=6379).delete(
            f"{on_redis}events:restart:seq", f"{on_redis}events:restart:log"
        )
        new = await ch.send({"i": 2})
        assert new["seq"] > old["seq"]
        assert isinstance(await next_message(port), Resync)
        assert await next_message(port) == new
        assert await ch.since(old["seq"]) == [new]

    run_here(main)


def test_two_event_loops_each_get_every_message(on_redis):
    """Two servers in one process (two loops in two threads, as pyweb.testing runs them)
    each have their own subscriber; both see a message sent from either."""
    ch = SharedMulticast("loops")
    results: dict[str, list] = {"a": [], "b": []}
    barrier = threading.Barrier(2, timeout=20)

    def loop(name: str, sender: bool) -> None:
        async def main():
            port = ch.port()
            await settle([port])
            await anyio.to_thread.run_sync(barrier.wait)
            if sender:
                await ch.send({"from": name})
            results[name].append(await next_message(port))

        run_here(main)

    threads = [
        threading.Thread(target=loop, args=("a", True)),
        threading.Thread(target=loop, args=("b", False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results["a"] == results["b"] and results["a"][0]["from"] == "a"
