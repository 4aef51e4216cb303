"""The attacks' site, served three ways: pyweb's server on each loop, and under ASGI.

A test of this folder takes ``served``: a :class:`pyweb.testing.Client` (cookies kept,
redirects not followed) for a server of the site :data:`SITE` on 127.0.0.1, once under
pyweb's own server (on the loop of the run: trio, asyncio) and once under uvicorn through
:mod:`pyweb.asgi`. Each test makes a new client (``served.fresh()``): a browser of its own.

The site is written like the docs' recipes: a login trap on ``/admin/*`` and ``/members/*``,
a WebSocket under ``/members/``, a page that changes the account (a POST with a token), a
search page that reads a GET form, and pages to peek at the session.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyweb.testing import Client, serve
from tests.csrf_helpers import TOKEN_PAGE
from tests.helpers import free_port, write_site

GUARD = '''
import pyweb
from pyweb import auth


@pyweb.trap("/admin/*")
def admin_only(conn):
    auth.require_login()


@pyweb.trap("/members/*")
def members_only(conn):
    auth.require_login()


@pyweb.websocket("/members/ws")
async def feed(ws):
    await ws.send(f"user={ws.user} email={ws.session.get('email')}")
    await ws.close(1000, "done")


@pyweb.websocket("/open/ws")
async def open_feed(ws):
    await ws.send(f"user={ws.user}")
    await ws.close(1000, "done")
'''

SITE: dict[str, str] = {
    **TOKEN_PAGE,
    "guard.py": GUARD,
    "login.py": """
        from pyweb import auth
        from pyweb.forms import get_string
        conn.require_method("POST")
        auth.login(get_string("user"))
        conn.return_("logged in")
    """,
    "admin.py": 'conn.return_("ADMIN PAGE")',
    "members/feed.py": 'conn.return_("MEMBERS FEED")',
    "account_update.py": """
        from pyweb.forms import get_string
        conn.require_method("POST")
        conn.session["email"] = get_string("email")
        conn.return_("saved")
    """,
    "account.py": "conn.return_('email=' + str(conn.session.get('email')))",
    "echo.py": "conn.return_({'form': dict(conn.form), 'query': dict(conn.query)})",
    "search.py": """
        from pyweb.forms import get_string
        conn.return_("found " + get_string("q"))
    """,
    "plain.py": 'conn.return_("plain")',
}


class Served(Client):
    """A client of one server of :data:`SITE`, which can make another (a second browser)."""

    kind: str

    def fresh(self) -> Served:
        other = Served(self._base)
        other.kind = self.kind
        return other

    def __init__(self, base: str) -> None:
        super().__init__(base)
        self._base = base

    def login(self, user: str = "alice") -> None:
        token = self.get("/csrf").text
        answer = self.post("/login", {"user": user}, headers={"X-CSRF-Token": token})
        assert answer.status == 200, (answer.status, answer.text[:300])


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_site(tmp_path_factory.mktemp("security") / "site", SITE)


@pytest.fixture(scope="module", params=["pyweb", "asgi"])
def server(request: pytest.FixtureRequest, loop: str, site_dir: Path) -> Iterator[str]:
    """The base URL of a server of the site: pyweb's on ``loop``, or uvicorn's."""
    if request.param == "pyweb":
        with serve(site_dir, loop=loop, hsts=3600) as client:
            yield f"http://127.0.0.1:{client.server.port}"  # type: ignore[attr-defined]
        return
    yield from _uvicorn(site_dir)


def _uvicorn(site_dir: Path, options: str = "hsts=3600") -> Iterator[str]:
    """uvicorn serving ``pyweb.asgi.Site(site_dir, OPTIONS)`` (by default the settings of
    the pyweb server above); the base URL."""
    uvicorn = Path(sys.executable).parent / "uvicorn"
    app = site_dir.parent / "security_asgi.py"
    app.write_text(f"import pyweb.asgi\napp = pyweb.asgi.Site({str(site_dir)!r}, {options})\n")
    env = dict(os.environ)
    for _attempt in range(3):  # a free port may be taken before uvicorn binds it
        port = free_port()
        proc = subprocess.Popen(
            [str(uvicorn), "security_asgi:app", "--app-dir", str(app.parent), "--host", "127.0.0.1", "--port", str(port),
             "--lifespan", "on", "--log-level", "warning", "--proxy-headers",
             "--forwarded-allow-ips", "127.0.0.1"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        if _listening(port, proc):
            break
        proc.kill()
        proc.wait()
    else:
        output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
        pytest.fail(f"uvicorn did not start: {output}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _listening(port: int, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


@pytest.fixture
def served(server: str, request: pytest.FixtureRequest) -> Iterator[Served]:
    client = Served(server)
    client.kind = "asgi" if "asgi" in request.node.callspec.id else "pyweb"
    try:
        yield client
    finally:
        client.close()
