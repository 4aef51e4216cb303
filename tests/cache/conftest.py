"""Fixtures for the cache tests: each test runs on both backends with a fake clock."""

from __future__ import annotations

import os
import socket
import uuid

import pytest

from pyweb import cache

REDIS_URL = "redis://127.0.0.1:6379/0"


def redis_up() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 6379), timeout=0.5).close()
    except OSError:
        return False
    return True


def need_redis() -> None:
    """Skip when Redis is unreachable, unless CI=true (then the test must fail)."""
    if not redis_up() and os.environ.get("CI") != "true":
        pytest.skip("Redis is not running on 127.0.0.1:6379")


# Every key of this run starts with RUN_PREFIX, so the clean-up below removes this run's keys
# only: suites running at the same time (several checkouts on one machine) keep theirs.
RUN_PREFIX = f"pyweb-test:{uuid.uuid4().hex[:8]}:"


def unique_prefix() -> str:
    return f"{RUN_PREFIX}{uuid.uuid4().hex[:12]}:"


def configure(url: str, clock=None) -> None:
    if url == "memory":
        cache.configure("memory", clock=clock)
    else:
        need_redis()
        cache.configure(url, clock=clock, prefix=unique_prefix())


@pytest.fixture(scope="session", autouse=True)
def _remove_test_keys_from_redis():
    """Every Redis key this run's cache tests made starts with RUN_PREFIX; remove them at the end."""
    yield
    if redis_up():
        import redis

        client = redis.Redis(host="127.0.0.1", port=6379)
        batch = []
        for key in client.scan_iter(match=RUN_PREFIX + "*", count=1000):
            batch.append(key)
            if len(batch) == 500:
                client.unlink(*batch)
                batch.clear()
        if batch:
            client.unlink(*batch)


@pytest.fixture(params=["memory", "redis"])
def backend_url(request):
    url = "memory" if request.param == "memory" else REDIS_URL
    yield url
    cache.configure("memory")


@pytest.fixture
def clock(backend_url):
    fake = cache.FakeClock()
    configure(backend_url, fake)
    return fake


@pytest.fixture
def name():
    """A cache name no other test uses (the registry is per process)."""
    return f"t-{uuid.uuid4().hex[:10]}"
