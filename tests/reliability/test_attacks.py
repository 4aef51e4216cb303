"""A normal client keeps being served during each attack of the hardening issue: 1,000 slow
heads, 1,000 slow bodies, a chunked body that never ends, 2,000 idle connections, 1,000
long-polls, 40 concurrent 16 MB posts (their files stream to disk: the server's memory
stays under its start-up size plus 100 MB). The normal client, a new connection and a GET
every 50 ms (benchmarks/attacks.py), waits at most 1 s, while the attack is opened and once
it is in place (the one exception, the flood that opens ``idle-keepalive``, is explained at
:data:`FLOOD_OPENING`). On both loops (``pyweb serve --loop trio`` and ``--loop asyncio``)."""

from __future__ import annotations

import pytest

from .conftest import SECONDS, attacks

pytestmark = pytest.mark.loops("trio", "asyncio")

SCENARIOS = [
    ("slow-headers", 1000),
    ("slow-bodies", 1000),
    ("chunked-trickle", 1000),
    ("idle", 2000),
    ("idle-keepalive", 2000),
    ("long-polls", 1000),
    ("big-posts", 40),
]
WORST = 1.0
"""Seconds: the longest a normal client may wait for its reply while the attack is in
place."""
FLOOD_OPENING = 3.0
"""Seconds: the normal client's longest wait while the ``idle-keepalive`` crowd is being
opened (100 connections every 50 ms). Each of those connections first sends a real
request, so the opening is a flood of 2,000 requests in a second, another attack (bounded
by the fast 503 when every slot has a request in progress): on this shared two-core machine
the server gets a third of a core, and the requests queued ahead of the normal client take
it up to about 1.5 s. The idle crowd it leaves behind is the scenario, held to
:data:`WORST`. Every other attack is held to :data:`WORST` while it is opened too."""


@pytest.mark.parametrize(("scenario", "n"), [pytest.param(s, n, id=s) for s, n in SCENARIOS])
def test_a_normal_client_is_served_during(scenario, n, loop):
    server_args = ["--loop", loop]
    r = attacks.run(scenario, attacks.HERE, n, SECONDS, client_timeout=15.0, server_args=server_args)
    r["errors"] = r["errors"][:3]
    print(f"{scenario}: {r}")
    assert r["requests"] >= 5, r
    assert r["failures"] == 0, r
    assert r["busy_503"] == 0, r
    assert r["worst"] < WORST, r
    opening_bound = FLOOD_OPENING if scenario == "idle-keepalive" else WORST
    assert r["worst_opening"] < opening_bound, r
    if scenario == "big-posts":  # the uploads go to disk as they arrive: no budget used
        assert r["posts"].get("200", 0) >= 20, r
        assert r["rss_mb"] < 60 + 100, r  # start-up RSS + 100 MB
