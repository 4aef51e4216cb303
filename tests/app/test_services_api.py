"""JSON services that behave like an API: one service per (path, method), safe default
methods, ``pyweb.HTTPError``, JSON errors for API clients, 401 for a stranger that is not
a browser, and a loud duplicate. Over real sockets on both loops."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyweb
from pyweb.app.apierrors import HTTPError, accept_weights, wants_html, wants_json
from pyweb.app.site import Site, SiteError
from pyweb.testing import serve

from ..csrf_helpers import TOKEN_PAGE, csrf_token, token_header
from .test_sessions_auth import SITE as LOGIN_SITE

pytestmark = pytest.mark.loops("trio", "asyncio")

JSON = {"Accept": "application/json"}

API = """
from dataclasses import dataclass

import pyweb
from pyweb import auth, service
from pyweb.forms import Nat

ITEMS = {1: "bread"}


@dataclass
class NewItem:
    name: str


@service("/api/items")
def list_items():
    return {"items": ITEMS}


@service("/api/items", methods=["POST"])
def add_item(name: str):
    return {"added": name}


@service("/api/items/{id}")
def one_item(id: Nat):
    if id not in ITEMS:
        raise pyweb.HTTPError(404, f"no item {id}")
    return {"id": id, "name": ITEMS[id]}


@service("/api/items/{id}", methods=["DELETE"], csrf=False)
def delete_item(id: Nat):
    return {"deleted": id}


@service("/api/json")
def takes_json(item: NewItem):
    return {"got": item.name}


@service("/api/teapot")
def teapot():
    raise pyweb.HTTPError(418, "short and stout", headers=[("X-Pot", "tea")])


@service("/api/plain")
def plain():
    raise pyweb.HTTPError(503)


@service("/api/crash")
def crash():
    raise KeyError("secret-detail")


@service("/api/mul")
def mul(a: int, b: int):
    return {"product": a * b}


@service("/api/me")
@auth.login_required
def me():
    return {"user": auth.current_user()}
"""

SITE = {
    **LOGIN_SITE,
    **TOKEN_PAGE,
    "api.py": API,
    "gone.py": """
        import pyweb
        raise pyweb.HTTPError(410, "this page is gone <for good>")
    """,
}


@pytest.fixture(scope="module")
def api(tmp_path_factory, loop):
    from tests.helpers import write_site

    root = write_site(tmp_path_factory.mktemp("api") / "site", SITE)
    with serve(root, loop=loop) as client:
        yield client


# -- one service per (path, method) ---------------------------------------------------------


def test_a_get_and_a_post_service_share_a_path(api):
    assert api.get("/api/items").json() == {"items": {"1": "bread"}}
    added = api.post("/api/items", {"name": "milk"}, headers=token_header(api))
    assert added.json() == {"added": "milk"}
    head = api.head("/api/items")
    assert head.status == 200 and head.body == b""
    refused = api.request("PUT", "/api/items")
    assert refused.status == 405 and refused.headers["allow"] == "GET, HEAD, POST"
    as_json = api.request("DELETE", "/api/items", headers=JSON)
    assert as_json.json() == {"error": "DELETE is not allowed here", "status": 405}
    assert as_json.headers["allow"] == "GET, HEAD, POST"


def test_the_post_service_of_a_shared_path_still_needs_the_token(api):
    assert api.post("/api/items", {"name": "x"}).status == 403


def test_services_with_parameters_share_a_pattern_by_method(api):
    assert api.get("/api/items/1").json() == {"id": 1, "name": "bread"}
    assert api.request("DELETE", "/api/items/1").json() == {"deleted": 1}
    refused = api.request("PATCH", "/api/items/1")
    assert refused.status == 405 and refused.headers["allow"] == "GET, HEAD, DELETE"


def test_by_default_a_service_answers_get_only_and_a_json_one_post_only(api):
    assert api.get("/api/mul?a=3&b=4").json() == {"product": 12}
    posted = api.post("/api/mul", {"a": "3", "b": "4"}, headers=token_header(api))
    assert posted.status == 405 and posted.headers["allow"] == "GET, HEAD"
    assert api.get("/api/json").status == 405
    assert api.post("/api/json", json={"name": "tea"}).status == 403  # POST: the token
    ok = api.post("/api/json", json={"name": "tea"}, headers=token_header(api))
    assert ok.json() == {"got": "tea"}


# -- HTTPError ----------------------------------------------------------------------------


def test_http_error_answers_its_status_json_or_html(api):
    missing = api.get("/api/items/7", headers=JSON)
    assert missing.status == 404
    assert missing.headers["content-type"] == "application/json"
    assert missing.json() == {"error": "no item 7", "status": 404}
    page = api.get("/api/items/7")  # a browser
    assert page.status == 404 and page.headers["content-type"].startswith("text/html")
    assert "no item 7" in page.text
    pot = api.get("/api/teapot", headers=JSON)
    assert (pot.status, pot.json()["error"], pot.headers["x-pot"]) == (418, "short and stout", "tea")
    assert api.get("/api/plain", headers=JSON).json()["error"] == "Service Unavailable"


def test_http_error_from_a_page_script_is_escaped(api):
    page = api.get("/gone")
    assert page.status == 410
    assert "this page is gone &lt;for good&gt;" in page.text
    assert api.get("/gone", headers=JSON).json()["error"] == "this page is gone <for good>"


def test_http_error_refuses_what_is_not_an_error_status():
    for status in (200, 302, 399, 600, True, "404"):
        with pytest.raises(ValueError, match=repr(status)):
            HTTPError(status)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="CR, LF"):
        HTTPError(400, headers=[("X-A", "b\r\nSet-Cookie: x=1")])
    assert pyweb.HTTPError is HTTPError and str(HTTPError(404)) == "Not Found"


# -- JSON errors -------------------------------------------------------------------------------


def test_bad_query_parameters_are_json_for_an_api_client(api):
    bad = api.get("/api/mul?a=x", headers=JSON)
    assert bad.status == 400 and bad.headers["content-type"] == "application/json"
    fields = {e["field"]: e for e in bad.json()["errors"]}
    assert fields["a"]["value"] == "x" and "whole number" in fields["a"]["expected"]
    assert fields["b"]["value"] is None
    assert api.get("/api/mul?a=x").headers["content-type"].startswith("text/html")


def test_a_crash_is_json_without_its_detail_in_production(api):
    crash = api.get("/api/crash", headers=JSON)
    assert crash.status == 500 and crash.json() == {
        "error": "Internal Server Error",
        "status": 500,
    }
    assert "secret-detail" not in crash.text


def test_a_crash_shows_its_detail_in_dev(site):
    root = site({"api.py": API})
    with serve(root, dev=True) as client:
        crash = client.get("/api/crash", headers=JSON)
        assert crash.status == 500 and "secret-detail" in crash.json()["error"]


def test_json_is_chosen_by_weight():
    assert accept_weights("text/html;q=0.5, application/json") == {
        "text/html": 0.5,
        "application/json": 1.0,
    }
    assert accept_weights("a/b;q=x, c/d;q=2") == {"a/b": 0.0, "c/d": 0.0}

    class Request:
        def __init__(self, **headers: str) -> None:
            self.headers = {k.replace("_", "-"): v for k, v in headers.items()}

        def header(self, name: str) -> str | None:
            return self.headers.get(name)

    assert wants_json(Request(accept="application/json"))
    assert wants_json(Request(accept="text/html;q=0.5, application/json"))
    assert not wants_json(Request(accept="text/html, application/json;q=0.9"))
    assert wants_json(Request(accept="application/problem+json"))
    assert wants_json(Request(content_type="application/json; charset=utf-8"))
    assert not wants_json(Request(accept="*/*")) and not wants_html(Request(accept="*/*"))
    assert wants_html(Request()) and wants_html(Request(accept="text/html,*/*;q=0.8"))


@given(st.lists(st.tuples(st.sampled_from(
    ["text/html", "application/json", "*/*", "image/png", "application/xhtml+xml", "x/y+json"]
), st.sampled_from(["", ";q=0", ";q=0.3", ";q=1", ";q=bad"])), max_size=5))
def test_a_client_is_never_both_a_browser_and_an_api_client(ranges):
    accept = ", ".join(media + q for media, q in ranges)

    class Request:
        def header(self, name: str) -> str | None:
            return accept if name == "accept" else None

    assert not (wants_json(Request()) and wants_html(Request()))


# -- login_required ------------------------------------------------------------------------------


def test_login_required_answers_401_to_an_api_client_303_to_a_browser(api):
    browser = api.get("/api/me", headers={"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
    assert browser.status == 303 and browser.headers["location"] == "/login?next=/api/me"
    assert api.get("/api/me").status == 303  # no Accept at all: a browser, as before
    for accept in ("application/json", "*/*"):
        refused = api.get("/api/me", headers={"Accept": accept})
        assert refused.status == 401, accept
        assert refused.headers["www-authenticate"].startswith('Cookie realm="pyweb"')
    as_json = api.get("/api/me", headers=JSON).json()
    assert as_json["status"] == 401 and "/login" in as_json["error"]
    token = csrf_token(api, "/login")
    api.post("/login", {"user": "alice", "password": "wonderland", "csrf_token": token})
    assert api.get("/api/me", headers=JSON).json() == {"user": "alice"}
    api.get("/logout")


# -- a duplicate is loud -----------------------------------------------------------------------

CLASH = {
    "a.py": """
        from pyweb import service

        @service("/same", methods=["GET", "POST"])
        def one():
            return "one"
    """,
    "b.py": """
        from pyweb import service

        @service("/same", methods=["POST"])
        def two():
            return "two"
    """,
}


def test_a_duplicate_method_is_loud_in_dev_and_stops_production(site, caplog):
    root = site(CLASH)
    with caplog.at_level(logging.ERROR, logger="pyweb.site"):
        Site(root, dev=True)
    logged = [r.getMessage() for r in caplog.records if r.name == "pyweb.site"]
    assert any("/same" in m and "POST" in m and "one service per method" in m for m in logged)
    with pytest.raises(SiteError, match="one service per method"):
        Site(root)
    with serve(root, dev=True) as client:
        page = client.get("/same")
        assert page.status == 500 and "one service per method" in page.text
        assert "pyweb_site_services.b.two" in page.text


def test_bad_methods_are_refused_at_import():
    from pyweb import service

    with pytest.raises(TypeError, match="list of names"):
        service("/x", methods="POST")(lambda: None)
    with pytest.raises(ValueError, match="not an HTTP method"):
        service("/x", methods=["GE T"])(lambda: None)
    with pytest.raises(ValueError, match="answers nothing"):
        service("/x", methods=[])(lambda: None)
    svc = service("/x", methods=["get"])(lambda: None)
    assert svc.methods == ("GET", "HEAD")


def test_the_json_error_body_is_valid_json_for_any_message():
    from pyweb.app.apierrors import json_error

    response = json_error(400, 'a "quoted"\nmessage \u2603')
    assert json.loads(response.body) == {"error": 'a "quoted"\nmessage \u2603', "status": 400}


def test_dev_mode_reloads_the_second_module_of_a_shared_path(site):
    from .conftest import touch_later

    root = site(
        {
            "reads.py": """
                from pyweb import service

                @service("/notes")
                def read():
                    return "read v1"
            """,
            "writes.py": """
                from pyweb import service

                @service("/notes", methods=["PUT"], csrf=False)
                def write():
                    return "write v1"
            """,
        }
    )
    with serve(root, dev=True) as client:
        assert client.request("PUT", "/notes").text == "write v1"
        writes = root / "writes.py"
        writes.write_text(writes.read_text().replace("write v1", "write v2"))
        touch_later(writes)
        assert client.request("PUT", "/notes").text == "write v2"
        assert client.get("/notes").text == "read v1"


def test_a_duplicate_added_while_serving_in_dev_is_said_in_the_error_log(site):
    import io

    from tests.helpers import until

    root = site({"a.py": CLASH["a.py"]})
    log = io.StringIO()
    with serve(root, dev=True, error_log=log) as client:
        assert client.get("/same").text == "one"
        (root / "b.py").write_text(CLASH["b.py"].replace("\n        ", "\n").strip() + "\n")
        page = client.get("/same")  # dev mode loads the new file first
        assert page.status == 500 and "one service per method" in page.text
        until(lambda: "one service per method" in log.getvalue(), "the error log's line")
        assert "b.py" in log.getvalue()


_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"]


@given(st.lists(st.tuples(st.sampled_from(["/a", "/b"]),
                          st.lists(st.sampled_from(_METHODS), min_size=1, max_size=3)),
                max_size=6))
def test_binding_gives_each_path_and_method_one_service(declared):
    from pyweb.app.services import Service, bind

    table: dict[str, Service] = {}
    owner: dict[tuple[str, str], Service] = {}
    for index, (path, methods) in enumerate(declared):
        def func() -> str:
            return "x"

        func.__name__ = f"s{index}"
        svc = Service(func, path, methods)
        claimed = [(path, m) for m in svc.methods if (path, m) in owner]
        clash = bind(table, svc)
        assert (clash is not None) == bool(claimed), (declared, clash)
        if clash is None:
            owner.update({(path, m): svc for m in svc.methods})
    for (path, method), svc in owner.items():
        assert table[path].for_method(method) is svc
        assert method in table[path].allow.split(", ")
    for path, first in table.items():
        for method in _METHODS + ["HEAD", "OPTIONS"]:
            assert (first.for_method(method) is None) == ((path, method) not in owner)
