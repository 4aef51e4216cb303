"""Expiry of every kind on both backends, on a fake clock; the registry; type errors."""

from __future__ import annotations

import asyncio
import time

import pytest
import trio

from pyweb import cache
from pyweb.cache import Int, List, Option, Real, Size, String, TimeOut, WhileUsed

from .conftest import configure


def test_timeout_expires_after_insertion_however_often_read(clock, name):
    c = cache.get(String, Real, name, TimeOut(300))
    c.insert("usd", 6.5)
    for _ in range(3):
        clock.advance(99.999)
        assert c.lookup("usd") == 6.5  # reads do not extend a TimeOut entry
    clock.advance(0.003)  # 300.000 s after insertion: gone
    assert c.lookup("usd") is None


def test_timeout_insert_restarts_the_time(clock, name):
    c = cache.get(Int, Int, name, TimeOut(60))
    c.insert(1, 10)
    clock.advance(50)
    c.insert(1, 11)
    clock.advance(50)
    assert c.lookup(1) == 11
    clock.advance(10)
    assert c.lookup(1) is None


def test_whileused_lives_while_read(clock, name):
    c = cache.get(String, String, name, WhileUsed(60))
    c.insert("ada", "secret")
    for _ in range(5):
        clock.advance(59.999)
        assert c.lookup("ada") == "secret"  # each hit restarts the 60 s
    clock.advance(60)
    assert c.lookup("ada") is None


def test_whileused_exact_boundary(clock, name):
    c = cache.get(Int, Int, name, WhileUsed(30))
    c.insert(1, 1)
    clock.advance(29.999)
    assert c.lookup(1) == 1
    clock.advance(30)
    assert c.lookup(1) is None


def test_size_pushes_out_the_oldest_inserted(clock, name):
    # each entry: key "1" (1 byte) + value "7:abcdefg" (9 bytes) = 10 bytes
    c = cache.get(Int, List(String), name, Size(30))
    for k in (1, 2, 3):
        assert c.insert(k, ["abcdefg"])
    assert c.lookup(1) == ["abcdefg"]  # reading does not make 1 younger (FIFO, not LRU)
    assert c.insert(4, ["abcdefg"])
    assert [c.lookup(k) for k in (1, 2, 3, 4)] == [None, ["abcdefg"]] + [["abcdefg"]] * 2
    clock.advance(10**6)  # time plays no part in a Size cache
    assert c.lookup(4) == ["abcdefg"]


def test_size_reinsert_makes_an_entry_newest_and_big_entries_evict_several(clock, name):
    c = cache.get(Int, String, name, Size(30))
    for k in (1, 2, 3):
        c.insert(k, "x" * 8)  # 9 bytes each
    c.insert(1, "y" * 8)  # 1 is now the newest
    c.insert(4, "z" * 17)  # 18 bytes: 2 and 3 must go
    assert [c.lookup(k) for k in (1, 2, 3, 4)] == ["y" * 8, None, None, "z" * 17]


def test_size_entry_larger_than_the_cache_is_not_stored(clock, name):
    c = cache.get(Int, String, name, Size(10))
    assert c.insert(1, "small")
    assert c.insert(1, "x" * 20) is False
    assert c.lookup(1) is None  # the old value is gone too: it was replaced
    assert c.insert(2, "ok")


def test_delete_and_flush(clock, name):
    for kind in (Size(1000), TimeOut(100), WhileUsed(100)):
        c = cache.get(Int, Int, f"{name}-{type(kind).__name__}", kind)
        c.insert(1, 1)
        c.insert(2, 2)
        assert c.delete(1) is True
        assert c.delete(1) is False
        assert c.lookup(1) is None and c.lookup(2) == 2
        c.flush()
        assert c.lookup(2) is None
        c.insert(3, 3)
        assert c.lookup(3) == 3


def test_delete_of_an_expired_entry_says_false(clock, name):
    c = cache.get(Int, Int, name, TimeOut(10))
    c.insert(1, 1)
    clock.advance(10)
    assert c.delete(1) is False


def test_option_cache_tells_a_cached_none_from_a_miss(clock, name):
    c = cache.get(String, Option(Real), name, TimeOut(300))
    assert c.lookup("x", cache.MISSING) is cache.MISSING
    c.insert("x", None)
    assert c.lookup("x", cache.MISSING) is None


def test_paper_style_functions(clock, name):
    c = cache.get(Int, Int, name, TimeOut(10))
    assert cache.insert(c, 1, 2)
    assert cache.lookup(c, 1) == 2
    assert cache.delete(c, 1)
    cache.flush(c)


@pytest.mark.parametrize("loop", ["trio", "asyncio"])
def test_async_forms(clock, name, loop):
    c = cache.get(Int, Int, name, WhileUsed(10))

    async def main():
        assert await c.ainsert(1, 2)
        clock.advance(9)
        assert await c.alookup(1) == 2
        clock.advance(9)
        assert await c.alookup(1) == 2
        assert await c.adelete(1)
        await c.ainsert(1, 2)
        await c.aflush()
        assert await c.alookup(1) is None

    trio.run(main) if loop == "trio" else asyncio.run(main())


@pytest.mark.parametrize("kind", [TimeOut(0.3), WhileUsed(0.3)])
def test_real_time_smoke(backend_url, name, kind):
    """No fake clock: entries really expire (the only test that sleeps)."""
    configure(backend_url)
    c = cache.get(Int, Int, name, kind)
    c.insert(1, 1)
    assert c.lookup(1) == 1
    time.sleep(0.45)
    assert c.lookup(1) is None


# -- the registry and errors ------------------------------------------------------------


def test_get_returns_the_same_cache(name):
    a = cache.get(Int, List(Real), name, Size(100))
    assert cache.get(Int, List(Real), name, Size(100)) is a


@pytest.mark.parametrize(
    "dom, rng, kind",
    [
        (String, List(Real), Size(100)),
        (Int, List(Int), Size(100)),
        (Int, List(Real), Size(99)),
        (Int, List(Real), TimeOut(100)),
    ],
)
def test_get_with_other_types_or_kind_names_the_cache(name, dom, rng, kind):
    cache.get(Int, List(Real), name, Size(100))
    with pytest.raises(cache.CacheMismatchError) as info:
        cache.get(dom, rng, name, kind)
    message = str(info.value)
    assert name in message and "Int -> List(Real), Size(100)" in message


def test_wrong_value_type_names_cache_and_type(clock, name):
    c = cache.get(String, Option(Real), name, TimeOut(300))
    with pytest.raises(cache.CacheTypeError) as info:
        c.insert("usd", 7)
    assert (
        name in str(info.value)
        and "Option(Real)" in str(info.value)
        and "7 (int)" in str(info.value)
    )
    with pytest.raises(cache.CacheTypeError, match="key must be of type String"):
        c.lookup(3)
    with pytest.raises(TypeError):  # CacheTypeError is a TypeError
        c.insert(b"usd", 1.0)


@pytest.mark.parametrize(
    "args, match",
    [
        ((int, Int, "x", Size(1)), "cache types"),
        ((Int, Int, "", Size(1)), "non-empty"),
        ((Int, Int, "x", 10), "Size"),
    ],
)
def test_get_checks_its_arguments(args, match):
    with pytest.raises((TypeError, ValueError), match=match):
        cache.get(*args)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Size(0),
        lambda: Size(1.5),
        lambda: TimeOut(-1),
        lambda: WhileUsed(float("nan")),
        lambda: TimeOut(True),
    ],
)
def test_kinds_check_their_numbers(make):
    with pytest.raises(ValueError):
        make()


def test_configure_refuses_unknown_backends():
    with pytest.raises(ValueError, match="redis://host"):
        cache.configure("memcached://x")
    with pytest.raises(ValueError, match="database"):
        cache.configure("redis://127.0.0.1:6379/abc")


def test_a_tiny_duration_is_one_millisecond(clock, name, backend_url):
    c = cache.get(Int, Int, name, TimeOut(0.0001))
    assert TimeOut(0.0001).milliseconds == 1
    c.insert(1, 1)
    if backend_url == "memory":
        # Redis also expires the key itself, in real time: on a loaded machine the
        # millisecond may be over before the lookup, so only the fake clock's backend can
        # promise the entry is still there.
        assert c.lookup(1) == 1
    clock.advance(0.001)
    assert c.lookup(1) is None
