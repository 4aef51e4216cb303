"""The site's numbers on ``/_pyweb/metrics`` (pyweb.sitemetrics): cache hits and misses,
database pools. Real SQLite and the memory cache; the pages on Redis and the scrape over
sockets are in tests/server/test_metrics.py."""

from __future__ import annotations

import trio

from pyweb import cache, db, sitemetrics


def test_cache_lookups_are_counted_by_cache_and_result():
    cache.configure("memory")
    c = cache.get(cache.String, cache.Int, "sitemetrics-test", cache.Size(10))
    c.insert("a", 1)
    assert c.lookup("a") == 1 and c.lookup("b") is None
    twice = c.memoize(lambda key: len(key))
    twice("abc")
    twice("abc")
    rows = {s[3]["result"]: s[4] for s in sitemetrics.cache_samples()
            if s[3].get("cache") == "sitemetrics-test"}  # fmt: skip
    assert rows == {"hit": 2, "miss": 2}  # lookup a, memoized abc again; lookup b, abc first


def test_database_pools_show_their_handles(tmp_path):
    database = db.configure(f"sqlite:///{tmp_path / 'm.sqlite3'}", pools=2, handles=3)
    assert database is not None
    seen: list = []

    async def use_it() -> None:
        assert await db.one_field("select 41 + 1") == 42
        seen.extend(sitemetrics.db_samples())  # while the loop's pools exist

    try:
        trio.run(use_it)
    finally:
        db.configure(None)
    sizes = {s[3]["pool"]: s[4] for s in seen if s[0] == "pyweb_db_pool_size"}
    assert sizes == {"0": 3, "1": 3}
    idle = {s[3]["pool"]: s[4] for s in seen
            if s[0] == "pyweb_db_pool_handles" and s[3]["state"] == "idle"}  # fmt: skip
    assert idle["0"] == 1  # the handle the query used, back in its pool
