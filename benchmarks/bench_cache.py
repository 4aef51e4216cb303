"""Micro-benchmark: the cost of a typed cache (SMLserver §3), measured in the same run as a
plain dict and a bare ``cachetools.TTLCache``.

Groups: ``hit`` (lookup of a present key), ``miss`` (lookup of an absent key) and
``memoize`` (a memoized function called with a cached argument). Contestants: ``dict``,
``ttlcache`` (cachetools, no types, no encoding), ``pyweb-memory`` (a ``TimeOut`` cache:
type check + encoding + cachetools + lock), ``pyweb-redis`` blocking and ``pyweb-redis-trio-x200``
(the async form under trio: pyweb's own RESP client, syscall first), and for reference the
``redis`` package's blocking client doing one ``GET``. Redis entries are skipped when the
server is not running. Run with

    .venv/bin/python -m pytest benchmarks/bench_cache.py --benchmark-only \\
        --benchmark-columns=min,median,ops -p no:timeout -p no:cacheprovider
"""

from __future__ import annotations

import socket
import uuid

import cachetools
import pytest
import trio

from pyweb import cache
from pyweb.cache import Option, Real, String, TimeOut

REDIS = "redis://127.0.0.1:6379/0"
KEY = "http://127.0.0.1:8000/rate"


def _redis_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.5).close()
    except OSError:
        return False
    return True


def _pyweb_cache(backend: str) -> cache.Cache:
    if backend == "memory":
        cache.configure("memory")
    else:
        if not _redis_up():
            pytest.skip("Redis is not running")
        cache.configure(REDIS, prefix=f"pyweb-bench:{uuid.uuid4().hex[:8]}:")
    c = cache.get(String, Option(Real), f"bench-{uuid.uuid4().hex[:8]}", TimeOut(300))
    c.insert(KEY, 6.42)
    return c


@pytest.fixture(scope="module", autouse=True)
def _remove_bench_keys():
    yield
    if _redis_up():
        import redis

        client = redis.Redis(host="127.0.0.1", port=6379)
        keys = list(client.scan_iter(match="pyweb-bench:*"))
        if keys:
            client.unlink(*keys)


CONTESTANTS = [
    "dict",
    "ttlcache",
    "pyweb-memory",
    "pyweb-redis",
    "pyweb-redis-trio-x200",
    "redis-py",
]


def _lookup_fn(who: str, key: str):
    """A zero-argument function doing one lookup of ``key`` (present: KEY, absent: other)."""
    if who == "dict":
        d = {KEY: 6.42}
        return lambda: d.get(key)
    if who == "ttlcache":
        t = cachetools.TTLCache(maxsize=1024, ttl=300)
        t[KEY] = 6.42
        return lambda: t.get(key)
    if who == "pyweb-memory":
        c = _pyweb_cache("memory")
        return lambda: c.lookup(key)
    if who == "pyweb-redis":
        c = _pyweb_cache("redis")
        return lambda: c.lookup(key)
    if who == "pyweb-redis-trio-x200":
        c = _pyweb_cache("redis")
        return ("trio", lambda: c.alookup(key))
    if who == "redis-py":
        if not _redis_up():
            pytest.skip("Redis is not running")
        import redis

        r = redis.Redis(host="127.0.0.1", port=6379)
        r.set("pyweb-bench:" + KEY, b"6.42")
        return lambda: r.get("pyweb-bench:" + key)
    raise AssertionError(who)


def _run(benchmark, fn):
    if isinstance(fn, tuple):  # an async lookup: time 200 of them inside one trio.run
        make = fn[1]

        async def many():
            for _ in range(200):
                await make()

        benchmark.extra_info["calls_per_round"] = 200
        benchmark(trio.run, many)
    else:
        benchmark(fn)


@pytest.mark.parametrize("who", CONTESTANTS)
def test_hit(benchmark, who):
    benchmark.group = "hit"
    _run(benchmark, _lookup_fn(who, KEY))
    cache.configure("memory")


@pytest.mark.parametrize("who", CONTESTANTS)
def test_miss(benchmark, who):
    benchmark.group = "miss"
    _run(benchmark, _lookup_fn(who, "http://elsewhere/"))
    cache.configure("memory")


def _rate(url: str) -> float | None:
    return 6.42


@pytest.mark.parametrize("who", ["plain", "functools.cache", "pyweb-memory", "pyweb-redis"])
def test_memoize(benchmark, who):
    """A warm memoized call against calling the function itself and functools.cache."""
    benchmark.group = "memoize"
    if who == "plain":
        f = _rate
    elif who == "functools.cache":
        import functools

        f = functools.cache(_rate)
    else:
        f = cache.memoize(_pyweb_cache(who.removeprefix("pyweb-")), _rate)
    f(KEY)
    benchmark(f, KEY)
    cache.configure("memory")
