"""The exceptions of :mod:`pyweb.cache` (one module so every backend can raise them)."""

from __future__ import annotations

__all__ = ["CacheError", "CacheTypeError", "CacheMismatchError"]


class CacheError(Exception):
    """Base of the errors of :mod:`pyweb.cache`."""


class CacheTypeError(CacheError, TypeError):
    """A key or value that is not of the cache's type; names the cache and the type."""


class CacheMismatchError(CacheError, ValueError):
    """A cache name asked for with other types or another kind than it has (in this
    process, or, with Redis, in another process sharing the server)."""
