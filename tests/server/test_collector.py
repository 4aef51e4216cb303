"""The collector's young generation (pyweb/server/collector.py): sized when a server starts,
so that a page's objects are freed by their reference counts before a collection."""

from __future__ import annotations

import gc

import pytest

from pyweb.protocol import Response
from pyweb.server import Server, ServerConfig
from pyweb.server.collector import YOUNG, size_young_generation
from pyweb.testing import serve

# A page that keeps 4,000 nodes (1,000 rows of a TR and three TDs) until it answers: the
# log page's shape, smaller.
TABLE = """\
from pyweb.html import TABLE, TD, TR

rows = [TR(TD(i), TD(str(i)), TD(i * 2)) for i in range(1000)]
conn.return_(TABLE(rows))
"""


@pytest.fixture(autouse=True)
def thresholds():
    """The test process's own thresholds, given back after each test."""
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def collections_per_request(root, **settings) -> float:
    """Young-generation collections in this process per request for the table page (the
    server runs in a thread of this process)."""
    with serve(root, **settings) as client:
        assert client.get("/table").status == 200
        before = gc.get_stats()[0]["collections"]
        for _ in range(20):
            assert client.get("/table").status == 200
        return (gc.get_stats()[0]["collections"] - before) / 20


@pytest.mark.loops("trio", "asyncio")
def test_a_pages_nodes_are_freed_before_the_collector_visits_them(tmp_path):
    (tmp_path / "table.py").write_text(TABLE)
    # 4,000 nodes a page and 10,000 allocations between collections: most pages see none
    assert collections_per_request(tmp_path) < 1
    # Python's own threshold, 700: the collector visits the page's nodes several times
    assert collections_per_request(tmp_path, gc_young=700) > 4


def handler(ctx) -> Response:
    return Response(200, [], b"")


def test_a_server_sets_the_threshold_keeps_the_older_ones_and_follows_a_reload():
    gc.set_threshold(700, 7, 9)
    server = Server(ServerConfig(), handler)
    assert gc.get_threshold() == (YOUNG, 7, 9)
    server.reconfigure(ServerConfig(gc_young=5000), handler)  # SIGHUP with a new pyweb.toml
    assert gc.get_threshold() == (5000, 7, 9)


def test_a_threshold_below_one_is_refused_by_name():
    with pytest.raises(ValueError, match="gc_young"):
        ServerConfig(gc_young=0)
    with pytest.raises(ValueError, match="gc_young"):
        size_young_generation(0)
