"""Regions in a served site, over real sockets (both implementations): library state is
snapshotted after initialisation, a page that changes it is reported (error log; banner in
--dev; 500 with --strict-regions) and the state is restored when no other request is in
flight; --exec-library, --no-script-cache and --profile-alloc (SMLserver §2.1, §6 Table 1;
Hop §3.1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import pyweb.testing
from pyweb.app.site import Site

from .conftest import INTERLEAVED_PAGES, interleave, load, while_in_flight, write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

LIB = """
hits = 0
names = []
settings = {"theme": "light"}
"""

PAGES = {
    "_lib.py": LIB,
    "bump.py": """
        import _lib
        _lib.hits += 1
        _lib.names.append(conn.form.get("name", "?"))
        conn.return_(f"<html><body><p>hits={_lib.hits} names={len(_lib.names)}</p></body></html>")
    """,
    "read.py": """
        import _lib
        conn.return_(f"hits={_lib.hits} names={len(_lib.names)}", content_type="text/plain")
    """,
    "slow.py": """
        import _lib
        from pyweb import runtime
        _lib.names.append("slow")
        await runtime.sleep(float(conn.form.get("t", "0.5")))
        conn.return_("slow done", content_type="text/plain")
    """,
    "clean.py": """
        import _lib
        conn.return_(f"theme={_lib.settings['theme']}", content_type="text/plain")
    """,
}


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    return write_site(tmp_path / "site", PAGES)


def serve(site_dir: Path, error_log: Path | None = None, dev: bool = False, **options):
    site = Site(site_dir, dev=dev, **options)
    return pyweb.testing.serve(site, dev=dev, error_log=str(error_log) if error_log else None), site


def test_a_mutating_page_is_reset_and_reported_in_dev(site_dir, tmp_path, use_impl):
    log = tmp_path / "error.log"
    server, site = serve(site_dir, log, dev=True)
    with server as client:
        for _ in range(3):
            r = client.get("/bump?name=ada")
            assert r.status == 200
            assert "hits=1 names=1" in r.text  # every request starts from the initial state
            assert "this page changed module globals" in r.text  # the banner
            assert "`hits` (rebound, in _lib)" in r.text
            assert "`names` (mutated, in _lib)" in r.text
            assert "keep state in the cache or the database" in r.text
            assert r.text.index("pyweb-regions") > r.text.index("<body>")
            assert "hits" in r.headers["x-pyweb-regions"]
        r = client.get("/read")
        assert r.text == "hits=0 names=0"
        assert "x-pyweb-regions" not in r.headers  # a page that changes nothing: no banner
        assert client.get("/clean").text == "theme=light"
    text = log.read_text()
    assert text.count("changed module globals") == 3, text
    assert "it was reset" in text or "they were reset" in text


def test_production_resets_without_a_banner(site_dir, use_impl):
    server, site = serve(site_dir)
    with server as client:
        for _ in range(2):
            r = client.get("/bump")
            assert r.status == 200 and "hits=1" in r.text
            assert "pyweb-regions" not in r.text and "x-pyweb-regions" not in r.headers
    assert site.regions is not None and site.regions.mutations == 4  # 2 globals x 2 requests


def test_strict_regions_fail_with_500(site_dir, use_impl):
    server, _ = serve(site_dir, strict_regions=True)
    with server as client:
        r = client.get("/bump")
        assert r.status == 500
        assert "this page changed module global" in r.text and "`hits`" in r.text
        assert client.get("/read").text == "hits=0 names=0"  # reset anyway
        assert client.get("/clean").status == 200


def test_no_restore_while_another_request_is_in_flight(site_dir, use_impl):
    server, site = serve(site_dir)
    with server as client:
        with while_in_flight(site, client, "/slow?t=1.0") as slow:
            # The slow request is in flight and has appended to _lib.names: a request that
            # finishes now must not pull that state from under it.
            r = client.get("/read")
            assert r.text == "hits=0 names=1"
            assert site.regions.pending  # reported, waiting for a quiet moment
        assert slow["text"] == "slow done"
        assert client.get("/read").text == "hits=0 names=0"  # restored once quiet


def test_exec_library_runs_the_initialisation_every_request(tmp_path, use_impl):
    root = write_site(
        tmp_path / "site",
        {
            "_clock.py": """
                import itertools
                runs = []
                runs.append(1)
                started = len(runs)
            """,
            "page.py": """
                import _clock
                _clock.runs.append(2)
                conn.return_(f"runs={_clock.runs}", content_type="text/plain")
            """,
        },
    )
    server, site = serve(root, exec_library=True)
    with server as client:
        assert client.get("/page").text == "runs=[1, 2]"
        assert client.get("/page").text == "runs=[1, 2]"  # re-initialised, not restored
    assert site.regions.mutations == 0


def test_no_script_cache_recompiles_every_request(tmp_path, use_impl):
    root = write_site(tmp_path / "site", {"p.py": 'conn.return_("one", content_type="text/plain")'})
    server, _ = serve(root, no_script_cache=True)
    with server as client:
        assert client.get("/p").text == "one"
        (root / "p.py").write_text('conn.return_("two", content_type="text/plain")')
        assert client.get("/p").text == "two"
    server, _ = serve(root)  # the default: compiled once, at load
    with server as client:
        assert client.get("/p").text == "two"
        (root / "p.py").write_text('conn.return_("three", content_type="text/plain")')
        assert client.get("/p").text == "two"


def test_a_library_changed_by_another_library_s_init_is_not_a_mutation(tmp_path, use_impl):
    root = write_site(
        tmp_path / "site",
        {
            "_registry.py": "entries = []\n",
            "_plugin.py": "import _registry\n_registry.entries.append('plugin')\n",
            "p.py": """
                import _plugin, _registry
                conn.return_(f"{_registry.entries}", content_type="text/plain")
            """,
        },
    )
    server, site = serve(root, strict_regions=True)
    with server as client:
        assert client.get("/p").text == "['plugin']"
        assert client.get("/p").text == "['plugin']"
    assert set(site.regions.guards) == {"_registry", "_plugin"}


def test_service_modules_are_guarded(tmp_path, use_impl):
    root = write_site(
        tmp_path / "site",
        {
            "svc.py": """
                from pyweb.app.services import service
                calls = []

                @service("/count")
                def count() -> str:
                    calls.append(1)
                    return f"calls={len(calls)}"
            """,
        },
    )
    server, site = serve(root)
    with server as client:
        assert client.get("/count").text.endswith("calls=1")
        assert client.get("/count").text.endswith("calls=1")
    assert site.regions.mutations == 2


def test_dev_reload_rebuilds_the_snapshots(site_dir, use_impl):
    server, site = serve(site_dir, dev=True)
    with server as client:
        assert client.get("/read").text == "hits=0 names=0"
        assert client.get("/read").text == "hits=0 names=0"  # now the site watches _lib.py
        lib = site_dir / "_lib.py"
        lib.write_text("hits = 10\nnames = []\nsettings = {}\n")
        st = lib.stat()
        os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        r = client.get("/read")
        assert r.text == "hits=10 names=0" and "x-pyweb-regions" not in r.headers
        assert "hits=11" in client.get("/bump").text
        assert client.get("/read").text == "hits=10 names=0"


def test_stats_page(site_dir, use_impl):
    server, site = serve(site_dir, profile_alloc=True)
    with server as client:
        for _ in range(5):
            client.get("/clean")
        r = client.get("/_pyweb/stats")
        assert r.status == 200 and "pyweb stats" in r.text
        data = json.loads(client.get("/_pyweb/stats.json").text)
    assert data["implementation"] == use_impl
    assert "_lib" in data["modules"]
    assert data["fast_check"] == load(use_impl).FAST_CHECK
    assert (data["fast_check"] == "compare") == (use_impl == "python")
    assert f"snapshot check: {data['fast_check']}" in r.text
    if use_impl == "c":
        page = data["pages"]["pages/clean.py".replace("pages", "site")]
        assert page["requests"] == 5
        assert 0 < page["bytes_per_request"] < 1_000_000
        assert data["server_thread"]["requests"] >= 5
        assert "bytes/request" in r.text
    else:
        assert "not available" in data["alloc_message"] and "not available" in r.text


def test_stats_page_is_not_served_by_default(site_dir, use_impl):
    server, _ = serve(site_dir)
    with server as client:
        assert client.get("/_pyweb/stats").status == 404


def test_a_second_site_on_the_same_pages_leaves_the_first_its_snapshots(tmp_path, use_impl):
    """A test or a notebook may build a second Site on the pages a first one serves. They
    share sys.modules, so a library module that a request to the first imports must be
    snapshotted by the first when it initialises, not later, after the request changed it
    (which made the count stick at 1 + the visits before, and test_the_example_counter_pages
    fail after tests/app had visited /counter)."""
    root = write_site(
        tmp_path / "site",
        {
            "_hits.py": "count = 0\n",
            "bump.py": """
                import _hits
                _hits.count += 1
                conn.return_(f"count={_hits.count}", content_type="text/plain")
            """,
        },
    )
    server, _ = serve(root)
    with server as client:
        other = Site(root)  # built while the first serves, never served itself
        assert [client.get("/bump").text for _ in range(3)] == ["count=1"] * 3
        del other


def test_the_example_counter_pages(use_impl):
    pages = Path(__file__).resolve().parents[2] / "pages"
    server, _ = serve(pages, dev=True)
    with server as client:
        for _ in range(3):
            r = client.get("/counter")
            assert "visited 1 time(s)" in r.text
            assert "module globals `hits` (rebound, in _visits)" in r.text
        for n in (1, 2, 3):
            assert f"You visited this page {n} time(s)" in client.get("/counter_fixed").text


def test_a_shared_response_object_does_not_collect_banners(tmp_path, use_impl):
    """A service may return one Response built at import; the dev banner must not be
    added to that object (it would pile up, one more banner per request)."""
    root = write_site(
        tmp_path / "site",
        {
            "svc.py": """
                from pyweb.app.services import service
                from pyweb.protocol.response import Response

                PAGE = Response(200, [("Content-Type", "text/html")], b"<body>hi</body>")
                calls = []

                @service("/shared")
                def shared() -> Response:
                    calls.append(1)
                    return PAGE
            """,
        },
    )
    server, site = serve(root, dev=True)
    with server as client:
        for _ in range(3):
            r = client.get("/shared")
            assert r.text.count("pyweb-regions") == 1
            assert len(r.headers.get_all("x-pyweb-regions")) == 1
    module = site.regions.guards["pyweb_site_services.svc"].module
    assert module.PAGE.body == b"<body>hi</body>" and len(module.PAGE.headers) == 1


def test_allocations_are_charged_to_the_right_request_when_requests_interleave(tmp_path):
    """While one request sleeps, others run on the same thread: each is charged only the
    bytes allocated in its own page's steps (the page's coroutine is counted step by step)."""
    load("c")
    root = write_site(tmp_path / "site", INTERLEAVED_PAGES)
    site = Site(root, profile_alloc=True)
    with pyweb.testing.serve(site, error_log=None) as client:
        interleave(site, client)
    assert site.regions.in_flight == 0
    pages = site.regions.stats()["pages"]
    big_bytes = pages[f"{root.name}/big.py"]["bytes_per_request"]
    small_bytes = pages[f"{root.name}/small.py"]["bytes_per_request"]
    assert 1_000_000 <= big_bytes < 1_200_000, big_bytes  # not 2.2 MB
    assert 300_000 <= small_bytes < 400_000, small_bytes
