"""Typed caches: ``get``, ``Cache`` (insert, lookup, delete, flush) and ``memoize``
(SMLserver §3, Fig. 3), with dogpile protection, over a backend (memory or Redis).

A :class:`Cache` is the typed front: it checks every key and value against the cache's types
(the check SMLserver's compiler did), encodes them, and hands bytes to the backend. It also
keeps the *in-flight* table that makes :func:`memoize` compute a missing key once when many
callers miss it at the same time (a slow foreign site is asked once, not once per request);
the paper's ``memoize`` lacks this. Callers of a failing computation all see its exception;
nothing is cached for it.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pyweb import runtime
from pyweb.extras import require

from .errors import CacheError, CacheMismatchError, CacheTypeError
from .kinds import Size, TimeOut, WhileUsed
from .memory import MemoryBackend
from .types import DecodeError, Type, describe

__all__ = [
    "Cache",
    "CacheError",
    "CacheTypeError",
    "CacheMismatchError",
    "MISSING",
    "get",
    "memoize",
    "configure",
    "backend",
    "backend_if_made",
    "caches",
    "FakeClock",
]

log = logging.getLogger("pyweb.cache")

K = TypeVar("K")
V = TypeVar("V")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""What :meth:`Cache.lookup` returns for an absent key when asked to (``default=MISSING``):
needed for ``Option`` caches, where ``None`` can be a cached value."""


class FakeClock:
    """A clock for tests and tutorials: time moves only when you say so.

    ``pyweb.cache.configure("memory", clock=clock)`` then ``clock.advance(301)`` makes every
    ``TimeOut(300)`` entry expire at once, without waiting five minutes.
    """

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.now = float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        """Move the clock forward; returns the new time."""
        if seconds < 0:
            raise ValueError(f"a clock only moves forward, got advance({seconds!r})")
        with self._lock:
            self.now += seconds
            return self.now

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now:g})"


@dataclass(eq=False)
class _Flight:
    """One computation of a missing key, and what its waiters need to know."""

    event: Any
    done: bool = False
    value: Any = None
    error: BaseException | None = None


@dataclass(eq=False)
class Cache(Generic[K, V]):
    """A named cache from keys of type ``dom`` to values of type ``rng``; get one with
    :func:`get`. Its methods have blocking forms (``lookup``) and async forms
    (``await alookup``); with the memory backend both are instant."""

    dom: Type
    rng: Type
    name: str
    kind: Size | TimeOut | WhileUsed
    _backend: Any = field(repr=False)
    signature: str = field(init=False)
    _flights: dict[Any, _Flight] = field(init=False, repr=False, default_factory=dict)
    _sync_lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)
    hits: int = field(init=False, repr=False, default=0)
    """Lookups (and memoized calls) that found their key: ``/_pyweb/metrics`` shows them."""
    misses: int = field(init=False, repr=False, default=0)
    """Lookups (and memoized calls) that did not."""

    def __post_init__(self) -> None:
        self.signature = f"{self.dom.name} -> {self.rng.name}, {self.kind}"

    def __str__(self) -> str:
        return f"cache {self.name!r} ({self.signature})"

    # -- typing ---------------------------------------------------------------------------

    def _key(self, key: Any) -> bytes:
        if not self.dom.check(key):
            raise CacheTypeError(
                f"{self}: the key must be of type {self.dom.name}, got {describe(key)}"
            )
        return self.dom.encode(key)

    def _value(self, value: Any) -> bytes:
        if not self.rng.check(value):
            raise CacheTypeError(
                f"{self}: the value must be of type {self.rng.name}, got {describe(value)}"
            )
        return self.rng.encode(value)

    def _counted(self, value: Any) -> Any:
        """``value``, a lookup's result, counted as a hit or a miss (an int each: cheap)."""
        if value is MISSING:
            self.misses += 1
        else:
            self.hits += 1
        return value

    def _decode(self, data: bytes | None) -> Any:
        if data is None:
            return MISSING
        try:
            return self.rng.decode(data)
        except DecodeError as error:  # someone wrote this key by hand: treat as a miss
            log.warning("%s: unreadable entry ignored: %s", self, error)
            return MISSING

    # -- the interface (blocking) ---------------------------------------------------------

    def insert(self, key: K, value: V) -> bool:
        """Store ``value`` under ``key``; ``False`` if it was not stored (larger than a
        ``Size`` cache, or the shared backend is unreachable)."""
        return self._backend.insert(self, self._key(key), self._value(value))

    def lookup(self, key: K, default: Any = None) -> V | Any:
        """The value under ``key``, or ``default`` when there is none."""
        value = self._counted(self._decode(self._backend.lookup(self, self._key(key))))
        return default if value is MISSING else value

    def delete(self, key: K) -> bool:
        """Remove ``key``; whether it was there."""
        return self._backend.delete(self, self._key(key))

    def flush(self) -> None:
        """Remove every entry of this cache."""
        self._backend.flush(self)

    def limit_entries(self, entries: int) -> bool:
        """Hold at most ``entries`` entries, dropping the least recently used beyond that,
        where the backend keeps entries in this process (memory); False where it does not."""
        limit = getattr(self._backend, "limit", None)
        if limit is None:
            return False
        limit(self, entries)
        return True

    # -- the interface (async) ------------------------------------------------------------

    async def ainsert(self, key: K, value: V) -> bool:
        return await self._backend.ainsert(self, self._key(key), self._value(value))

    async def alookup(self, key: K, default: Any = None) -> V | Any:
        value = self._counted(self._decode(await self._backend.alookup(self, self._key(key))))
        return default if value is MISSING else value

    async def adelete(self, key: K) -> bool:
        return await self._backend.adelete(self, self._key(key))

    async def aflush(self) -> None:
        await self._backend.aflush(self)

    def memoize(self, f: Callable[..., Any]) -> Callable[..., Any]:
        """Same as :func:`memoize` ``(self, f)``."""
        return memoize(self, f)

    # -- computing a missing key once -------------------------------------------------------

    def _checked(self, f: Callable[..., Any], value: Any) -> bytes:
        if not self.rng.check(value):
            raise CacheTypeError(
                f"{self}: {getattr(f, '__qualname__', f)} returned {describe(value)}, "
                f"not of type {self.rng.name}"
            )
        return self.rng.encode(value)

    def _compute(self, f: Callable[[K], V], key: K, kb: bytes) -> V:
        while True:
            with self._sync_lock:
                flight = self._flights.get(("sync", kb))
                leader = flight is None
                if leader:
                    flight = self._flights[("sync", kb)] = _Flight(threading.Event())
            assert flight is not None
            if not leader:
                flight.event.wait()
                if flight.done:
                    return flight.value
                if isinstance(flight.error, Exception):
                    raise flight.error
                continue  # the leader was interrupted: try again, maybe as the leader
            try:
                # a leader that finished just before we registered has inserted it
                again = self._decode(self._backend.lookup(self, kb))
                if again is not MISSING:
                    value = again
                else:
                    value = f(key)
                    self._backend.insert(self, kb, self._checked(f, value))
                flight.value, flight.done = value, True
                return value
            except BaseException as error:
                flight.error = error
                raise
            finally:
                with self._sync_lock:
                    self._flights.pop(("sync", kb), None)  # configure() may have cleared it
                flight.event.set()

    async def _acompute(self, f: Callable[[K], Awaitable[V]], key: K, kb: bytes) -> V:
        slot = (runtime.loop_id(), kb)
        while True:
            flight = self._flights.get(slot)
            if flight is not None:
                await flight.event.wait()
                if flight.done:
                    return flight.value
                if isinstance(flight.error, Exception):
                    raise flight.error
                continue
            flight = self._flights[slot] = _Flight(runtime.current().Event())
            try:
                again = self._decode(await self._backend.alookup(self, kb))
                if again is not MISSING:
                    value = again
                else:
                    value = await f(key)
                    await self._backend.ainsert(self, kb, self._checked(f, value))
                flight.value, flight.done = value, True
                return value
            except BaseException as error:
                flight.error = error
                raise
            finally:
                self._flights.pop(slot, None)
                flight.event.set()


def memoize(cache: Cache[K, V], f: Callable[[K], Any]) -> Callable[[K], Any]:
    """``f`` with its results kept in ``cache`` (the paper's ``memoize c f``).

    ``f`` takes one argument, a key of the cache's domain type, and returns a value of its
    range type. An ``async def`` function gives an ``async`` memoized function. Callers that
    miss the same key at the same time share one call of ``f``; if it raises, they all get
    its exception and nothing is cached.
    """
    if not isinstance(cache, Cache):
        raise TypeError(f"memoize takes a cache from pyweb.cache.get, got {describe(cache)}")
    if inspect.iscoroutinefunction(f):

        @functools.wraps(f)
        async def amemoized(key: K) -> V:
            kb = cache._key(key)
            value = cache._counted(cache._decode(await cache._backend.alookup(cache, kb)))
            if value is not MISSING:
                return value
            return await cache._acompute(f, key, kb)

        amemoized.cache = cache  # type: ignore[attr-defined]
        return amemoized

    @functools.wraps(f)
    def memoized(key: K) -> V:
        kb = cache._key(key)
        value = cache._counted(cache._decode(cache._backend.lookup(cache, kb)))
        if value is not MISSING:
            return value
        return cache._compute(f, key, kb)

    memoized.cache = cache  # type: ignore[attr-defined]
    return memoized


# -- the registry and the configuration -----------------------------------------------------

_registry: dict[str, Cache[Any, Any]] = {}
_registry_lock = threading.Lock()
_backend: Any = None


def _make_backend(url: str, clock: Callable[[], float] | None, **options: Any) -> Any:
    if url == "memory":
        if options:
            raise TypeError(f"the memory backend takes no options, got {sorted(options)}")
        return MemoryBackend(clock)
    if url.startswith("redis://"):
        require("redis", "redis", "a redis:// cache")
        from .redis_backend import RedisBackend

        return RedisBackend(url, clock=clock, **options)
    raise ValueError(f"a cache backend is 'memory' or 'redis://host:port/db', got {url!r}")


def configure(
    backend: str = "memory", *, clock: Callable[[], float] | None = None, **options: Any
) -> None:
    """Choose where every cache of this process keeps its entries.

    ``backend`` is ``"memory"`` (the default: in this process, on cachetools) or a Redis URL
    ``"redis://127.0.0.1:6379/0"`` (shared by every process using it). ``clock`` (seconds, a
    float) replaces the real clock, for tests: :class:`FakeClock`. Redis ``options``:
    ``prefix`` (of every key, ``"pyweb:cache:"``), ``timeout`` (seconds per operation, 0.5),
    ``retry_after`` (seconds without trying after a failure, 1.0), ``max_idle`` (connections
    kept open for reuse, 64).

    Caches already obtained with :func:`get` move to the new backend (starting empty if it is
    a new memory backend). Without a call, the ``PYWEB_CACHE`` environment variable chooses,
    else memory; ``pyweb serve --cache URL`` sets both.
    """
    global _backend
    new = _make_backend(backend, clock, **options)
    with _registry_lock:
        old, _backend = _backend, new
        for cache in _registry.values():
            cache._backend = new
            cache._flights.clear()
    if old is not None:
        old.close()


def backend() -> Any:
    """The backend caches use now (configured, or from ``PYWEB_CACHE``, or memory)."""
    global _backend
    if _backend is None:
        with _registry_lock:
            if _backend is None:
                _backend = _make_backend(os.environ.get("PYWEB_CACHE") or "memory", None)
    return _backend


def backend_if_made() -> Any:
    """The backend caches use now, or None when none was made yet: unlike :func:`backend`,
    asking does not make one (a metrics scrape must not connect to Redis)."""
    return _backend


def caches() -> list[Cache[Any, Any]]:
    """Every cache made so far with :func:`get` (for ``/_pyweb/metrics``)."""
    with _registry_lock:
        return list(_registry.values())


_KINDS = (Size, TimeOut, WhileUsed)


def get(dom: Type, rng: Type, name: str, kind: Size | TimeOut | WhileUsed) -> Cache[Any, Any]:
    """The cache called ``name`` from ``dom`` keys to ``rng`` values, of ``kind``.

    The first call creates it; later calls with the same name, types and kind return the
    same cache (from any page, any request). The same name with other types or another kind
    is a :class:`CacheMismatchError` naming both signatures.
    """
    if not isinstance(dom, Type) or not isinstance(rng, Type):
        bad = dom if not isinstance(dom, Type) else rng
        raise TypeError(f"get takes cache types (Int, String, Pair(...), ...), got {bad!r}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a cache name is a non-empty string, got {name!r}")
    if not isinstance(kind, _KINDS):
        raise TypeError(f"a cache kind is Size(n), TimeOut(s) or WhileUsed(s), got {kind!r}")
    store = backend()
    with _registry_lock:
        cache = _registry.get(name)
        if cache is None:
            cache = _registry[name] = Cache(dom, rng, name, kind, store)
            return cache
    wanted = f"{dom.name} -> {rng.name}, {kind}"
    if cache.signature != wanted:
        raise CacheMismatchError(
            f"cache {name!r} exists as {cache.signature}; it cannot also be {wanted}"
        )
    return cache
