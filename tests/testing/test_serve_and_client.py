"""pyweb.testing: a real server in a thread and an HTTP client with keep-alive and cookies."""

from __future__ import annotations

import socket

import pytest

import pyweb.testing
from pyweb.protocol.response import Response
from pyweb.testing import Client, Headers, TestResponse
from tests.helpers import until

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]


async def app(ctx):
    """One route per behaviour under test."""
    request = ctx.request
    path = request.path
    if path == "/login":
        headers = [
            ("Content-Type", "text/plain"),
            ("Set-Cookie", "session=abc123; Path=/; HttpOnly"),
            ("Set-Cookie", "theme=dark; Path=/"),
            ("Set-Cookie", "admin=yes; Path=/admin"),
        ]
        return Response(200, headers, b"welcome")
    if path == "/logout":
        return Response(200, [("Set-Cookie", "session=; Path=/; Max-Age=0")], b"bye")
    if path == "/echo":
        body = await ctx.body()
        headers = [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("X-Method", request.method),
            ("X-Content-Type", request.header("content-type", "-")),
            ("X-Query", request.query or "-"),
        ]
        return Response(200, headers, body)
    if path.startswith("/cookie") or path.startswith("/admin"):
        return Response(
            200, [("Content-Type", "text/plain")], (request.header("cookie") or "").encode()
        )
    if path == "/peer":
        return Response(200, [("Content-Type", "text/plain")], ctx.peer.encode())
    if path == "/latin1":
        return Response(
            200, [("Content-Type", "text/plain; charset=latin-1")], "café".encode("latin-1")
        )
    if path == "/json":
        return Response(200, [("Content-Type", "application/json")], b'{"a": [1, 2]}')
    if path == "/boom":
        raise RuntimeError("handler failed on purpose")
    return Response(404, [("Content-Type", "text/plain")], b"not found")


@pytest.fixture(scope="module")
def client(loop):
    with pyweb.testing.serve(app, error_log=None, loop=loop) as client:
        yield client


def test_the_server_runs_on_the_chosen_loop(client, loop):
    assert client.server.config.loop == loop
    assert type(client.server).__name__ == {"trio": "Server", "asyncio": "AsyncioServer"}[loop]
    assert client.get("/json").json() == {"a": [1, 2]}
    with pyweb.testing.use_loop("trio"):
        with pyweb.testing.serve(app, loop="asyncio") as other:  # a named loop wins
            assert type(other.server).__name__ == "AsyncioServer"
        assert pyweb.testing.default_loop() == "trio"
    assert pyweb.testing.default_loop() == loop
    with pytest.raises(ValueError):
        pyweb.testing.serve(app, loop="gevent").__enter__()


def test_get_and_response_object(client):
    r = client.get("/json")
    assert isinstance(r, TestResponse) and r.status == 200 and r.reason == "OK"
    assert r.headers["content-type"] == r.headers["Content-Type"] == "application/json"
    assert "CONTENT-LENGTH" in r.headers and r.headers.get("x-missing") is None
    assert r.json() == {"a": [1, 2]} and r.body == b'{"a": [1, 2]}'
    assert repr(r) == "<TestResponse 200 OK>"


def test_text_uses_charset(client):
    assert client.get("/latin1").text == "café"


def test_get_params(client):
    r = client.get("/echo", params={"q": "a b", "n": [1, 2]})
    assert r.headers["x-query"] == "q=a+b&n=1&n=2"


def test_post_form_reaches_handler(client):
    r = client.post("/echo", {"name": "Ada Lovelace", "lang": "é&="})
    assert r.text == "name=Ada+Lovelace&lang=%C3%A9%26%3D"
    assert r.headers["x-content-type"] == "application/x-www-form-urlencoded"
    assert r.headers["x-method"] == "POST"


def test_post_bytes_str_json(client):
    assert client.post("/echo", b"\x00\x01raw").body == b"\x00\x01raw"
    r = client.post("/echo", "héllo")
    assert r.text == "héllo" and r.headers["x-content-type"] == "text/plain; charset=utf-8"
    r = client.post("/echo", json={"x": 1})
    assert r.json() == {"x": 1} and r.headers["x-content-type"] == "application/json"
    r = client.post("/echo", b"x", headers={"Content-Type": "application/custom"})
    assert r.headers["x-content-type"] == "application/custom"


def test_request_and_head(client):
    r = client.request("PUT", "/echo", body=b"put body")
    assert r.text == "put body" and r.headers["x-method"] == "PUT"
    r = client.head("/json")
    assert r.status == 200 and r.body == b"" and r.headers["content-length"] == "13"


def test_cookies_kept_across_calls():
    with pyweb.testing.serve(app) as client:
        assert client.get("/cookie").text == ""
        r = client.get("/login")
        assert r.headers.get_all("set-cookie")[:2] == [
            "session=abc123; Path=/; HttpOnly",
            "theme=dark; Path=/",
        ]
        assert client.cookies == {"session": "abc123", "theme": "dark", "admin": "yes"}
        assert sorted(client.get("/cookie").text.split("; ")) == ["session=abc123", "theme=dark"]
        # Path=/admin: sent under /admin only, and first (longest path first)
        assert client.get("/admin/panel").text.startswith("admin=yes; ")
        assert "admin" not in client.get("/administrator").text
        client.get("/logout")  # Max-Age=0 deletes
        assert client.get("/cookie").text == "theme=dark"
        # an explicit Cookie header replaces the jar for that request
        assert client.get("/cookie", headers={"Cookie": "x=1"}).text == "x=1"


def test_keep_alive_reuses_one_connection():
    with pyweb.testing.serve(app) as client:
        peers = {client.get("/peer").text for _ in range(5)}
        assert len(peers) == 1 and client.connections_opened == 1


def test_reconnects_after_server_closes():
    with pyweb.testing.serve(app) as client:
        first = client.get("/peer", headers={"Connection": "close"}).text
        second = client.get("/peer").text
        assert first != second and client.connections_opened == 2


def test_reconnects_after_keepalive_timeout():
    with pyweb.testing.serve(app, keepalive_timeout=0.1) as client:
        first = client.get("/peer").text
        until(lambda: not client.server.connections, "the server to close the idle connection")
        second = client.get("/peer").text
        assert first != second and client.connections_opened == 2


def test_handler_error_is_a_500_not_a_crash():
    with pyweb.testing.serve(app, error_log=None) as client:
        assert client.get("/boom").status == 500
        assert client.get("/json").status == 200


def test_server_crash_surfaces():
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    try:
        with pytest.raises(OSError):
            with pyweb.testing.serve(app, port=blocker.getsockname()[1]):
                pass  # pragma: no cover
    finally:
        blocker.close()


def test_client_against_a_running_server(client):
    other = Client(client.base_url + "/")
    try:
        assert other.get("/json").json() == {"a": [1, 2]}
        assert other.base_url == client.base_url
    finally:
        other.close()
    with pytest.raises(ValueError):
        Client("ftp://example.com")
    with pytest.raises(ValueError):
        client.get("no-slash")


def test_serve_a_directory(tmp_path):
    (tmp_path / "index.html").write_text("<h1>hi</h1>")
    with pyweb.testing.serve(tmp_path) as client:
        r = client.get("/")
        assert r.status == 200 and r.text == "<h1>hi</h1>" and r.content_type == "text/html"
        assert client.get("/missing").status == 404


def test_headers_mapping():
    h = Headers([("Set-Cookie", "a=1"), ("Content-Type", "text/plain"), ("set-cookie", "b=2")])
    assert h.get_all("SET-COOKIE") == ["a=1", "b=2"] and h["set-cookie"] == "a=1"
    assert len(h) == 2 and list(h) == ["Set-Cookie", "Content-Type"] and "content-type" in h
    with pytest.raises(KeyError):
        h["nope"]


@pytest.mark.parametrize("scheduler", ["pool", "nothread"])
def test_config_overrides_reach_the_server(scheduler):
    with pyweb.testing.serve(app, scheduler=scheduler, pool_size=2) as client:
        assert client.server.config.scheduler == scheduler
        assert client.get("/json").json() == {"a": [1, 2]}


async def csrf_site(ctx):
    """A form with a CSRF token, and a POST that says which token it got, and how."""
    request = ctx.request
    if request.method == "GET":
        form = '<form method="post"><input type="hidden" name="csrf_token" value="t&amp;1"></form>'
        return Response(200, [("Content-Type", "text/html; charset=utf-8")], form.encode())
    body = (await ctx.body()).decode()
    said = f"header={request.header('x-csrf-token', '-')} body={body}"
    return Response(200, [("Content-Type", "text/plain")], said.encode())


def test_csrf_tokens_from_forms_go_with_posts():
    with pyweb.testing.serve(csrf_site) as client:
        assert client.post("/", {"a": "1"}).text == "header=- body=a=1"
        assert client.csrf_token("/form") == "t&1" and client.last_csrf_token == "t&1"
        r = client.post("/", {"a": "1"}, csrf=True)
        assert r.text == "header=t&1 body=a=1&csrf_token=t%261"
        assert client.post("/", b"raw", csrf=True).text == "header=t&1 body=raw"  # header only
        assert client.post("/", {"a": "1"}).text == "header=- body=a=1"  # not asked: none
    with pyweb.testing.serve(csrf_site) as client:  # csrf=True fetches / first
        assert client.post("/", {"a": "1"}, csrf=True).text.startswith("header=t&1 ")
