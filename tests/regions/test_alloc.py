"""Allocation accounting (Hop §3.1's BglMem): the C allocator hook counts the bytes and
calls each thread allocates, cumulative, without counting pymalloc's fall-through to the
raw allocator twice, and survives tracemalloc being started and stopped after it. The
fallback says "not available" instead of giving a number."""

from __future__ import annotations

import threading
import tracemalloc

import pytest

from .conftest import load


@pytest.fixture
def c():
    regions = load("c")
    assert regions.alloc_install()
    regions.alloc_enable(True)
    yield regions
    regions.alloc_enable(False)


def measure(regions, fn):
    b0, c0 = regions.alloc_counts()
    fn()
    b1, c1 = regions.alloc_counts()
    return b1 - b0, c1 - c0


def test_counts_what_is_allocated_once(c):
    size = 200_000
    n = bytes  # a bytes object of `size` bytes: one allocation of about size + 33
    nbytes, calls = measure(c, lambda: n(size))
    # > 512 bytes: pymalloc passes it on to the raw allocator, which must not count it again
    assert size <= nbytes < size + 1000, nbytes
    assert 1 <= calls <= 8  # the object, and the small change of calling a lambda


def test_small_objects_and_cumulative_not_net(c):
    def churn() -> None:
        for _ in range(1000):
            x = [object()]  # freed at once: net zero, cumulative not
            del x

    nbytes, calls = measure(c, churn)
    assert calls >= 1000 and nbytes >= 1000 * 16


def test_counting_off_counts_nothing(c):
    c.alloc_enable(False)
    nbytes, calls = measure(c, lambda: bytearray(100_000))
    assert (nbytes, calls) == (0, 0)
    c.alloc_enable(True)


def test_per_thread(c):
    results = {}

    def work(name: str, n: int) -> None:
        c.alloc_reset_counts()
        for _ in range(n):
            bytearray(10_000)
        results[name] = c.alloc_counts()[0]

    here_before = c.alloc_counts()[0]
    threads = [threading.Thread(target=work, args=(k, n)) for k, n in [("one", 10), ("three", 30)]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 100_000 <= results["one"] < 200_000
    assert 300_000 <= results["three"] < 400_000
    assert c.alloc_counts()[0] - here_before < 100_000  # not this thread's bytes


def test_survives_tracemalloc_started_and_stopped_later(c):
    tracemalloc.start()
    try:
        assert c.alloc_installed()
        nbytes, _ = measure(c, lambda: bytes(50_000))
        assert nbytes >= 50_000
    finally:
        tracemalloc.stop()
    assert c.alloc_installed()
    nbytes, _ = measure(c, lambda: bytes(50_000))
    assert 50_000 <= nbytes < 51_000


def test_the_fallback_says_not_available():
    fallback = load("python")
    assert fallback.alloc_install() is False
    assert fallback.alloc_installed() is False
    with pytest.raises(RuntimeError, match="not available"):
        fallback.alloc_counts()
    with pytest.raises(RuntimeError, match="not available"):
        fallback.alloc_enable(True)
