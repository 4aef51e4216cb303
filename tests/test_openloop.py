"""pyweb.testing.openloop: clients arrive on schedule, whether or not the server keeps up.

Against a real pyweb server on 127.0.0.1 (both loops). Nothing here asserts a speed: a rate
far below what any machine serves must be answered in full, and a server that can answer
one request at a time, each taking 0.2 s, cannot answer twenty a second whatever the
machine; the generator must count what it did not get as errors, not wait for it.
"""

from __future__ import annotations

import pytest

import pyweb.testing
from pyweb.app.site import Site
from pyweb.testing.openloop import offer, sweep
from tests.helpers import free_port

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]


@pytest.fixture
def site(tmp_path):
    (tmp_path / "hello.py").write_text("conn.return_('<p>hello</p>')\n")
    (tmp_path / "slow.py").write_text(
        "from pyweb import runtime\nawait runtime.sleep(0.2)\nconn.return_('<p>done</p>')\n"
    )
    return Site(str(tmp_path))


def test_a_low_rate_is_answered_in_full(site):
    with pyweb.testing.serve(site) as client:
        point = offer(client.base_url, "/hello", rate=20, seconds=0.5, timeout=5)
    assert (point.offered, point.replies, point.ok, point.errors) == (20, 10, 10, 0)
    assert 0 < point.achieved <= 20
    assert point.median_ms is not None and len(point.times_ms) == 10
    assert point.elapsed >= 0.5 and point.ok_per_s == 10 / point.elapsed


def test_sessions_send_calls_requests_on_one_connection(site):
    with pyweb.testing.serve(site) as client:
        point = offer(client.base_url, "/hello", rate=50, seconds=0.4, calls=5, timeout=5)
    assert (point.replies, point.ok, point.errors) == (20, 20, 0)  # 4 sessions of 5


def test_a_rate_past_capacity_gives_errors_not_a_longer_run(site):
    # nothread: one request at a time, each 0.2 s, so at most 5 a second; 20 are offered
    # for 0.5 s, each given 0.3 s: most must time out, and the run ends soon after.
    with pyweb.testing.serve(site, scheduler="nothread") as client:
        point = offer(client.base_url, "/slow", rate=20, seconds=0.5, timeout=0.3)
    assert point.replies + point.errors == 10
    assert point.errors >= 5 and point.replies <= 4


def test_not_found_is_a_reply_but_not_ok(site):
    with pyweb.testing.serve(site) as client:
        point = offer(client.base_url, "/missing", rate=20, seconds=0.2, timeout=5)
    assert (point.replies, point.ok, point.errors) == (4, 0, 0)


def test_refused_connections_are_errors():
    port = free_port()  # nobody listens there
    point = offer(f"http://127.0.0.1:{port}", "/", rate=20, seconds=0.2, calls=2, timeout=1)
    assert (point.replies, point.errors, point.median_ms) == (0, 4, None)  # 2 sessions of 2


def test_sweep_goes_from_the_lowest_rate_up(site):
    with pyweb.testing.serve(site) as client:
        points = sweep(client.base_url, "/hello", [40, 20], seconds=0.25, timeout=5)
    assert [p.offered for p in points] == [20, 40]
    assert [p.replies for p in points] == [5, 10]


@pytest.mark.parametrize(
    "kwargs",
    [{"rate": 0}, {"rate": 10, "seconds": 0}, {"rate": 10, "calls": 0}, {"rate": 10, "timeout": -1}],
)
def test_bad_arguments_are_named(kwargs):
    with pytest.raises(ValueError, match="must be positive"):
        offer("http://127.0.0.1:1", "/", **kwargs)
    with pytest.raises(ValueError, match="must start with '/'"):
        offer("http://127.0.0.1:1", "x", rate=1)
