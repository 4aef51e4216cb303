"""pages/exchange.py end to end: real servers, the rate source up, down and changing."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pyweb import cache, runtime, testing
from pyweb.protocol.response import Response
from tests.helpers import free_port

from ..csrf_helpers import csrf_token
from ..helpers import start_serve, stop_serve
from .conftest import REDIS_URL, need_redis, unique_prefix

pytestmark = pytest.mark.loops("trio", "asyncio")

PAGES = Path(__file__).resolve().parents[2] / "pages"


@pytest.fixture
def rate_file(tmp_path, monkeypatch):
    path = tmp_path / "rate.txt"
    monkeypatch.setenv("PYWEB_RATE_FILE", str(path))
    monkeypatch.delenv("PYWEB_RATE_URL", raising=False)
    return path


def amount(client, a="10"):
    token = csrf_token(client, "/exchange")  # the form carries the session's CSRF token
    response = client.post("/exchange", {"a": a, "csrf_token": token})
    assert response.status == 200
    return response.text


def test_form_then_the_value_in_kroner(clock, rate_file):
    with testing.serve(PAGES, dev=True) as client:
        page = client.get("/exchange")
        assert page.status == 200 and 'name="a"' in page.text
        assert "10.0 USD gives 64.32 DKK." in amount(client)
        assert 'name="a"' in amount(client, "abc")  # not a number: the form again
        assert "USD gives" not in amount(client, "abc")


def test_the_cache_hides_a_rate_change_until_the_timeout(clock, rate_file):
    with testing.serve(PAGES, dev=True) as client:
        assert "64.32 DKK" in amount(client)
        assert client.get("/rate?set=7").status == 200
        assert "USDDKK</td><td>7.0000" in client.get("/rate").text
        clock.advance(299.999)
        assert "64.32 DKK" in amount(client)  # still the cached rate
        clock.advance(0.001)
        assert "70.00 DKK" in amount(client)  # five minutes: fetched again


def test_a_forged_host_header_does_not_choose_the_foreign_site(clock, rate_file):
    """Only the port of Host is used: the rate still comes from 127.0.0.1 (no SSRF)."""
    with testing.serve(PAGES, dev=True) as client:
        port = client.server.port
        forged = {"Host": f"attacker.invalid:{port}"}
        token = csrf_token(client, "/exchange")
        response = client.post("/exchange", {"a": "10", "csrf_token": token}, headers=forged)
        assert response.status == 200 and "64.32 DKK" in response.text


def test_the_host_headers_port_is_never_connected_to(clock, rate_file):
    """The page took the port from Host: a client could make it connect to any loopback
    port (the probe reached Redis). A listening socket stands in for Redis here; the page
    must never connect to it, and the rate still comes from the server's own /rate."""
    bait = socket.socket()
    bait.bind(("127.0.0.1", 0))
    bait.listen(8)
    bait.settimeout(0.5)
    try:
        with testing.serve(PAGES, dev=True) as client:
            forged = {"Host": f"127.0.0.1:{bait.getsockname()[1]}"}
            token = csrf_token(client, "/exchange")
            response = client.post("/exchange", {"a": "10", "csrf_token": token}, headers=forged)
            assert response.status == 200 and "64.32 DKK" in response.text
            with pytest.raises(TimeoutError):
                bait.accept()  # nobody came
    finally:
        bait.close()


def test_source_down(clock, rate_file, monkeypatch):
    monkeypatch.setenv("PYWEB_RATE_URL", f"http://127.0.0.1:{free_port()}/rate")
    with testing.serve(PAGES, dev=True) as client:
        assert "The service is currently not available" in amount(client)


def test_source_answers_503_then_comes_back(clock, rate_file):
    with testing.serve(PAGES, dev=True) as client:
        assert client.get("/rate?set=down").status == 503
        assert "The service is currently not available" in amount(client)
        client.get("/rate?set=6.5")
        # as in the paper, the failure (None) is a cached value too: hidden until the timeout
        assert "The service is currently not available" in amount(client)
        clock.advance(300)
        assert "65.00 DKK" in amount(client)


def test_set_is_refused_in_production(clock, rate_file):
    with testing.serve(PAGES) as client:
        assert client.get("/rate?set=1").status == 403
        assert "64.32 DKK" in amount(client)


def test_many_cold_requests_ask_the_foreign_site_once(clock, rate_file, monkeypatch):
    hits = []

    async def slow_foreign_site(ctx):
        hits.append(1)
        await runtime.sleep(0.3)  # (on the test's loop)
        return Response(200, [("Content-Type", "text/html")], b"<td>USDDKK</td><td>6.0000</td>")

    with testing.serve(slow_foreign_site) as rates:
        monkeypatch.setenv("PYWEB_RATE_URL", rates.base_url + "/")
        with testing.serve(PAGES) as site:
            texts = []

            def one():
                client = testing.Client(site.base_url)
                texts.append(amount(client))

            threads = [threading.Thread(target=one) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    assert len(texts) == 8 and all("60.00 DKK" in t for t in texts)
    assert len(hits) == 1


def test_a_second_server_process_shares_the_rate_through_redis(rate_file, monkeypatch):
    """`pyweb serve --cache redis://...` in another process finds the rate this one cached."""
    need_redis()
    prefix = unique_prefix()
    url = f"{REDIS_URL}?prefix={prefix}"
    cache.configure(url)
    try:
        with testing.serve(PAGES, dev=True) as first:
            assert "64.32 DKK" in amount(first)  # fetched and cached in Redis
            first.get("/rate?set=9")
            monkeypatch.setenv("PYWEB_RATE_URL", first.base_url + "/rate")
            # Started as an operator starts it, on the test's loop; start_serve returns once
            # the banner says it listens (no bound to guess on a loaded machine).
            proc, port = start_serve(PAGES, "--cache", url)
            try:
                assert "64.32 DKK" in amount(testing.Client(f"http://127.0.0.1:{port}"))
                # (the shared cached rate, not 9)
            finally:
                stop_serve(proc)
    finally:
        cache.configure("memory")


@pytest.mark.loops("trio")  # the command line refuses before any server starts: no loop
def test_serve_refuses_a_bad_cache_url(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pyweb", "serve", str(tmp_path), "--port", "0",
         "--cache", "memcached://127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--cache: a cache backend is 'memory' or 'redis://host:port/db'" in done.stderr
    assert "'memcached://127.0.0.1'" in done.stderr
