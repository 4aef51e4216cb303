"""Each guard runs for each kind of route, in the order of ``GUARDS``.

Every guard module's steps are wrapped (monkeypatch) to note when they run; then a request
of each kind of route is served for real: a script, a service, a template, a static file,
a WebSocket handshake, an error page (404), the notebook's server, and the site under ASGI.
The request is one that gives every guard something to look at: it carries a session
cookie (sessions, CSRF), its path is under a trap (traps, and the deadline of the awaiting
page the traps make), and the site has regions (regions). The guards the request met must
be all of them, begun in the order of :data:`pyweb.app.guards.GUARDS`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pyweb.app import guards
from pyweb.app.guards import GUARDS
from pyweb.notebook import server as notebook
from pyweb.testing import serve
from tests.helpers import write_site

from .conftest import Served

pytestmark = pytest.mark.loops("trio", "asyncio")

NAMES = [g.__name__.rsplit(".", 1)[-1] for g in GUARDS]

SITE = {
    "everything.py": """
import pyweb
from pyweb import auth


@pyweb.trap("/*")
def everyone(conn):
    return None  # lets every request through: it is here to be run


@pyweb.service("/svc")
def svc():
    return "service"


@pyweb.websocket("/ws")
async def ws(ws):
    await ws.close(1000, "done")


@pyweb.service("/login", methods=["POST"], csrf=False)
def login(user: str):
    auth.login(user)
    return "in"
""",
    "page.py": "conn.return_('page')",
    "templates/tpl.html": "template",
    "file.txt": "file",
}

KINDS = {
    "page": ("GET", "/page", 200),
    "service": ("GET", "/svc", 200),
    "template": ("GET", "/tpl", 200),
    "static file": ("GET", "/file.txt", 200),
    "error page": ("GET", "/nothing-here", 404),
}


@pytest.fixture
def trace(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The guards' names, each time one of their steps runs."""
    seen: list[str] = []
    for guard, name in zip(GUARDS, NAMES, strict=True):
        for step in ("before", "after", "missing"):
            real = getattr(guard, step, None)
            if real is None:
                continue

            def traced(*args, _real=real, _name=name, **kwargs):  # type: ignore[no-untyped-def]
                seen.append(_name)
                return _real(*args, **kwargs)

            monkeypatch.setattr(guard, step, traced)
    return seen


def _begun(seen: list[str]) -> list[str]:
    """The guards in the order they began (each one's first step)."""
    order: list[str] = []
    for name in seen:
        if name not in order:
            order.append(name)
    return order


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_site(tmp_path_factory.mktemp("table") / "site", SITE)


def _logged_in(base: str) -> Served:
    client = Served(base)
    client.kind = "pyweb"
    assert client.post("/login", {"user": "ann"}).status == 200
    return client


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_guard_runs_for_each_route(site_dir: Path, trace: list[str], kind: str) -> None:
    method, path, status = KINDS[kind]
    with serve(site_dir) as plain:
        client = _logged_in(f"http://127.0.0.1:{plain.server.port}")  # type: ignore[attr-defined]
        trace.clear()
        answer = client.request(method, path)
        assert answer.status == status, (kind, answer.status, answer.text[:200])
    assert _begun(trace) == NAMES, kind


def test_each_guard_runs_for_a_websocket_handshake(site_dir: Path, trace: list[str]) -> None:
    from websockets.sync.client import connect

    with serve(site_dir) as plain:
        base = f"http://127.0.0.1:{plain.server.port}"  # type: ignore[attr-defined]
        client = _logged_in(base)
        trace.clear()
        cookie = client._cookie_header("/ws")
        with connect(base.replace("http", "ws") + "/ws", additional_headers={"Cookie": cookie}):
            pass
    assert _begun(trace) == NAMES


def test_each_guard_runs_for_the_notebook_server(site_dir: Path, trace: list[str]) -> None:
    server = notebook.serve(site_dir, dev=False)
    try:
        client = _logged_in(server.url.rstrip("/"))
        trace.clear()
        assert client.get("/page").text == "page"
    finally:
        server.stop()
    assert _begun(trace) == NAMES


def test_each_guard_runs_under_asgi(site_dir: Path, trace: list[str], loop: str) -> None:
    """The ASGI application, called as an ASGI server calls it (the attacks are tested
    under uvicorn over sockets in the other files of this folder)."""
    import pyweb.asgi

    if loop != "asyncio":
        pytest.skip("an ASGI server runs the application on asyncio")
    app = pyweb.asgi.Site(str(site_dir))

    async def call(method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes) -> tuple[int, list[tuple[bytes, bytes]]]:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
            "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
            "root_path": "", "headers": [(b"host", b"127.0.0.1"), *headers],
            "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 80),
        }  # fmt: skip
        sent: list[dict] = []
        events = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict:
            if events:
                return events.pop(0)
            await asyncio.Event().wait()  # (no disconnect until the answer is sent)
            return {}

        async def send(message: dict) -> None:
            sent.append(message)

        await app(scope, receive, send)
        start = next(m for m in sent if m["type"] == "http.response.start")
        return start["status"], start["headers"]

    async def main() -> None:
        form = [(b"content-type", b"application/x-www-form-urlencoded"), (b"content-length", b"8")]
        status, fields = await call("POST", "/login", form, b"user=ann")
        assert status == 200
        cookie = next(v for k, v in fields if k == b"set-cookie").split(b";", 1)[0]
        trace.clear()
        status, _ = await call("GET", "/page", [(b"cookie", cookie)], b"")
        assert status == 200

    asyncio.run(main())
    assert _begun(trace) == NAMES


def test_the_list_has_every_guard_module_once() -> None:
    import pkgutil

    modules = {m.name for m in pkgutil.iter_modules(guards.__path__)}
    assert sorted(NAMES) == sorted(modules)
