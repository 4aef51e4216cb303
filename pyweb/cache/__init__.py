"""Typed caches (SMLserver §3, Fig. 3): state that outlives a request, safely typed.

A page is a script that starts from the same state on every request (SMLserver §2.1), so
what must last goes to a database or a cache. A cache is obtained by name, with the types of
its keys and values and its kind::

    from pyweb import cache
    from pyweb.cache import String, Option, Real, TimeOut

    c = cache.get(String, Option(Real), "currency", TimeOut(300))
    fetch = cache.memoize(c, fetch_rate)       # async def fetch_rate(url) -> float | None
    rate = await fetch("http://127.0.0.1:8000/rate")

* types: :data:`Int`, :data:`Real`, :data:`String`, :data:`Bool`, :data:`Bytes`,
  :func:`Pair`, :func:`Triple`, :func:`Option`, :func:`List` (:mod:`pyweb.cache.types`);
* kinds: :class:`Size` (bytes), :class:`TimeOut` (seconds after insertion),
  :class:`WhileUsed` (seconds after the last read) (:mod:`pyweb.cache.kinds`);
* :func:`get`, :func:`memoize`, and a :class:`Cache`'s ``insert``, ``lookup``, ``delete``,
  ``flush`` (each also as ``await c.ainsert(...)``, ...);
* :func:`configure`: ``"memory"`` (default, :mod:`pyweb.cache.memory`) or
  ``"redis://127.0.0.1:6379/0"`` (:mod:`pyweb.cache.redis_backend`), and a fake clock.

This package does not need the server: it works in a notebook or a plain script. Its async
forms run on trio and on asyncio (:mod:`pyweb.runtime`).
"""

from __future__ import annotations

from typing import Any

from .core import MISSING, Cache, FakeClock, backend, configure, get, memoize
from .errors import CacheError, CacheMismatchError, CacheTypeError
from .kinds import Kind, Size, TimeOut, WhileUsed
from .types import Bool, Bytes, Int, List, Option, Pair, Real, String, Triple, Type

__all__ = [
    # types
    "Type",
    "Int",
    "Real",
    "String",
    "Bool",
    "Bytes",
    "Pair",
    "Triple",
    "Option",
    "List",
    # kinds
    "Kind",
    "Size",
    "TimeOut",
    "WhileUsed",
    # the interface
    "Cache",
    "get",
    "memoize",
    "insert",
    "lookup",
    "delete",
    "flush",
    "MISSING",
    # configuration
    "configure",
    "backend",
    "FakeClock",
    # errors
    "CacheError",
    "CacheTypeError",
    "CacheMismatchError",
]


# The paper's functions over a cache, for code written in its style.
def insert(cache: Cache[Any, Any], key: Any, value: Any) -> bool:
    """``cache.insert(key, value)``."""
    return cache.insert(key, value)


def lookup(cache: Cache[Any, Any], key: Any, default: Any = None) -> Any:
    """``cache.lookup(key, default)``."""
    return cache.lookup(key, default)


def delete(cache: Cache[Any, Any], key: Any) -> bool:
    """``cache.delete(key)``."""
    return cache.delete(key)


def flush(cache: Cache[Any, Any]) -> None:
    """``cache.flush()``."""
    cache.flush()
