"""A route's plan (``_Page.passes``, ``_Page.tokenless``: pyweb/app/runner.py) decides for
the guards whose decision depends only on the route, the site's settings and the method, once
when the route is found; a site's plan (its login URL, the security headers of its usual
answers) once per site. These tests prove that a guard still acts on every kind of route
where it should, on the route's first request (routed) and on the next ones (the route
remembered with its plan), and that a reload which changes the settings (SIGHUP builds the
site anew) gives the routes a new plan. Real sockets, both loops.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pyweb.app import runner
from pyweb.app.csrf import SAFE_METHODS
from pyweb.app.site import Site
from pyweb.server import ServerConfig
from pyweb.testing import Client
from pyweb.testing.server import ServerThread, build_server
from tests.helpers import write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

ORIGIN = "https://app.example"
BIG = "<p>" + "every guard, every route " * 100 + "</p>"

SITE = {
    "routes.py": """
import pyweb


@pyweb.service("/svc")
def svc():
    return "service"


@pyweb.service("/svc-post", methods=["POST"])
def svc_post():
    return "posted"


@pyweb.service("/svc-open", methods=["POST"], csrf=False)
def svc_open():
    return "open"
""",
    "page.py": "conn.return_('page')",
    "members.py": "from pyweb import auth\nauth.require_login()\nconn.return_('in')",
    "big.py": f"conn.return_({BIG!r})",
    "templates/tpl.html": "template",
    "file.txt": "file",
}

KINDS = {
    "page": "/page",
    "service": "/svc",
    "template": "/tpl",
    "static file": "/file.txt",
    "error page": "/nothing-here",
}
"""A path of each kind of route, answered to a GET."""


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_site(tmp_path_factory.mktemp("plan") / "site", SITE)


class Running:
    """A real server of the site, with a client, that can be reloaded as SIGHUP does."""

    def __init__(self, site_dir: Path, loop: str, settings: dict[str, Any]) -> None:
        self.site_dir = site_dir
        self.loop = loop
        self.server = build_server(site_dir, loop=loop, **settings)
        self.thread = ServerThread(self.server).start()
        self.client = Client(f"http://127.0.0.1:{self.server.port}")

    def reload(self, **settings: Any) -> None:
        """What SIGHUP does (pyweb.cli.reload): new settings, the site built anew with them."""
        config = ServerConfig(
            host="127.0.0.1", port=0, access_log=None, loop=self.loop,
            site_dir=str(self.site_dir), **settings,
        )  # fmt: skip
        site = Site.from_settings(str(self.site_dir), config)
        self.thread.call(self.server.reconfigure, config, site)

    def get(self, path: str, **headers: str) -> Any:
        """A GET on a new connection (a reload's settings are for new connections)."""
        with Client(f"http://127.0.0.1:{self.server.port}") as client:
            return client.request("GET", path, headers=headers)

    def send(self, method: str, path: str, **headers: str) -> Any:
        with Client(f"http://127.0.0.1:{self.server.port}") as client:
            return client.request(method, path, headers=headers)


@contextmanager
def running(site_dir: Path, loop: str, **settings: Any) -> Iterator[Running]:
    served = Running(site_dir, loop, settings)
    try:
        yield served
    finally:
        served.client.close()
        served.thread.stop()


def test_the_plan_of_each_kind_of_route() -> None:
    """What the plan lets pass is never more than what the guards would let pass."""
    plan = runner._plan
    # a script: any method passes the first two guards; only the safe ones need no token
    passes, tokenless = plan(None, True, False)
    assert {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"} <= passes
    assert tokenless == SAFE_METHODS
    # a service takes its methods only; csrf=False: no method needs the token
    passes, tokenless = plan(("GET", "HEAD"), True, False)
    assert passes == {"GET", "HEAD"}
    passes, tokenless = plan(("POST",), False, False)
    assert passes == {"POST"} and "POST" in tokenless
    # a CORS policy wraps every request: no method passes the plan's test
    assert plan(None, True, True)[0] == frozenset()
    assert plan(("GET", "HEAD"), False, True)[0] == frozenset()
    # a method the plan does not name is decided by each guard
    assert "PROPFIND" not in plan(None, False, False)[0]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_route_gets_the_security_headers_and_cors(site_dir: Path, loop: str, kind: str) -> None:
    path = KINDS[kind]
    with running(site_dir, loop, cors_origins=(ORIGIN,)) as served:
        for _ in range(2):  # routed, then remembered with its plan
            answer = served.get(path, Origin=ORIGIN)
            assert answer.status == (404 if kind == "error page" else 200), kind
            assert answer.headers["x-content-type-options"] == "nosniff", kind
            assert answer.headers["access-control-allow-origin"] == ORIGIN, kind
            assert "origin" in answer.headers.get("vary", "").lower(), kind
        plain = served.get(path)  # no Origin: no CORS fields, but the Vary all the same
        assert "access-control-allow-origin" not in plain.headers
        assert "origin" in plain.headers.get("vary", "").lower()


@pytest.mark.parametrize("path", ["/page", "/svc-post"])
def test_an_unsafe_method_without_the_token_is_refused(site_dir: Path, loop: str, path: str) -> None:
    with running(site_dir, loop) as served:
        for _ in range(3):  # routed, then remembered with its plan
            answer = served.send("POST", path)
            assert answer.status == 403, answer.text[:200]
            assert answer.headers["x-content-type-options"] == "nosniff"
        assert served.send("POST", "/svc-open").status == 200  # csrf=False: no token needed
        assert served.send("POST", "/svc-open").status == 200


def test_a_method_the_service_does_not_take_is_refused(site_dir: Path, loop: str) -> None:
    with running(site_dir, loop) as served:
        assert served.get("/svc").status == 200  # remembered: the next requests skip routing
        for method in ("POST", "DELETE", "PROPFIND"):
            answer = served.send(method, "/svc")
            assert answer.status == 405, method
            assert "GET" in answer.headers["allow"]
            assert answer.headers["x-content-type-options"] == "nosniff"
        assert served.get("/svc-post").status == 405


def test_a_preflight_is_answered_on_every_route(site_dir: Path, loop: str) -> None:
    with running(site_dir, loop, cors_origins=(ORIGIN,)) as served:
        for path in ("/page", "/svc", "/file.txt", "/page", "/svc"):
            answer = served.send(
                "OPTIONS", path, Origin=ORIGIN, **{"Access-Control-Request-Method": "GET"}
            )
            assert answer.status == 204, path
            assert answer.headers["access-control-allow-origin"] == ORIGIN


def test_a_reload_gives_the_routes_a_new_plan(site_dir: Path, loop: str) -> None:
    """Each guard whose plan a setting changes acts after a reload that turns it on, and
    stops acting after one that turns it off: CORS, compression, the login URL, HSTS's
    absence over http, the CSRF exemption."""
    with running(site_dir, loop) as served:
        for path in ("/page", "/svc", "/big", "/page", "/svc", "/big"):  # remembered
            answer = served.get(path, Origin=ORIGIN, **{"Accept-Encoding": "gzip"})
            assert "access-control-allow-origin" not in answer.headers, path
            assert "strict-transport-security" not in answer.headers, path
        assert answer.headers["content-encoding"] == "gzip"  # /big: compressed
        assert served.send("POST", "/page").status == 403
        assert served.get("/members", Accept="text/html").headers["location"].startswith("/login?")

        served.reload(
            cors_origins=(ORIGIN,), compress=False, hsts=3600, csrf_exempt=("/page",),
            login_url="/signin",
        )  # fmt: skip
        for path in ("/page", "/svc", "/big", "/page", "/svc", "/big"):
            answer = served.get(path, Origin=ORIGIN, **{"Accept-Encoding": "gzip"})
            assert answer.headers["access-control-allow-origin"] == ORIGIN, path
            assert "strict-transport-security" not in answer.headers, path  # plain http
        assert "content-encoding" not in answer.headers  # compression off now
        assert answer.body.decode() == BIG
        assert served.send("POST", "/page").status == 200  # exempt now
        assert served.get("/members", Accept="text/html").headers["location"].startswith("/signin?")

        served.reload()  # back to the defaults
        for path in ("/page", "/svc", "/big", "/page", "/svc", "/big"):
            answer = served.get(path, Origin=ORIGIN, **{"Accept-Encoding": "gzip"})
            assert "access-control-allow-origin" not in answer.headers, path
        assert gzip.decompress(answer.body).decode() == BIG
        assert served.send("POST", "/page").status == 403
        assert served.get("/members", Accept="text/html").headers["location"].startswith("/login?")
