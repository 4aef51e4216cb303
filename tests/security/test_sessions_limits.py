"""Sessions end: an absolute lifetime (``session_lifetime``) however busy the session is,
and a bounded in-memory store (``session_memory_max``): the least recently used session
goes when it is full. Both are settings with defaults. Over real sockets, on both loops.
"""

from __future__ import annotations

import pytest

import pyweb.testing
from pyweb.app.sessions import DEFAULT_LIFETIME, DEFAULT_MEMORY_MAX, SessionStore
from pyweb.app.site import Site
from pyweb.server.config import ServerConfig
from tests.helpers import until, write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

VISITS = """
n = conn.session.get("n", 0) + 1
conn.session["n"] = n
conn.return_(str(n), content_type="text/plain")
"""


@pytest.fixture
def site_dir(tmp_path):
    return write_site(tmp_path / "site", {"visits.py": VISITS})


def test_a_busy_session_still_ends_at_its_lifetime(site_dir):
    # idle 600 s: only the lifetime (2 s) can end it; each request renews the idle time
    site = Site(site_dir, secret_key="k" * 32, session_idle=601, session_lifetime=2)
    with pyweb.testing.serve(site) as client:
        counts = [int(client.get("/visits").text)]
        until(lambda: counts.append(int(client.get("/visits").text)) or counts[-1] == 1,
              "the session to end at its lifetime", limit=20, poll=0.1)
        assert counts[-2] >= 2  # it was in use until then
        assert counts[-1] == 1  # a new session
        assert client.get("/visits").text == "2"  # and the new one works


def test_the_memory_store_is_bounded(site_dir):
    site = Site(site_dir, secret_key="k" * 32, session_idle=602, session_memory_max=5)
    with pyweb.testing.serve(site) as first:
        base = f"http://127.0.0.1:{first.server.port}"
        assert first.get("/visits").text == "1"
        assert first.get("/visits").text == "2"
        others = [pyweb.testing.Client(base) for _ in range(8)]
        for other in others:
            assert other.get("/visits").text == "1"
        store = site.sessions.cache._backend._stores[site.sessions.cache.name]
        assert len(store) <= 5
        assert first.get("/visits").text == "1"  # the least recently used one went
        assert others[-1].get("/visits").text == "2"  # the newest stayed


def test_the_settings_have_defaults():
    config = ServerConfig()
    assert config.session_lifetime == DEFAULT_LIFETIME == 43200
    assert config.session_memory_max == DEFAULT_MEMORY_MAX
    assert "session_lifetime" in Site.SETTINGS and "session_memory_max" in Site.SETTINGS
    with pytest.raises(ValueError, match="session_lifetime"):
        SessionStore(lifetime=0)
    with pytest.raises(ValueError, match="-3"):
        SessionStore(idle=603, memory_max=-3)
