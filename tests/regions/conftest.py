"""Fixtures for the regions tests: every test that takes ``impl`` runs twice, once against
the C extension and once against the pure-Python fallback (the C run is skipped only when
the extension was not built, which ``pip install`` allows when there is no compiler)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from types import ModuleType

import pytest

import pyweb.testing
import pyweb_regions
from tests.helpers import write_site  # noqa: F401 - the regions tests import it from here

_NAMES = [
    "ModuleGuard",
    "Arena",
    "PAGE_SIZE",
    "pool_stats",
    "utf8_length",
    "alloc_install",
    "alloc_installed",
    "alloc_enable",
    "alloc_counts",
    "alloc_reset_counts",
]


def load(name: str) -> ModuleType:
    try:
        return pyweb_regions.implementation(name)
    except ImportError:
        pytest.skip(
            "the C extension pyweb_regions._regions was not built (or PYWEB_REGIONS=python)"
        )


@pytest.fixture(params=["c", "python"])
def impl(request) -> ModuleType:
    """The implementation module itself (``_regions`` or ``_fallback``)."""
    return load(request.param)


@pytest.fixture(params=["c", "python"])
def use_impl(request, monkeypatch) -> str:
    """Make pyweb_regions (and so pyweb.regions and the Site) use one implementation."""
    module = load(request.param)
    for name in _NAMES:
        monkeypatch.setattr(pyweb_regions, name, getattr(module, name))
    monkeypatch.setattr(pyweb_regions, "VERSION_TAG", bool(module.VERSION_TAG))
    monkeypatch.setattr(pyweb_regions, "FAST_CHECK", module.FAST_CHECK)
    monkeypatch.setattr(pyweb_regions, "IMPLEMENTATION", request.param)
    monkeypatch.setattr(pyweb_regions, "ALLOC_AVAILABLE", request.param == "c")
    return request.param


# Two pages for the tests that interleave requests on one server thread: big.py allocates
# 1 MB and sleeps (trio runs other requests meanwhile), small.py allocates 300 KB at once.
INTERLEAVED_PAGES = {
    "big.py": """
        from pyweb import runtime
        first = bytearray(1_000_000)
        await runtime.sleep(0.6)
        conn.return_(f"big {len(first)}", content_type="text/plain")
    """,
    "small.py": """
        block = bytearray(300_000)
        conn.return_(f"small {len(block)}", content_type="text/plain")
    """,
}


@contextlib.contextmanager
def while_in_flight(site, client, target: str) -> Iterator[dict[str, str]]:  # type: ignore[no-untyped-def]
    """GET ``target`` from another thread; the ``with`` body runs once the site counts it in
    flight. After the block the dict holds its reply's text under ``"text"``."""
    results: dict[str, str] = {}

    def other_request() -> None:
        with pyweb.testing.Client(client.base_url) as other:
            results["text"] = other.get(target).text

    t = threading.Thread(target=other_request)
    t.start()
    try:
        deadline = time.monotonic() + 5
        while site.regions.in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        yield results
    finally:
        t.join()


def interleave(site, client) -> None:  # type: ignore[no-untyped-def]
    """GET /big from another thread and, while its page sleeps, four GET /small: 1.2 MB
    allocated by other requests on the same server thread during /big's request."""
    with while_in_flight(site, client, "/big") as big:
        for _ in range(4):
            assert client.get("/small").text == "small 300000"
    assert big["text"] == "big 1000000"
