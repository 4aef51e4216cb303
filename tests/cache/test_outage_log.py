"""A Redis outage (a proxy of our own, cut; never the shared server) is logged once when it
starts and once when it ends, with the number of cache operations it turned into misses
(on both loops: the server runs on the test's loop)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pyweb import cache
from pyweb.testing import serve

from ..db.proxy import Proxy
from ..helpers import until
from .conftest import need_redis, unique_prefix

pytestmark = pytest.mark.loops("trio", "asyncio")


def test_a_redis_outage_is_logged_once_at_each_end(tmp_path: Path) -> None:
    need_redis()
    proxy = Proxy(("127.0.0.1", 6379))
    proxy.start()
    cache.configure(f"redis://127.0.0.1:{proxy.port}/0?prefix={unique_prefix()}", retry_after=0.05)
    site = tmp_path / "site"
    site.mkdir()
    (site / "hit.py").write_text(
        "from pyweb.cache import Int, Size, get\n"
        "c = get(Int, Int, 'hits', Size(1000))\n"
        "n = (await c.alookup(1) or 0) + 1\n"
        "await c.ainsert(1, n)\n"
        "conn.return_(str(n))\n"
    )
    log = io.StringIO()
    try:
        with serve(site, error_log=log) as client:
            assert client.get("/hit").text == "1"
            proxy.stop()
            for _ in range(40):
                assert client.get("/hit").text == "1"  # misses: the page still answers
            proxy.start()  # past retry_after, an operation tries Redis again and says so
            until(lambda: client.get("/hit").status == 200 and "is back after" in log.getvalue(),
                  "Redis back")  # fmt: skip
    finally:
        cache.configure("memory")
        proxy.stop()
    text = log.getvalue()
    assert text.count("is unreachable") == 1, text
    assert text.count("is back after") == 1, text
    assert "cache operations (answered as misses) failed during the outage" in text
    assert len(text) < 2000
