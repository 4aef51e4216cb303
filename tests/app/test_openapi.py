"""``/_pyweb/openapi.json`` and ``/_pyweb/openapi`` over real sockets on both loops: the
document validated by openapi-spec-validator, what it says about each kind of parameter,
body and answer, the readable page (no script, nothing loaded from elsewhere), and who may
see them (development mode, or the ``openapi`` setting; loopback clients only)."""

from __future__ import annotations

import re

import pytest

from pyweb.app.site import Site
from pyweb.testing import serve
from tests.hardening.test_proxies import OUTSIDE, raw_get
from tests.helpers import write_site

validate = pytest.importorskip("openapi_spec_validator").validate

pytestmark = pytest.mark.loops("trio", "asyncio")

SITE = {
    "api.py": '''
import enum
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import pyweb
from pyweb import auth, service
from pyweb.forms import Email, Nat


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Tag:
    name: str


@dataclass
class NewTodo:
    """A to-do to add."""

    title: str
    priority: int = 0
    done: bool = False
    due: str | None = None
    tags: list[Tag] = field(default_factory=list)
    kind: Literal["work", "home"] = "home"


class Patch(TypedDict, total=False):
    title: str
    weight: float


@service("/todos")
def todos(page: Nat = 0, q: str | None = None, colour: Colour | None = None) -> dict:
    """The to-do list.

    A page of it, filtered by ``q``."""
    return {"todos": [], "page": page}


@service("/todos", methods=["POST"])
def add(todo: NewTodo) -> dict[str, int]:
    """Add a to-do."""
    return {"id": 1}


@service("/todos/{id}")
def one(id: Nat) -> str:
    return f"<p>to-do {id}</p>"


@service("/todos/{id}", methods=["PATCH"], csrf=False)
def patch(id: Nat, change: Patch):
    return {"id": id}


@service("/subscribe", methods=["POST"])
def subscribe(email: Email, conn):
    return "ok"


@auth.login_required
@service("/mine")
def mine():
    return {"mine": []}
''',
    "page.py": "conn.return_('a page is not a service')",
}


@pytest.fixture
def site_dir(tmp_path):
    return write_site(tmp_path / "site", SITE)


@pytest.fixture
def doc(site_dir):
    with serve(site_dir, dev=True) as client:
        answer = client.get("/_pyweb/openapi.json")
        assert answer.status == 200
        assert answer.content_type == "application/json"
        return answer.json()


def test_the_document_is_valid_openapi_3_1(doc) -> None:
    assert doc["openapi"] == "3.1.0"
    validate(doc)  # raises, naming the first thing wrong


def test_one_operation_per_service(doc) -> None:
    operations = {(path, m) for path, item in doc["paths"].items() for m in item}
    assert operations == {
        ("/todos", "get"),
        ("/todos", "post"),
        ("/todos/{id}", "get"),
        ("/todos/{id}", "patch"),
        ("/subscribe", "post"),
        ("/mine", "get"),
    }  # fmt: skip  (HEAD is a GET without the body; a page is not a service)
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert len(set(ids)) == len(ids)


def test_query_and_path_parameters(doc) -> None:
    get = doc["paths"]["/todos"]["get"]
    assert get["summary"] == "The to-do list."
    assert "filtered by" in get["description"]
    params = {p["name"]: p for p in get["parameters"]}
    assert params["page"] == {
        "name": "page", "in": "query", "required": False,
        "schema": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
    }  # fmt: skip
    assert params["q"]["schema"]["type"] == "string" and not params["q"]["required"]
    assert params["colour"]["schema"] == {"type": "string", "enum": ["red", "blue"]}
    one = doc["paths"]["/todos/{id}"]["get"]
    assert one["parameters"] == [
        {
            "name": "id",
            "in": "path",
            "required": True,
            "schema": {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
        }
    ]
    assert "404" in one["responses"]
    assert one["responses"]["200"]["content"] == {"text/html": {"schema": {"type": "string"}}}


def test_json_bodies_from_dataclasses_and_typeddicts(doc) -> None:
    post = doc["paths"]["/todos"]["post"]
    assert post["requestBody"]["required"] is True
    ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schemas = doc["components"]["schemas"]
    new = schemas[ref.rsplit("/", 1)[-1]]
    assert new["required"] == ["title"]
    assert new["additionalProperties"] is False
    assert new["description"] == "A to-do to add."
    props = new["properties"]
    assert props["priority"] == {"type": "integer"}
    assert props["done"] == {"type": "boolean"}
    assert props["due"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert props["tags"] == {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}}
    assert props["kind"] == {"type": "string", "enum": ["work", "home"]}
    assert schemas["Patch"]["properties"] == {
        "title": {"type": "string"},
        "weight": {"type": "number"},
    }
    assert "required" not in schemas["Patch"]  # total=False
    assert post["responses"]["200"]["content"]["application/json"]["schema"] == {
        "type": "object", "additionalProperties": {"type": "integer"},
    }  # fmt: skip
    assert post["security"] == [{"csrf": []}] and "403" in post["responses"]
    assert "security" not in doc["paths"]["/todos/{id}"]["patch"]  # csrf=False


def test_form_bodies_and_errors(doc) -> None:
    post = doc["paths"]["/subscribe"]["post"]
    form = post["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert form["required"] == ["email"] and form["additionalProperties"] is False
    email = form["properties"]["email"]
    assert email["type"] == "string" and email["format"] == "email"
    pattern = re.compile(email["pattern"])  # (the same in Python's re as in ECMA-262 here)
    assert pattern.search("ann@example.com") and not pattern.search("ann@example.123")
    text = doc["paths"]["/todos"]["get"]["parameters"][1]["schema"]["pattern"]
    assert re.search(text, " a ") and not re.search(text, "   ") and not re.search(text, "a\x01")
    bad = post["responses"]["400"]["content"]["application/json"]["schema"]
    assert bad == {"$ref": "#/components/schemas/Error"}
    assert doc["paths"]["/mine"]["get"]["security"] == [{"session": []}]
    assert "401" in doc["paths"]["/mine"]["get"]["responses"]


def test_what_the_document_says_is_what_the_site_does(site_dir) -> None:
    """A request the document calls bad gets the error it documents (a small, hand-made
    check of the document against the server; schemathesis does this at length)."""
    with serve(site_dir, dev=True) as client:
        json_client = {"Accept": "application/json"}
        bad = client.get("/todos?page=-1", headers=json_client)
        assert bad.status == 400 and set(bad.json()) >= {"error", "status", "errors"}
        assert client.get("/todos/abc", headers=json_client).status == 404
        extra = client.request(
            "POST", "/todos", body=b'{"title": "x", "colour": 1}',
            headers={"Content-Type": "application/json", "X-CSRF-Token": "x"},
        )  # fmt: skip
        assert extra.status == 403  # the CSRF token first: the document says it is needed


def test_the_readable_page(site_dir) -> None:
    with serve(site_dir, dev=True) as client:
        page = client.get("/_pyweb/openapi")
        assert page.status == 200 and page.content_type.startswith("text/html")
        text = page.text
        assert "<script" not in text.lower()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing from elsewhere
        for needle in (
            "<code>/todos/{id}</code>",
            "The to-do list.",
            "NewTodo",
            ">PATCH<",
            "openapi.json",
        ):
            assert needle in text, needle
        assert page.headers["x-content-type-options"] == "nosniff"  # a page like the others


def test_production_answers_only_with_the_setting(site_dir) -> None:
    with serve(site_dir) as client:
        assert client.get("/_pyweb/openapi.json").status == 404
        assert client.get("/_pyweb/openapi").status == 404
    with serve(Site(site_dir, openapi=True)) as client:
        assert client.get("/_pyweb/openapi.json").status == 200
        assert client.get("/_pyweb/openapi").status == 200


def test_only_the_operator_sees_it(site_dir) -> None:
    with serve(Site(site_dir, openapi=True), host="0.0.0.0") as client:
        port = client.server.port  # type: ignore[attr-defined]
        assert raw_get(port, "/_pyweb/openapi.json")[0] == 200  # loopback: the operator
        visitor = "X-Forwarded-For: 203.0.113.9\r\n"  # behind the (trusted, loopback) proxy
        assert raw_get(port, "/_pyweb/openapi.json", visitor)[0] == 403
        assert raw_get(port, "/%5Fpyweb/openapi", visitor)[0] == 403
        if OUTSIDE is not None:  # a real non-loopback client
            assert raw_get(port, "/_pyweb/openapi", source=OUTSIDE)[0] == 403


def test_schemathesis_finds_the_site_as_the_document_says(site_dir) -> None:
    """schemathesis makes requests from the document (valid ones, each parameter and field
    of its type) and checks each answer against it: its status documented, its media type
    and its JSON schema, no 5xx, and a valid request not refused with a 400."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings

    with serve(site_dir, dev=True) as client:
        schema = schemathesis.openapi.from_url(client.base_url + "/_pyweb/openapi.json")
        tried = []
        for result in schema.get_all_operations():
            operation = result.ok()

            @given(case=operation.as_strategy())
            @settings(
                max_examples=25,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case) -> None:  # type: ignore[no-untyped-def]
                case.call_and_validate(base_url=client.base_url)

            check()  # raises schemathesis's report of what disagreed
            tried.append(operation.label)
    assert len(tried) == 6, tried
