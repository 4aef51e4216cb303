"""Services (Hop §2.1 define-service, with types): typed parameters, one 400 page, routing."""

from __future__ import annotations

import html

import pytest
import trio

from pyweb.app.services import Service, service
from pyweb.app.site import check_site
from pyweb.testing import serve

from ..csrf_helpers import TOKEN_PAGE, token_header

pytestmark = pytest.mark.loops("trio", "asyncio")

SERVICES = """
from __future__ import annotations   # string annotations must work too

import datetime
from typing import Literal

from pyweb import qq, service
from pyweb.forms import Email, Nat
from pyweb.html import P
from pyweb.protocol.response import Response


@service(methods=["GET", "POST"])
async def add(a: int, b: int):
    return f"{a + b}"


@service("/typed")
async def typed(n: Nat, email: Email, when: datetime.date, size: Literal["s", "m", "l"] = "m",
                note: str | None = None, ratio: float = 1.5, ok: bool = False):
    return {"n": n, "email": email, "when": when.isoformat(), "size": size, "note": note,
            "ratio": ratio, "ok": ok}


@service("/node")
async def node(name: str):
    return P("Hello, ", name)


@service("/quot")
def quot(name: str):          # a plain function is fine too
    return qq("<p>Hello, {name}</p>")


@service("/raw")
async def raw():
    return Response(201, [("Content-Type", "text/plain")], b"created")


@service("/with_conn", methods=["POST"])
async def with_conn(conn, x: int = 0):
    conn.set_cookie("x", str(x))
    return f"{conn.method} {x}"


@service("/both")
async def both(conn):
    conn.return_("first")
    return "second"


@service("/none")
async def none():
    pass


@service("/getonly", methods=["GET"])
async def getonly():
    return "ok"
"""


@pytest.fixture
def client(site):
    root = site({"api.py": SERVICES, **TOKEN_PAGE})
    with serve(root, dev=True) as client:
        yield client


def test_typed_parameters(client):
    assert client.get("/add?a=2&b=40").text == "42"
    token = token_header(client)
    assert client.post("/add", {"a": "-2", "b": "1"}, headers=token).text == "-1"
    data = client.get("/typed?n=7&email=ada@example.org&when=2024-02-29").json()
    assert data == {
        "n": 7,
        "email": "ada@example.org",
        "when": "2024-02-29",
        "size": "m",
        "note": None,
        "ratio": 1.5,
        "ok": False,
    }
    data = client.get("/typed?n=7&email=a@b.co&when=2024-01-01&size=l&note=hi&ratio=2&ok=on").json()
    assert (data["size"], data["note"], data["ratio"], data["ok"]) == ("l", "hi", 2.0, True)


def test_three_bad_fields_one_page_naming_all_three(client):
    r = client.get("/typed?n=-1&email=nobody&when=2024-02-30")
    assert r.status == 400
    text = html.unescape(r.text)
    assert "Bad form input" in text
    for name, value in (("n", "-1"), ("email", "nobody"), ("when", "2024-02-30")):
        assert f">{name}<" in text and value in text, (name, text)
    assert "natural number" in text and "e-mail" in text and "YYYY-MM-DD" in text


def test_missing_and_invalid_optional(client):
    r = client.get("/typed")
    assert r.status == 400
    text = html.unescape(r.text)
    assert text.count("missing") >= 3
    # an optional parameter with a default must still be valid when given
    r = client.get("/typed?n=1&email=a@b.co&when=2024-01-01&size=xl")
    assert r.status == 400 and "size" in r.text
    # T | None is wrapOpt: invalid gives None, not an error
    data = client.get("/typed?n=1&email=a@b.co&when=2024-01-01").json()
    assert data["note"] is None


def test_return_kinds(client):
    assert client.get("/node?name=<Ada>").text == "<p>Hello, &lt;Ada&gt;</p>"
    assert client.get("/quot?name=<Ada>").text == "<p>Hello, &lt;Ada&gt;</p>"
    r = client.get("/raw")
    assert (r.status, r.text) == (201, "created")
    r = client.post("/with_conn", {"x": "5"}, headers=token_header(client))
    assert r.text == "POST 5" and r.headers["set-cookie"].startswith("x=5;")


def test_two_answers_and_no_answer_are_errors(client):
    r = client.get("/both")
    assert r.status == 500 and "already returned a response" in r.text
    r = client.get("/none")
    assert r.status == 500 and "service /none finished without giving a response" in r.text


def test_methods(client):
    r = client.request("DELETE", "/add")
    assert r.status == 405 and r.headers["allow"] == "GET, HEAD, POST"
    assert client.post("/getonly", {}).status == 405
    assert client.get("/getonly").text == "ok"
    r = client.head("/add?a=1&b=2")
    assert r.status == 200 and r.body == b"" and r.headers["content-length"] == "1"


def test_service_module_is_not_a_script_and_runs_once(site):
    root = site(
        {
            "svcmod.py": """
                import itertools
                from pyweb import service
                LOADS = itertools.count(1)
                LOADED = next(LOADS)

                @service("/loaded")
                async def loaded():
                    return str(LOADED)
            """
        }
    )
    with serve(root) as client:
        assert [client.get("/loaded").text for _ in range(3)] == ["1", "1", "1"]
        assert client.get("/svcmod").status == 404
        assert client.get("/svcmod.py").status == 404


def test_load_errors(site):
    root = site(
        {
            "a.py": "from pyweb import service\n\n@service('/same')\nasync def one():\n    return '1'\n",
            "b.py": "from pyweb import service\n\n@service('/same')\nasync def two():\n    return '2'\n",
            "c.py": "from pyweb import service\n\nimport no_such_module_here\n\n@service\nasync def c():\n    pass\n",
            "d.py": "conn.return_('script d')\n",
            "e.py": "from pyweb import service\n\n@service('/d')\nasync def clash():\n    return 'x'\n",
        }
    )
    _, problems = check_site(root)
    shown = [str(p) for p in problems]
    assert any("have the same URL" in s and "/same" in s for s in shown), shown
    assert any(s.startswith("site/c.py:3: ModuleNotFoundError") for s in shown), shown
    assert any(s.startswith("site/d.py:1:") and "same URL as this script" in s for s in shown), (
        shown
    )


@pytest.mark.loop_free
def test_decorator_errors_name_the_problem():
    with pytest.raises(TypeError, match="n"):

        @service
        async def f(n: complex):
            pass

    with pytest.raises(ValueError, match="'nope'"):
        service("nope")(lambda: None)


@pytest.mark.loop_free
def test_a_service_can_be_called_directly():
    @service("/sq")
    async def sq(n: int):
        return n * n

    assert isinstance(sq, Service) and sq.path == "/sq"
    assert trio.run(sq, 7) == 49
