"""CORS over real sockets on both loops: nothing allowed by default, the site's settings and
a service's own policy, preflights answered before the method rules (204 or 403), the
``Access-Control-Allow-*`` fields on answers (error pages too), ``Vary: Origin``, and the
policy's checks of bad values. The browser's side is tests/browser/test_cors_in_a_browser.py."""

from __future__ import annotations

import pytest

from pyweb.app.cors import CORS
from pyweb.app.site import Site
from pyweb.server.config import ServerConfig
from pyweb.testing import Client, serve
from tests.helpers import write_site
from tests.security.conftest import _uvicorn

pytestmark = pytest.mark.loops("trio", "asyncio")

APP = "https://app.example"
OTHER = "https://evil.example"

SITE = {
    "api.py": """
import pyweb
from pyweb import service


@service("/items")
def items():
    return {"items": [1, 2]}


@service("/items", methods=["PUT"], csrf=False)
def put_items(name: str):
    return {"put": name}


@service("/boom")
def boom():
    raise pyweb.HTTPError(409, "taken")


@service("/own", methods=["GET", "DELETE"], csrf=False,
         cors=pyweb.CORS(["https://own.example"], credentials=True, max_age=600))
def own():
    return {"own": True}


@service("/closed", cors=pyweb.CORS())
def closed():
    return {"closed": True}
""",
    "page.py": "conn.return_('page')",
}


def preflight(client, path: str, origin: str, method: str, headers: str | None = None):
    fields = {"Origin": origin, "Access-Control-Request-Method": method}
    if headers is not None:
        fields["Access-Control-Request-Headers"] = headers
    return client.request("OPTIONS", path, headers=fields)


@pytest.fixture
def site_dir(tmp_path):
    return write_site(tmp_path / "site", SITE)


def test_nothing_is_allowed_by_default(site_dir) -> None:
    with serve(site_dir) as client:
        answer = client.get("/items", headers={"Origin": APP})
        assert answer.status == 200
        assert "access-control-allow-origin" not in answer.headers
        asked = preflight(client, "/items", APP, "PUT")
        assert asked.status == 405  # no policy: the method rules answer the OPTIONS
        assert "access-control-allow-origin" not in asked.headers


def test_the_sites_settings_allow_an_origin(site_dir) -> None:
    with serve(site_dir, cors_origins=(APP,), cors_headers=("Content-Type",)) as client:
        answer = client.get("/items", headers={"Origin": APP})
        assert answer.status == 200
        assert answer.headers["access-control-allow-origin"] == APP
        assert "access-control-allow-credentials" not in answer.headers
        assert "Origin" in answer.headers["vary"]
        stranger = client.get("/items", headers={"Origin": OTHER})
        assert "access-control-allow-origin" not in stranger.headers
        assert "Origin" in stranger.headers["vary"]  # the answer depends on the origin
        page = client.get("/page", headers={"Origin": APP})  # a script too, not only services
        assert page.headers["access-control-allow-origin"] == APP


def test_a_preflight_is_answered_before_the_method_rules(site_dir) -> None:
    with serve(site_dir, cors_origins=(APP,), cors_headers=("Content-Type",)) as client:
        asked = preflight(client, "/items", APP, "PUT", "content-type")
        assert asked.status == 204, asked.text
        assert asked.headers["access-control-allow-origin"] == APP
        assert asked.headers["access-control-allow-methods"] == "PUT"  # the PUT service's
        assert asked.headers["access-control-allow-headers"] == "content-type"
        assert "access-control-max-age" not in asked.headers
        assert "Origin" in asked.headers["vary"]
        assert asked.body == b""
        # the real request after it
        put = client.request(
            "PUT", "/items", body=b"name=ann",
            headers={"Origin": APP, "Content-Type": "application/x-www-form-urlencoded"},
        )  # fmt: skip
        assert put.status == 200 and put.json() == {"put": "ann"}
        assert put.headers["access-control-allow-origin"] == APP


@pytest.mark.parametrize(
    ("origin", "method", "headers", "why"),
    [
        (OTHER, "GET", None, "origin"),
        (APP, "DELETE", None, "method"),  # no service of /items takes DELETE
        (APP, "PUT", "x-secret", "header"),
    ],
)
def test_a_preflight_is_refused(site_dir, origin, method, headers, why) -> None:
    with serve(site_dir, cors_origins=(APP,), cors_headers=("Content-Type",)) as client:
        asked = preflight(client, "/items", origin, method, headers)
        assert asked.status == 403
        assert "access-control-allow-origin" not in asked.headers
        assert "access-control-allow-methods" not in asked.headers
        assert "Origin" in asked.headers["vary"]


def test_error_answers_carry_the_fields_too(site_dir) -> None:
    with serve(site_dir, cors_origins=(APP,)) as client:
        for method, path, status in [
            ("GET", "/boom", 409),  # HTTPError
            ("GET", "/nowhere", 404),  # the static file route's 404
            ("POST", "/items", 405),  # the method rules
            ("GET", "/items?x=%00", 400),  # a form that does not parse (_prepare)
            ("POST", "/page", 403),  # CSRF's refusal
        ]:
            answer = client.request(method, path, headers={"Origin": APP})
            assert answer.status == status, (path, answer.status)
            assert answer.headers.get("access-control-allow-origin") == APP, path
            assert "Origin" in answer.headers["vary"], path
            assert answer.headers["x-content-type-options"] == "nosniff"  # still secured


def test_a_services_own_policy_wins_over_the_sites(site_dir) -> None:
    with serve(site_dir, cors_origins=(APP,)) as client:
        own = "https://own.example"
        asked = preflight(client, "/own", own, "DELETE")
        assert asked.status == 204
        assert asked.headers["access-control-allow-origin"] == own
        assert asked.headers["access-control-allow-credentials"] == "true"
        assert asked.headers["access-control-max-age"] == "600"
        assert asked.headers["access-control-allow-methods"] == "GET, HEAD, DELETE"
        assert preflight(client, "/own", APP, "DELETE").status == 403  # not the site's
        answer = client.request("DELETE", "/own", headers={"Origin": own})
        assert answer.headers["access-control-allow-credentials"] == "true"
        closed = client.get("/closed", headers={"Origin": APP})
        assert "access-control-allow-origin" not in closed.headers  # CORS(): no origin
        assert preflight(client, "/closed", APP, "GET").status == 405


def test_any_origin(site_dir) -> None:
    with serve(site_dir, cors_origins=("*",), cors_max_age=60) as client:
        answer = client.get("/items", headers={"Origin": OTHER})
        assert answer.headers["access-control-allow-origin"] == "*"
        assert "vary" not in answer.headers  # the same answer for every origin
        asked = preflight(client, "/page", OTHER, "POST")
        assert asked.status == 204
        assert asked.headers["access-control-allow-origin"] == "*"
        assert asked.headers["access-control-max-age"] == "60"


def test_a_vary_the_answer_has_is_kept(tmp_path) -> None:
    root = write_site(
        tmp_path / "site", {"v.py": "conn.return_('v', headers=[('Vary', 'Accept')])"}
    )
    with serve(root, cors_origins=(APP,)) as client:
        assert client.get("/v", headers={"Origin": APP}).headers["vary"] == "Accept, Origin"


def test_under_an_asgi_server(site_dir, loop) -> None:
    """The same guard under uvicorn (pyweb.asgi serves the same Site)."""
    if loop != "asyncio":
        pytest.skip("an ASGI server runs the application on asyncio")
    servers = _uvicorn(site_dir, f"cors_origins=[{APP!r}], cors_headers=['Content-Type']")
    base = next(servers)
    try:
        client = Client(base)
        asked = preflight(client, "/items", APP, "PUT", "content-type")
        assert asked.status == 204
        assert asked.headers["access-control-allow-origin"] == APP
        assert preflight(client, "/items", OTHER, "PUT").status == 403
        for path in ("/items", "/nowhere"):
            answer = client.get(path, headers={"Origin": APP})
            assert answer.headers["access-control-allow-origin"] == APP, path
            assert "Origin" in answer.headers["vary"]
        client.close()
    finally:
        servers.close()  # (the generator's finally stops uvicorn)


def test_settings_reach_the_site(site_dir) -> None:
    config = ServerConfig(
        cors_origins=(APP,), cors_methods=("get", "put"), cors_headers=("X-A",),
        cors_expose_headers=("X-Total",), cors_credentials=True, cors_max_age=5,
    )  # fmt: skip
    site = Site.from_settings(site_dir, config)
    assert site.cors == CORS(
        [APP], methods=["GET", "PUT"], headers=["x-a"], expose=["x-total"],
        credentials=True, max_age=5,
    )  # fmt: skip
    assert site.cors is not None and site.cors.methods == ("GET", "HEAD", "PUT")


@pytest.mark.loop_free
@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"origins": ["*"], "credentials": True}, "credentials"),
        ({"origins": ["https://a.example/"]}, "https://a.example/"),
        ({"origins": ["a.example"]}, "a.example"),
        ({"origins": ["null"]}, "null"),
        ({"origins": ["*", APP]}, "alone"),
        ({"origins": [APP], "methods": ["G T"]}, "G T"),
        ({"origins": [APP], "headers": ["*"], "credentials": True}, "wildcard"),
        ({"origins": [APP], "max_age": -1}, "-1"),
    ],
)
def test_a_bad_policy_is_refused_naming_the_value(kwargs, named) -> None:
    with pytest.raises(ValueError, match=named.replace("*", r"\*")):
        CORS(**kwargs)


def test_a_service_takes_only_a_policy(tmp_path) -> None:
    from pyweb import service

    with pytest.raises(TypeError, match="'https://a.example'"):
        service("/x", cors="https://a.example")(lambda: None)  # type: ignore[arg-type]
