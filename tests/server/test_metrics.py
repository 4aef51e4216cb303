"""``/_pyweb/metrics``: Prometheus text from ``pyweb serve``, one worker and two, on each loop.

The scrapes are parsed with prometheus_client's own parser, as Prometheus would read them.
The workers test serves a site with ``--workers 2`` and a shared Redis cache, sends requests
until both workers have answered some, and checks that the page (whichever worker answers
it) gives the sum over both.
"""

from __future__ import annotations

import os
import socket
import uuid

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pyweb.server import Server, ServerConfig
from pyweb.server.metrics import MAX_ROUTES, Metrics, combine, render
from tests.helpers import http_request, reachable, start_serve, stop_serve, until, write_site

pytestmark = pytest.mark.timeout(120)

SITE = {
    "hello.py": """
        import os
        conn.return_(str(os.getpid()))
    """,
    "cached.py": """
        from pyweb import cache
        c = cache.get(cache.String, cache.Int, "visits", cache.Size(100))
        n = (c.lookup("n") or 0) + 1
        c.insert("n", n)
        conn.return_(str(n))
    """,
}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and labels (prometheus_client's parser)."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def scrape(port: int, headers: str = "") -> tuple[int, str]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"GET /_pyweb/metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n".encode()
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def requests_of(found, route: str, status: str = "200") -> float:
    return found.get(("pyweb_http_requests_total", (("route", route), ("status", status))), 0)


# -- counting, adding up, writing out (no sockets) ----------------------------------------


async def _ok(ctx):  # pragma: no cover - never called: the server is not served
    raise AssertionError


class _Req:
    def __init__(self, path: str) -> None:
        self.path = path


def test_the_setting_is_off_by_default():
    assert ServerConfig().metrics is False
    assert Server(ServerConfig(port=0), _ok).metrics is None


def test_counts_by_route_and_status_and_histogram_buckets():
    metrics = Metrics(Server(ServerConfig(port=0), _ok), folder=None)
    metrics.observe(_Req("/a"), 200, 0.003)
    metrics.observe(_Req("/a"), 200, 0.2)
    metrics.observe(_Req("/a"), 500, 20.0)
    metrics.observe(_Req("/nothing"), 404, 0.001)
    metrics.observe(None, 400, 0.0)
    found = samples(render(combine([metrics.snapshot()], {os.getpid()})).decode())
    assert requests_of(found, "/a") == 2 and requests_of(found, "/a", "500") == 1
    assert requests_of(found, "(not found)", "404") == 1
    assert requests_of(found, "(bad request)", "400") == 1
    bucket = "pyweb_http_request_duration_seconds_bucket"
    assert found[bucket, (("le", "0.005"), ("route", "/a"))] == 1
    assert found[bucket, (("le", "0.25"), ("route", "/a"))] == 2
    assert found[bucket, (("le", "10"), ("route", "/a"))] == 2
    assert found[bucket, (("le", "+Inf"), ("route", "/a"))] == 3
    assert found["pyweb_http_request_duration_seconds_count", (("route", "/a"),)] == 3
    assert found["pyweb_http_request_duration_seconds_sum", (("route", "/a"),)] == pytest.approx(
        20.203
    )
    assert found["pyweb_workers", ()] == 1


def test_routes_are_bounded_so_a_scanner_cannot_grow_the_series():
    metrics = Metrics(Server(ServerConfig(port=0), _ok), folder=None)
    for i in range(MAX_ROUTES + 50):
        metrics.observe(_Req(f"/p{i}"), 200, 0.0)
    assert len(metrics.routes) == MAX_ROUTES + 1  # the rest under "(other)"
    assert sum(metrics.routes["(other)"].statuses.values()) == 50


def test_counters_add_over_every_worker_gauges_over_the_live_ones():
    server = Server(ServerConfig(port=0), _ok)
    one, two = Metrics(server, folder=None), Metrics(server, folder=None)
    one.observe(_Req("/a"), 200, 0.01)
    two.observe(_Req("/a"), 200, 0.01)
    two.observe(_Req("/a"), 200, 0.01)
    first, second = one.snapshot(), two.snapshot()
    second["pid"] = first["pid"] + 1  # another process, gone now
    found = samples(render(combine([first, second], {first["pid"]})).decode())
    assert requests_of(found, "/a") == 3  # a replaced worker's requests still count
    assert found["pyweb_slots_limit", ()] == ServerConfig().max_connections  # once, not twice
    assert found["pyweb_workers", ()] == 1


def test_a_worker_whose_folder_is_gone_keeps_serving(tmp_path):
    """The supervisor's folder removed under a worker (the supervisor died): writing its
    counts fails quietly, and nothing is left behind."""
    folder = tmp_path / "metrics"
    folder.mkdir()
    metrics = Metrics(Server(ServerConfig(port=0), _ok), folder=str(folder))
    metrics.observe(_Req("/a"), 200, 0.01)
    metrics.write()
    assert [p.name for p in folder.iterdir()] == [f"{os.getpid()}.json"]
    folder.joinpath(f"{os.getpid()}.json").unlink()
    folder.rmdir()
    metrics.write()  # no exception
    assert not folder.exists()


# -- pyweb serve, one process, each loop ----------------------------------------------------


@pytest.mark.loops("trio", "asyncio")
def test_the_page_counts_requests_and_is_guarded(tmp_path, loop):
    site = write_site(tmp_path / "site", SITE)
    proc, port = start_serve(site, "--metrics", "--status-token", "s3cret")
    try:
        for _ in range(3):
            assert http_request(port, "/hello")[0] == 200
        assert http_request(port, "/missing")[0] == 404
        status, text = scrape(port)
        assert status == 200, text
        found = samples(text)
        assert requests_of(found, "/hello") == 3
        assert requests_of(found, "(not found)", "404") == 1
        assert found["pyweb_http_request_duration_seconds_count", (("route", "/hello"),)] == 3
        assert found["pyweb_open_connections", ()] >= 1  # the scrape's own
        # Behind a trusted proxy (127.0.0.1 by default) the client is who the proxy names:
        # not loopback, so refused, like the other operator pages...
        status, text = scrape(port, "X-Forwarded-For: 203.0.113.9\r\n")
        assert status == 403 and "pyweb_http_requests" not in text
        # ...unless it holds the token.
        status, text = scrape(port, "X-Forwarded-For: 203.0.113.9\r\nAuthorization: Bearer s3cret\r\n")
        assert status == 200 and requests_of(samples(text), "/hello") == 3
    finally:
        assert stop_serve(proc) == 0


@pytest.mark.loops("trio", "asyncio")
def test_metrics_are_off_unless_asked_for(tmp_path, loop):
    site = write_site(tmp_path / "site", SITE)
    proc, port = start_serve(site)
    try:
        assert scrape(port)[0] == 404
    finally:
        assert stop_serve(proc) == 0


# -- pyweb serve --workers 2 with a shared Redis cache ------------------------------------


def redis_or_skip() -> None:
    if not reachable("127.0.0.1", 6379, timeout=0.5):
        if os.environ.get("CI") == "true":
            raise AssertionError("Redis is not running on 127.0.0.1:6379")
        pytest.skip("Redis is not running on 127.0.0.1:6379")


@pytest.mark.loops("trio", "asyncio")
def test_two_workers_are_summed(tmp_path, loop):
    redis_or_skip()
    site = write_site(tmp_path / "site", SITE)
    prefix = f"pyweb-test:{uuid.uuid4().hex[:8]}:"
    proc, port = start_serve(
        site, "--metrics", "--workers", "2",
        "--cache", f"redis://127.0.0.1:6379/0?prefix={prefix}",
    )
    try:
        pids: dict[str, int] = {}

        def both_answered() -> bool:  # new connections: the kernel hands them to either
            status, body = http_request(port, "/hello")
            assert status == 200
            pids[body.decode()] = pids.get(body.decode(), 0) + 1
            return len(pids) == 2

        until(both_answered, "both workers to answer /hello", limit=60, poll=0)
        sent = sum(pids.values())
        for _ in range(4):
            assert http_request(port, "/cached")[0] == 200

        scraped: list[dict] = []

        def summed() -> bool:
            """One scrape gives the sum over both workers: the answering worker's own
            counts are current, the other's are at most FLUSH_INTERVAL old."""
            status, text = scrape(port)
            assert status == 200, text
            scraped[:] = [samples(text)]
            found = scraped[0]
            return requests_of(found, "/hello") == sent and found.get(
                ("pyweb_http_request_duration_seconds_count", (("route", "/hello"),))
            ) == sent and requests_of(found, "/cached") == 4

        until(summed, f"{sent} requests of /hello summed over both workers", limit=30,
              poll=0.2)  # fmt: skip
        (found,) = scraped
        assert found["pyweb_workers", ()] == 2
        assert found["pyweb_slots_limit", ()] == 2 * 1000  # each worker's max_connections
        lookups = "pyweb_cache_lookups_total"
        hits = found.get((lookups, (("cache", "visits"), ("result", "hit"))), 0)
        misses = found.get((lookups, (("cache", "visits"), ("result", "miss"))), 0)
        assert hits + misses == 4 and misses <= 2  # the count is shared through Redis
        up = ("pyweb_cache_backend_up", (("backend", "redis://127.0.0.1:6379/0"),))
        assert found[up] == 2  # a gauge: summed over the live workers
    finally:
        assert stop_serve(proc) == 0
        import redis

        client = redis.Redis(host="127.0.0.1", port=6379)
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.unlink(*keys)
