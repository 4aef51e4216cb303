"""Path parameters, traps and JSON bodies, over real sockets (pyweb.app.routes, traps,
jsonbody)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyweb.app.routes import Router, script_pattern, service_pattern
from pyweb.app.site import Site, SiteError, check_site
from pyweb.testing import serve

from ..csrf_helpers import TOKEN_PAGE, token_header

pytestmark = pytest.mark.loops("trio", "asyncio")

TODO = """
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import pyweb
from pyweb import service
from pyweb.forms import Nat

TODOS = {1: "buy milk", 2: "write tests"}


@service("/todo/{id}")
def show(id: Nat):
    return {"id": id, "title": TODOS.get(id)}


@service("/todo/new")
def new_form():
    return "the form for a new to-do"


@service("/user/{name}/todo/{id}")
def users_todo(name: str, id: Nat):
    return {"name": name, "id": id}


@dataclass
class Tag:
    label: str


@dataclass
class NewTodo:
    title: str
    priority: int = 0
    done: bool = False
    tags: list[Tag] = field(default_factory=list)
    kind: Literal["home", "work"] = "home"


class Move(TypedDict):
    to: int


@service("/api/todos", methods=["POST"], csrf=False)
def add(todo: NewTodo):
    return {"title": todo.title, "priority": todo.priority, "tags": [t.label for t in todo.tags]}


@service("/api/move/{id}", methods=["POST"], csrf=False)
def move(id: Nat, body: Move):
    return {"id": id, "to": body["to"]}


@service("/api/raw", methods=["POST"], csrf=False)
async def raw(conn):
    return {"got": await conn.json()}


ORDER = []


@pyweb.trap("/admin/*")
def first(conn):
    conn.ctx  # a trap gets the request's conn
    if conn.query.get("let") != "me":
        conn.return_("admins only", status=403)


@pyweb.trap("/*")
async def everyone(conn):
    if conn.query.get("stop") == "yes":
        return {"stopped by": "the second trap"}
"""

SITE = {
    "todos.py": TODO,
    "item/[id].py": """
        from pyweb.forms import get_nat
        conn.return_(f"item {get_nat('id')} path_params={conn.path_params} form={conn.form.get('id')}")
    """,
    "item/special.py": "conn.return_('the special item')\n",
    "item/readme.txt": "a static file wins over [id]\n",
    "[user]/profile.py": "conn.return_(f'profile of {conn.path_params[\"user\"]}')\n",
    "admin/panel.py": "conn.return_('the admin panel')\n",
    "admin/logo.txt": "logo\n",
    "open.py": "conn.return_('open')\n",
    **TOKEN_PAGE,
}


@pytest.fixture
def client(site):
    root = site(SITE)
    with serve(root, dev=True) as client:
        yield client


def test_service_path_parameters_are_parsed_by_the_getter(client):
    assert client.get("/todo/2").json() == {"id": 2, "title": "write tests"}
    assert client.get("/todo/new").text == "the form for a new to-do"  # exact names win
    assert client.get("/user/ada/todo/7").json() == {"name": "ada", "id": 7}
    for path in ("/todo/x", "/todo/-1", "/todo/99999999999", "/user/ada/todo/y"):
        response = client.get(path)
        assert response.status == 404, path
        assert "is not a natural number" in response.text or "natural" in response.text
    assert client.get("/todo/1/more").status == 404
    assert client.get("/todo/").status == 404  # an empty segment is no parameter


def test_script_path_parameters_and_getters_read_them(client):
    response = client.get("/item/5?id=9")
    assert response.text == "item 5 path_params={'id': '5'} form=5"  # the path wins
    assert client.get("/item/special").text == "the special item"
    assert client.get("/item/readme.txt").text == "a static file wins over [id]\n"
    assert client.get("/ada/profile").text == "profile of ada"
    assert client.get("/item/abc").status == 404  # the getter refuses it: no such item
    assert client.get("/item/[id]").status == 404  # the file's own name is not a URL


def test_traps_run_in_order_before_pages_services_and_files(client):
    assert client.get("/admin/panel").status == 403
    assert client.get("/admin/logo.txt").text == "admins only"
    assert client.get("/admin").status == 403
    assert client.get("/admin/panel?let=me").text == "the admin panel"
    assert client.get("/admin/logo.txt?let=me").text == "logo\n"
    # the second trap ("/*") runs after the first lets the request through
    assert client.get("/open?stop=yes").json() == {"stopped by": "the second trap"}
    assert client.get("/admin/panel?let=me&stop=yes").json() == {"stopped by": "the second trap"}
    assert client.get("/todo/1?stop=yes").json() == {"stopped by": "the second trap"}
    assert client.get("/open").text == "open"


def test_a_trap_runs_after_the_csrf_check(client):
    response = client.post("/admin/panel?let=me", {"x": "1"})
    assert response.status == 403 and "CSRF" in response.text
    ok = client.post("/admin/panel?let=me", {"x": "1"}, headers=token_header(client))
    assert ok.text == "the admin panel"


def test_json_body_read_into_a_dataclass(client):
    ok = client.post("/api/todos", json={"title": "t", "priority": 2, "tags": [{"label": "a"}]})
    assert ok.json() == {"title": "t", "priority": 2, "tags": ["a"]}
    assert client.post("/api/move/3", json={"to": 4}).json() == {"id": 3, "to": 4}


def test_every_bad_field_in_one_400_json_or_html(client):
    bad = {
        "title": 5,
        "priority": "high",
        "done": 1,
        "tags": [{"label": 1}, "x"],
        "extra": 0,
        "kind": "play",
    }
    response = client.post("/api/todos", json=bad, headers={"Accept": "application/json"})
    assert response.status == 400
    fields = {e["field"]: e["error"] for e in response.json()["errors"]}
    assert set(fields) == {"title", "priority", "done", "tags[0].label", "tags[1]", "extra", "kind"}
    assert "expected a string" in fields["title"] and "no such field" in fields["extra"]
    missing = client.post("/api/todos", json={}, headers={"Accept": "application/json"})
    assert missing.json()["errors"] == [{"field": "title", "error": "missing"}]
    # A JSON body is an API client's, whatever it accepts: its errors are JSON too.
    plain = client.post("/api/todos", json=bad)
    assert plain.status == 400 and plain.headers["content-type"] == "application/json"
    assert "tags[0].label" in {e["field"] for e in plain.json()["errors"]}


def test_json_syntax_errors_name_the_position_and_other_types_are_415(client):
    response = client.post(
        "/api/raw", b'{"a": [1,\n 2,,]}', headers={"Content-Type": "application/json"}
    )
    assert response.status == 400
    assert "line 2, column 4" in response.text
    wrong = client.post(
        "/api/raw", b"a=1", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert wrong.status == 415 and "application/json" in wrong.text
    assert client.post(
        "/api/raw", b"[1, 2]", headers={"Content-Type": "application/json; charset=utf-8"}
    ).json() == {"got": [1, 2]}
    as_json = client.post(
        "/api/raw", b"{", headers={"Content-Type": "application/json", "Accept": "application/json"}
    )
    assert as_json.status == 400 and "error" in as_json.json()


def test_json_body_is_bounded_by_the_body_limit(site):
    from pyweb.protocol.parser import Limits

    root = site(SITE)
    with serve(root, limits=Limits(max_body=100)) as client:
        response = client.post("/api/raw", json={"big": "x" * 1000})
        assert response.status == 413


def test_ambiguous_routes_are_a_check_error_and_stop_production(site):
    root = site(
        {
            "a.py": """
                from pyweb import service

                @service("/todo/{id}")
                def one(id: str):
                    return id
            """,
            "todo/[item].py": "conn.return_('two')\n",
        }
    )
    _, problems = check_site(root)
    assert any("ambiguous routes" in str(p) for p in problems)
    with pytest.raises(SiteError, match="ambiguous"):
        Site(root)


def test_bad_path_patterns_are_refused():
    with pytest.raises(ValueError, match="whole path segment"):
        service_pattern("/todo/x{id}")
    with pytest.raises(ValueError, match="twice"):
        service_pattern("/a/{id}/{id}")
    with pytest.raises(TypeError, match="no parameter 'id'"):
        from pyweb.app.services import Service

        Service(lambda: None, "/todo/{id}", ["GET"])


segment = st.text(alphabet="abcxyz0123", min_size=1, max_size=3)


@pytest.mark.loop_free
@given(
    st.lists(
        st.lists(st.one_of(segment, st.just(None)), min_size=1, max_size=4), min_size=1, max_size=6
    ),
    st.lists(segment, min_size=1, max_size=4),
)
def test_the_most_specific_route_wins(shapes, path_segments):
    """Whatever the order routes are added in, the match is the route with a literal where
    the others have parameters, leftmost first; and it really matches the path."""
    router = Router()
    seen = set()
    for shape in shapes:
        text = "/" + "/".join(s if s is not None else f"{{p{i}}}" for i, s in enumerate(shape))
        pattern = service_pattern(text)
        if pattern is None or pattern.literals in seen:
            continue
        seen.add(pattern.literals)
        router.add(pattern, text)
    path = "/" + "/".join(path_segments)
    found = router.match(path)
    candidates = [p for p, _ in router._routes if p.match(path.split("/")) is not None]
    if found is None:
        assert candidates == []
        return
    pattern, _, params = found
    assert pattern.match(path.split("/")) == params
    assert all(pattern.rank <= other.rank for other in candidates)


@pytest.mark.loop_free
def test_script_pattern_of_a_folder():
    pattern = script_pattern("[user]/todo/[id]")
    assert pattern is not None and pattern.names == ("user", "id")
    assert pattern.match("/ada/todo/3".split("/")) == {"user": "ada", "id": "3"}


def test_a_changed_parameter_script_is_recompiled_in_dev(site):
    from .conftest import touch_later

    root = site({"item/[id].py": "conn.return_('one ' + conn.path_params['id'])\n"})
    with serve(root, dev=True) as client:
        assert client.get("/item/4").text == "one 4"
        page = root / "item" / "[id].py"
        page.write_text("conn.return_('two ' + conn.path_params['id'])\n")
        touch_later(page)
        assert client.get("/item/4").text == "two 4"


def test_a_file_served_before_is_served_again_and_routing_resumes_when_it_goes(tmp_path):
    """The site remembers paths a static file answered (production); the routing that
    chose the file is skipped until the file goes, then a pattern route may answer."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "svc.py").write_text(
        "from pyweb import service\n\n"
        "@service('/files/{name}')\n"
        "def by_name(name: str):\n"
        "    return f'no file {name}'\n"
    )
    (root / "files").mkdir()
    (root / "files" / "a.txt").write_text("the file")
    (root / "about").write_text("a file without a dot")
    (root / "templates").mkdir()
    with serve(Site(root)) as client:
        for _ in range(2):
            r = client.get("/files/a.txt")
            assert (r.status, r.text) == (200, "the file")
            assert r.headers["x-content-type-options"] == "nosniff"
            assert client.head("/files/a.txt").status == 200
            assert client.post("/files/a.txt", {}).status in (403, 405)
        (root / "files" / "a.txt").unlink()
        r = client.get("/files/a.txt")
        assert (r.status, r.text) == (200, "no file a.txt")
        assert client.get("/about").status == 404  # no suffix: not content (static.CONTENT)
        (root / "templates" / "about.html").write_text("the template")
        assert client.get("/about").text == "the template"  # a template added later wins
