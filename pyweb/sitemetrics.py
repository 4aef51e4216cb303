"""The site's own numbers on ``/_pyweb/metrics``: its caches and its database pools.

The server counts requests and connections (``pyweb/server/metrics.py``) but knows neither
the cache nor the database (DESIGN.md: ``server/`` does not import them). ``pyweb serve``
calls :func:`install`, which adds two sources to the page; each is read only when the page is
asked for, and reports what exists at that moment (a cache nobody made yet is not shown; a
database no page has used has no pools yet).
"""

from __future__ import annotations

from pyweb.server.metrics import METRICS_SOURCES, Sample

__all__ = ["install", "cache_samples", "db_samples"]


def cache_samples() -> list[Sample]:
    """Hits and misses per cache; whether the shared backend (Redis) answers."""
    from pyweb.cache import core

    samples: list[Sample] = []
    for cache in core.caches():
        for result, count in (("hit", cache.hits), ("miss", cache.misses)):
            samples.append(("pyweb_cache_lookups_total", "counter",
                            "Cache lookups and memoized calls, by cache and result.",
                            {"cache": cache.name, "result": result}, count))  # fmt: skip
    store = core.backend_if_made()
    down = getattr(store, "down", None)  # (only a shared backend can be down)
    if down is not None:
        samples.append(("pyweb_cache_backend_up", "gauge",
                        "Workers whose shared cache backend answers (1 each; 0 during an outage).",
                        {"backend": str(store)}, 0 if down else 1))  # fmt: skip
    return samples


def db_samples() -> list[Sample]:
    """Handles per pool of each database: the pool's size, lent out now, idle now."""
    from pyweb import db

    samples: list[Sample] = []
    for database in db.databases():
        name = str(database.url)  # (without its password)
        for row in database.pool_stats():
            labels = {"database": name, "pool": str(row["pool"])}
            for state in ("in_use", "idle"):
                samples.append(("pyweb_db_pool_handles", "gauge",
                                "Database handles per pool: lent out (in_use) or idle.",
                                {**labels, "state": state}, row[state]))  # fmt: skip
            samples.append(("pyweb_db_pool_size", "gauge", "Handles a pool may open.",
                            labels, row["size"]))  # fmt: skip
    return samples


def install() -> None:
    """Show the caches and the database pools on ``/_pyweb/metrics`` (``pyweb serve``)."""
    METRICS_SOURCES["cache"] = cache_samples
    METRICS_SOURCES["db"] = db_samples
