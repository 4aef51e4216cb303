"""The in-process backend of :mod:`pyweb.cache`, built on ``cachetools`` (the default).

One ``cachetools`` cache per named cache, holding encoded keys and values (the bytes the
Redis backend would store, so ``Size`` counts the same on both):

* ``Size(n)``: a ``FIFOCache`` whose item size is ``len(key) + len(value)``: cachetools pops
  the first inserted entries until the new one fits, the paper's "oldest entries expire
  first". A re-inserted key is removed first, so it becomes the newest entry.
* ``TimeOut(t)``: a ``TTLCache`` with ``ttl=t``; reading does not touch the deadline.
* ``WhileUsed(t)``: the same ``TTLCache``, and every hit writes the entry back, which
  restarts its ``t`` seconds.

A time-limited cache may also be given a bound on its number of entries (:meth:`MemoryBackend.limit`,
what the session store does with its ``session_memory_max`` setting): when it is full, the
expired entries go first, then the least recently used one (cachetools' ``TTLCache``). Memory
is then bounded whatever the clients do: without it, every new browser that gets a session
would cost memory until its idle time runs out.

The ``timer`` of each cachetools cache is the backend's clock (``time.monotonic``, or a
:class:`~pyweb.cache.FakeClock` in tests) in whole milliseconds, like Redis. cachetools is not thread-safe and a notebook runs
a server thread beside the kernel's, so each operation holds a lock (uncontended: ~0.1 µs).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any

import cachetools

from .kinds import Size, WhileUsed

__all__ = ["MemoryBackend"]


class MemoryBackend:
    """Entries in this process's memory; gone when the process exits."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.clock = clock or time.monotonic
        self._stores: dict[str, Any] = {}
        self._limits: dict[str, int] = {}  # cache name -> most entries (TimeOut, WhileUsed)
        self._lock = threading.Lock()

    def __str__(self) -> str:
        return "memory"

    def _now_ms(self) -> int:
        # whole milliseconds, as the Redis backend counts: both agree at every boundary
        return int(round(self.clock() * 1000))

    def _store(self, spec: Any) -> Any:
        store = self._stores.get(spec.name)
        if store is None:
            kind = spec.kind
            if isinstance(kind, Size):
                store = cachetools.FIFOCache(kind.bytes, getsizeof=lambda item: item[1])
            else:
                ttl = kind.milliseconds
                most = self._limits.get(spec.name, math.inf)
                store = cachetools.TTLCache(most, ttl, timer=self._now_ms)
            self._stores[spec.name] = store
        return store

    def limit(self, spec: Any, entries: int) -> None:
        """Hold at most ``entries`` entries in the time-limited cache ``spec``: beyond that
        the least recently used entry is dropped (after the expired ones)."""
        if not isinstance(entries, int) or isinstance(entries, bool) or entries < 1:
            raise ValueError(f"a cache's entry limit is a positive int, got {entries!r}")
        if isinstance(spec.kind, Size):
            raise TypeError(f"{spec} is bounded by its size already; limit() is for time kinds")
        with self._lock:
            self._limits[spec.name] = entries
            old = self._stores.pop(spec.name, None)
            store = self._store(spec)
            if old is not None:  # keep what is there, the newest last (LRU order)
                for key in list(old.keys())[-entries:]:
                    store[key] = old[key]

    def lookup(self, spec: Any, key: bytes) -> bytes | None:
        with self._lock:
            store = self._stores.get(spec.name) or self._store(spec)
            try:
                item = store[key]  # not .get(): that reads the clock twice
            except KeyError:
                return None
            if isinstance(spec.kind, WhileUsed):
                store[key] = item  # a hit restarts the entry's time
            return item[0]

    def insert(self, spec: Any, key: bytes, value: bytes) -> bool:
        size = len(key) + len(value)
        with self._lock:
            store = self._store(spec)
            store.pop(key, None)
            if isinstance(spec.kind, Size) and size > spec.kind.bytes:
                return False  # larger than the whole cache: never stored
            store[key] = (value, size)
            return True

    def delete(self, spec: Any, key: bytes) -> bool:
        with self._lock:
            try:
                del self._store(spec)[key]
            except KeyError:  # absent, or (TTLCache) present but expired
                return False
            return True

    def flush(self, spec: Any) -> None:
        with self._lock:
            self._store(spec).clear()

    # The async forms: no I/O, so nothing to wait for.
    async def alookup(self, spec: Any, key: bytes) -> bytes | None:
        return self.lookup(spec, key)

    async def ainsert(self, spec: Any, key: bytes, value: bytes) -> bool:
        return self.insert(spec, key, value)

    async def adelete(self, spec: Any, key: bytes) -> bool:
        return self.delete(spec, key)

    async def aflush(self, spec: Any) -> None:
        self.flush(spec)

    def close(self) -> None:
        self._stores.clear()
