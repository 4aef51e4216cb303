"""Nothing but content is served: settings, backups, swap files, databases, logs, sources and
anything reached through a symlink into a hidden or private place answer 404, decided after
resolving the path (the hardening probe got ``/pyweb.toml``, ``guest.py~``, ``guest.py.bak``,
``ruff.toml`` and a symlink into ``data/`` from a running site).

Over real sockets, with a real ``pyweb serve``-style Site (pyweb.testing.serve).
"""

from __future__ import annotations

import os

import pytest

import pyweb.testing
from pyweb.app.static import NOT_CONTENT, StaticFiles, is_content_name
from pyweb.protocol.messages import Request

pytestmark = pytest.mark.loops("trio", "asyncio")

SECRET = b"status_token = 'hunter2'\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("leaky") / "pages"
    root.mkdir()
    (root / "index.html").write_text("<p>home</p>")
    (root / "hello.py").write_text('conn.return_("hi")\n')
    (root / "style.css").write_text("body{}")
    (root / "report.txt").write_text("public report")
    (root / "pyweb.toml").write_bytes(SECRET)
    (root / "ruff.toml").write_bytes(SECRET)
    (root / "setup.cfg").write_bytes(SECRET)
    for backup in (
        "guest.py~",
        "guest.py.bak",
        "index.html.orig",
        ".guest.py.swp",
        ".#guest.py",
        "#guest.py#",
        "style.css~",
        "notes.txt.bak",
    ):
        (root / backup).write_bytes(SECRET)
    (root / "site.db").write_bytes(SECRET)
    (root / "app.sqlite3").write_bytes(SECRET)
    (root / "error.log").write_bytes(SECRET)
    (root / "schema.sql").write_bytes(SECRET)
    (root / "deploy.sh").write_bytes(SECRET)
    (root / "data").mkdir()
    (root / "data" / "site.txt").write_bytes(SECRET)
    (root / ".git").mkdir()
    (root / ".git" / "config.txt").write_bytes(SECRET)
    (root / "templates").mkdir()
    (root / "templates" / "page.txt").write_bytes(SECRET)
    # symlinks with harmless names that lead to what must not be served
    os.symlink(root / "data", root / "public")  # into data/
    os.symlink(root / "data" / "site.txt", root / "data.txt")  # a file in data/
    os.symlink(root / "pyweb.toml", root / "settings.txt")  # a settings file
    os.symlink(root / ".git", root / "repo")  # into a hidden directory
    os.symlink(root / "templates", root / "tpl")  # into templates/
    os.symlink(root / "report.txt", root / "latest.txt")  # a fine symlink
    return root


@pytest.fixture(scope="module")
def served(site, loop):
    with pyweb.testing.serve(site, error_log=None, loop=loop) as client:
        yield client


LEAKS = [
    "/pyweb.toml", "/ruff.toml", "/setup.cfg", "/guest.py~", "/guest.py.bak",
    "/index.html.orig", "/.guest.py.swp", "/.%23guest.py", "/%23guest.py%23", "/style.css~",
    "/notes.txt.bak", "/site.db", "/app.sqlite3", "/error.log", "/schema.sql", "/deploy.sh",
    "/PYWEB.TOML", "/public/site.txt", "/data.txt", "/settings.txt", "/repo/config.txt",
    "/tpl/page.txt",
]  # fmt: skip


@pytest.mark.parametrize("path", LEAKS)
def test_not_content_is_404_over_a_socket(served, path):
    r = served.get(path)
    assert r.status == 404, (path, r.status)
    assert b"hunter2" not in r.body


def test_content_still_served(served):
    assert served.get("/report.txt").body == b"public report"
    assert served.get("/latest.txt").body == b"public report"  # a symlink to content
    assert served.get("/style.css").status == 200
    assert served.get("/").status == 200
    assert served.get("/hello").body == b"hi"  # the script runs
    assert served.get("/hello.py").headers["location"] == "/hello"  # (the alias: never source)


def test_head_and_other_methods_refused_too(served):
    assert served.request("HEAD", "/pyweb.toml").status == 404
    assert served.request("POST", "/pyweb.toml").status == 404  # not 405: nothing is there


def req(path: str) -> Request:
    return Request("GET", path, "1.1", [], path=path, query="")


def test_the_refusal_is_decided_after_resolving(site):
    files = StaticFiles(site)  # no site rules: only the file-name rules and hidden places
    assert files.respond(req("/settings.txt")).status == 404  # link name fine, target not
    assert files.respond(req("/repo/config.txt")).status == 404  # through a link into .git
    # the site's private places come from the caller, applied to the resolved path
    private = StaticFiles(site, hidden=lambda rel: rel.split("/")[1] in ("data", "templates"))
    assert private.respond(req("/public/site.txt")).status == 404
    assert private.respond(req("/latest.txt")).status == 200
    # a dev refusal says why
    dev = StaticFiles(site, dev=True).respond(req("/settings.txt"))
    assert b"not content" in dev.body


def test_the_list_can_be_replaced(site):
    files = StaticFiles(site, not_content=("*.toml",), content={".log", ".txt"})
    assert files.respond(req("/pyweb.toml")).status == 404
    assert files.respond(req("/error.log")).status == 200
    assert "*.toml" in NOT_CONTENT
    assert not is_content_name("guest.py~") and is_content_name("guest.html")
