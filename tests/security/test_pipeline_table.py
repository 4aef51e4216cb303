"""Each guard decides for each kind of route, in the order of ``GUARDS``.

Every guard decides on every request, on a line of the runner marked ``# guard: NAME``:
the guard's step is called there, or a cheap test there says it has nothing to do (a GET
needs no CSRF token, a page that dropped no coroutine has nothing for the un-awaited
check), which costs no call. So the table records decisions, not calls: a line tracer
notes each marked line of pyweb/app/runner.py as it runs (on the server's thread too),
and the guards' steps are wrapped (monkeypatch) to note the ones that act. Then a request
of each kind of route is served for real: a script, a service, a template, a static file,
a WebSocket handshake, an error page (404), the notebook's server, and the site under
ASGI. The request gives most guards something to do: it comes from an origin the
site's CORS settings allow (cors), it carries a session cookie
(sessions, CSRF), its path is under a trap (traps, and the deadline of the awaiting page
the traps make), and the site has regions (regions). The guards that decided must be all
of them, begun in the order of :data:`pyweb.app.guards.GUARDS`, and a guard's step runs
only after the guard has decided.
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from pyweb.app import guards, runner
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

ORIGIN = "https://app.example"
"""An origin the site's CORS settings allow, which the requests name (cors has work)."""

KINDS = {
    "page": ("GET", "/page", 200),
    "service": ("GET", "/svc", 200),
    "template": ("GET", "/tpl", 200),
    "static file": ("GET", "/file.txt", 200),
    "error page": ("GET", "/nothing-here", 404),
}


RUNNER = runner.__file__
MARKS = {
    number: found[1].split(", ")
    for number, line in enumerate(Path(RUNNER).read_text(encoding="utf-8").splitlines(), 1)
    if (found := re.search(r"  # guard: (\w+(?:, \w+)*)", line))
}
"""The runner's decision lines: line number -> the guards that decide there, in order (the
route's plan decides for two at once: ``# guard: cors, methods``)."""


@pytest.fixture
def trace(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The guards' names, each time one decides (its marked line of the runner runs), and
    ``"ran NAME"`` each time one of its steps runs."""
    seen: list[str] = []
    for guard, name in zip(GUARDS, NAMES, strict=True):
        for step in ("before", "after", "missing"):
            real = getattr(guard, step, None)
            if real is None:
                continue

            def traced(*args, _real=real, _name=name, **kwargs):  # type: ignore[no-untyped-def]
                seen.append("ran " + _name)
                return _real(*args, **kwargs)

            monkeypatch.setattr(guard, step, traced)

    def lines(frame: FrameType, event: str, arg: object) -> object:
        if event == "line" and frame.f_lineno in MARKS:
            seen.extend(MARKS[frame.f_lineno])
        return lines

    def calls(frame: FrameType, event: str, arg: object) -> object:
        return lines if frame.f_code.co_filename == RUNNER else None  # the runner's only

    threading.settrace(calls)  # the server's thread, started inside the test
    sys.settrace(calls)  # this thread (ASGI)
    try:
        yield seen
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]


def _decided(seen: list[str]) -> list[str]:
    """The guards in the order they first decided; each step that ran came after its
    guard's decision."""
    order: list[str] = []
    for name in seen:
        if name.startswith("ran "):
            assert name[4:] in order, f"{name[4:]} ran a step before it decided: {seen}"
        elif name not in order:
            order.append(name)
    return order


def _ran(seen: list[str]) -> set[str]:
    return {name[4:] for name in seen if name.startswith("ran ")}


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
    with serve(site_dir, cors_origins=(ORIGIN,)) as plain:
        client = _logged_in(f"http://127.0.0.1:{plain.server.port}")  # type: ignore[attr-defined]
        trace.clear()
        answer = client.request(method, path, headers={"Origin": ORIGIN})
        assert answer.status == status, (kind, answer.status, answer.text[:200])
        assert answer.headers["access-control-allow-origin"] == ORIGIN
    assert _decided(trace) == NAMES, kind
    assert "cors" in _ran(trace)  # the site allows the request's origin: the guard acts


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_guard_decides_on_the_usual_request(site_dir: Path, trace: list[str], kind: str) -> None:
    """A GET without a cookie to a site without CORS settings, the route remembered: the
    route's plan passes it on one line (``# guard: cors, methods``), and the next guards
    find nothing to do by their tests; still every guard decides, in order."""
    method, path, status = KINDS[kind]
    with serve(site_dir) as plain:
        client = Served(f"http://127.0.0.1:{plain.server.port}")  # type: ignore[attr-defined]
        assert client.request(method, path).status == status  # routed (and remembered)
        trace.clear()
        answer = client.request(method, path)
        assert answer.status == status, (kind, answer.status, answer.text[:200])
        assert "access-control-allow-origin" not in answer.headers
    assert _decided(trace) == NAMES, kind
    assert not _ran(trace) & {"cors", "methods", "csrf"}, kind  # nothing to do


def test_each_guard_runs_for_a_websocket_handshake(site_dir: Path, trace: list[str]) -> None:
    from websockets.sync.client import connect

    with serve(site_dir) as plain:
        base = f"http://127.0.0.1:{plain.server.port}"  # type: ignore[attr-defined]
        client = _logged_in(base)
        trace.clear()
        cookie = client._cookie_header("/ws")
        with connect(base.replace("http", "ws") + "/ws", additional_headers={"Cookie": cookie}):
            pass
    assert _decided(trace) == NAMES


def test_each_guard_runs_for_the_notebook_server(site_dir: Path, trace: list[str]) -> None:
    server = notebook.serve(site_dir, dev=False)
    try:
        client = _logged_in(server.url.rstrip("/"))
        trace.clear()
        assert client.get("/page").text == "page"
    finally:
        server.stop()
    assert _decided(trace) == NAMES


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
    assert _decided(trace) == NAMES


def test_the_list_has_every_guard_module_once() -> None:
    import pkgutil

    modules = {m.name for m in pkgutil.iter_modules(guards.__path__)}
    assert sorted(NAMES) == sorted(modules)


def test_every_guard_decides_on_a_line_of_the_runner() -> None:
    """Each guard has its decision lines in the runner (a guard without one could be
    skipped without the table noticing), and nothing else is marked."""
    assert sorted({name for names in MARKS.values() for name in names}) == sorted(NAMES)
