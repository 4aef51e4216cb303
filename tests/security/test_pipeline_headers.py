"""Headers the pipeline adds on the way out: a page that read the session is private, and
HSTS goes out over https only.

Before: pages that read the session had no ``Cache-Control: private`` nor ``Vary: Cookie``
(a shared cache could hand one user's page to another), and ``Strict-Transport-Security``
was sent over plain http too.
"""

from __future__ import annotations

import pytest

from .conftest import Served

pytestmark = pytest.mark.loops("trio", "asyncio")


def test_a_page_that_reads_the_session_is_private(served: Served) -> None:
    served.login()
    answer = served.get("/account")
    assert answer.status == 200
    assert "private" in answer.headers["cache-control"]
    assert "cookie" in answer.headers["vary"].lower()


def test_a_stranger_reading_the_session_is_private_too(served: Served) -> None:
    answer = served.get("/account")
    assert "private" in answer.headers["cache-control"]
    assert "cookie" in answer.headers["vary"].lower()


def test_a_page_without_the_session_stays_cacheable(served: Served) -> None:
    answer = served.get("/plain")
    assert "cache-control" not in answer.headers
    assert "vary" not in answer.headers


def test_hsts_only_over_https(served: Served) -> None:
    assert "strict-transport-security" not in served.get("/plain").headers
    # The proxy in front (127.0.0.1: trusted) says the client used https.
    answer = served.get("/plain", headers={"X-Forwarded-Proto": "https"})
    assert answer.headers["strict-transport-security"] == "max-age=3600"
