"""Only content is served: a file is served only when its suffix is in the allow-list
``pyweb.app.static.CONTENT``, so a name nobody predicted (a rotated log, an editor's
``.save``, a dump, a key) is refused rather than leaked.

Over real sockets, on both loops, with a real Site (pyweb.testing.serve).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pyweb.testing
from pyweb.app.site import Site
from pyweb.app.static import CONTENT, StaticFiles, is_content_name

pytestmark = pytest.mark.loops("trio", "asyncio")

SECRET = b"secret_key = 'x' * 32  # LEAKED\n"

LEAKS = (
    "pyweb.toml.save", "pyweb.toml.old", "pyweb.toml.1", "login.py.save", "login.py.1",
    "login.old", "app.log.1", "backup.sql.gz", "site.tar.gz", "dump.rdb", "config.json",
    "credentials.json", "id_rsa", "notes.ipynb", "Dockerfile", "Makefile",
    "requirements.txt.bak", "data.csv", "README.md", "sitemap.xml.gz", "site.zip",
    "CONFIG.JSON", "dump.RDB",
)  # fmt: skip
"""Names from the review (each leaked with 200 before) and more of the same families."""

SERVED = (
    "index.html", "style.css", "app.js", "logo.svg", "photo.JPG", "font.woff2",
    "robots.txt", "paper.pdf", "clip.webm",
)  # fmt: skip


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("content") / "pages"
    root.mkdir()
    for name in LEAKS:
        (root / name).write_bytes(SECRET)
    for name in SERVED:
        (root / name).write_bytes(b"content " + name.encode())
    (root / "docs").mkdir()
    (root / "docs" / "index.html").write_text("<p>docs</p>")
    (root / "docs" / "id_rsa").write_bytes(SECRET)
    # symlinks: a content name pointing at a secret, a secret name pointing at content
    os.symlink(root / "id_rsa", root / "avatar.png")
    os.symlink(root / "robots.txt", root / "robots")
    return root


@pytest.mark.parametrize("name", LEAKS)
def test_what_is_not_content_is_404(site_dir, name):
    with pyweb.testing.serve(Site(site_dir)) as client:
        response = client.get("/" + name)
        assert response.status == 404, (name, response.status)
        assert b"LEAKED" not in response.body
        head = client.head("/" + name)
        assert head.status == 404


def test_a_suffix_nobody_listed_is_refused(site_dir):
    """The rule is an allow-list: any new suffix (here a made-up one) is not served."""
    (site_dir / "whatever.zz9").write_bytes(SECRET)
    with pyweb.testing.serve(Site(site_dir)) as client:
        assert client.get("/whatever.zz9").status == 404
        assert client.get("/docs/id_rsa").status == 404
        assert client.get("/%69d_rsa").status == 404  # encoded: the same name


def test_content_is_served(site_dir):
    with pyweb.testing.serve(Site(site_dir)) as client:
        for name in SERVED:
            response = client.get("/" + name)
            assert response.status == 200, name
            assert response.body == b"content " + name.encode()
        assert client.get("/docs/").body == b"<p>docs</p>"
        assert client.get("/docs").status == 301  # a directory still redirects


def test_symlinks_are_judged_by_both_names(site_dir):
    with pyweb.testing.serve(Site(site_dir)) as client:
        response = client.get("/avatar.png")  # -> id_rsa
        assert response.status == 404 and b"LEAKED" not in response.body
        assert client.get("/robots").status == 404  # no suffix in the URL


def test_dev_mode_says_why(site_dir):
    with pyweb.testing.serve(Site(site_dir, dev=True)) as client:
        response = client.get("/backup.sql.gz")
        assert response.status == 404
        assert "not a content type" in response.text


def test_the_allow_list_can_be_widened(tmp_path):
    (tmp_path / "data.json").write_text('{"a": 1}')
    files = StaticFiles(tmp_path, content=CONTENT | {".json"})
    from pyweb.protocol.messages import Request

    request = Request("GET", "/data.json", "1.1", [], path="/data.json")
    assert files.respond(request).status == 200
    with pytest.raises(ValueError, match="'x/y'"):
        StaticFiles(tmp_path, content={"x/y"})


@given(st.text(min_size=1, max_size=20))
def test_only_listed_suffixes_are_content(name):
    suffix = os.path.splitext(name)[1].lower()
    if is_content_name(name):
        assert suffix in CONTENT
