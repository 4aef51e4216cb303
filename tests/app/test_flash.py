"""Flash messages: ``conn.flash`` keeps a message in the session, ``conn.flashes`` gives it
to the next page once; over real sockets, and across two workers sharing Redis."""

from __future__ import annotations

import re
import shutil
import socket
import uuid
from pathlib import Path

import pytest

from pyweb.app.conn import MAX_FLASHES, Flash
from pyweb.testing import reachable, serve

from ..csrf_helpers import csrf_token
from ..helpers import start_serve, stop_serve, until, write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

PAGES = Path(__file__).resolve().parents[2] / "pages"

SITE = {
    "save.py": """
        from pyweb import csrf_field, qq
        if conn.method == "POST":
            conn.flash("Saved " + conn.form["what"] + ".", "success")
            conn.flash("Check the <b>spelling</b>.")
            conn.redirect("/show", 303)
        else:
            token = csrf_field()
            conn.return_(qq('<form method="post">{token}</form>'))
    """,
    "show.py": """
        kept = conn.flashes()
        conn.return_(repr([(f.category, f.message) for f in kept]), content_type="text/plain")
    """,
    "many.py": """
        for i in range(int(conn.query["n"])):
            conn.flash(f"m{i}")
        conn.return_("ok")
    """,
    "bad.py": """
        conn.flash(conn.query.get("message", ""), conn.query.get("category", "info"))
        conn.return_("kept")
    """,
    "layout.py": """
        from pyweb import qq
        kept = conn.flashes()
        conn.return_(qq("<ul>{items}</ul>", items=[qq("<li>{f}</li>", f=f) for f in kept]))
    """,
}


def test_a_flash_shows_on_the_next_page_once(site):
    root = site(SITE)
    with serve(root) as client:
        token = csrf_token(client, "/save")
        posted = client.post("/save", {"what": "the draft", "csrf_token": token})
        assert posted.status == 303 and posted.headers["location"] == "/show"
        shown = client.get("/show")
        assert shown.text == repr(
            [("success", "Saved the draft."), ("info", "Check the <b>spelling</b>.")]
        )
        assert client.get("/show").text == "[]"  # shown once, then gone


def test_a_flash_is_escaped_where_it_is_shown(site):
    root = site(SITE)
    with serve(root) as client:
        token = csrf_token(client, "/save")
        client.post("/save", {"what": "x", "csrf_token": token})
        page = client.get("/layout").text
        assert "<b>spelling</b>" not in page
        assert "&lt;b&gt;spelling&lt;/b&gt;" in page


def test_a_browser_without_a_session_has_no_flashes_and_gets_no_cookie(site):
    root = site(SITE)
    with serve(root) as client:
        response = client.get("/show")
        assert response.text == "[]"
        assert response.headers.get_all("set-cookie") == []


def test_flashes_are_bounded_oldest_dropped(site):
    root = site(SITE)
    with serve(root) as client:
        client.get(f"/many?n={MAX_FLASHES + 5}")
        kept = eval(client.get("/show").text)  # noqa: S307 - our own page's repr of strings
        assert len(kept) == MAX_FLASHES
        assert kept[0] == ("info", "m5") and kept[-1] == ("info", f"m{MAX_FLASHES + 4}")


def test_a_bad_message_or_category_is_an_error_naming_it(site):
    root = site(SITE)
    with serve(root, dev=True) as client:
        empty = client.get("/bad?message=")
        assert empty.status == 500 and "non-empty str" in empty.text
        odd = client.get("/bad?message=hi&category=a%20b")
        assert odd.status == 500 and "category" in odd.text and "a b" in odd.text
        assert client.get("/bad?message=hi").text == "kept"  # the server goes on


@pytest.mark.loop_free
def test_flash_is_a_str_with_a_category():
    f = Flash("Saved.", "success")
    assert f == "Saved." and f.category == "success" and f.message == "Saved."
    assert type(f.message) is str
    assert repr(f) == "Flash('Saved.', 'success')"


def test_the_example_layout_shows_flashes_once(tmp_path):
    root = tmp_path / "pages"
    shutil.copytree(PAGES, root, ignore=shutil.ignore_patterns("data", "__pycache__"))
    write_site(
        root,
        {
            "flash_then_book.py": """
                conn.flash("Welcome back, <Ann>.", "success")
                conn.redirect("/booking", 303)
            """
        },
    )
    with serve(root) as client:
        assert client.get("/flash_then_book").status == 303
        page = client.get("/booking").text
        assert '<ul class="flashes"><li class="flash success">Welcome back, &lt;Ann&gt;.</li></ul>' in page
        assert 'class="flashes"' not in client.get("/booking").text


# -- two workers, one Redis ------------------------------------------------------------------

WORKER_SITE = {
    "pyweb.toml": f'secret_key = "{uuid.uuid4().hex}{uuid.uuid4().hex}"\n',
    "add.py": """
        import os
        conn.flash(f"from {os.getpid()}")
        conn.return_(str(os.getpid()), content_type="text/plain")
    """,
    "take.py": """
        import os
        kept = conn.flashes()
        conn.return_(f"{os.getpid()} " + "|".join(kept), content_type="text/plain")
    """,
}


def _get(port: int, target: str, cookie: str | None) -> tuple[str, str | None]:
    """GET on a new connection (so SO_REUSEPORT may give it to either worker): the body and
    the session cookie set, if any (``pyweb_session=`` when the server drops it)."""
    head = f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if cookie:
        head += f"Cookie: {cookie}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall((head + "\r\n").encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_bytes, _, body = data.partition(b"\r\n\r\n")
    found = re.search(rb"(?im)^set-cookie: (pyweb_session=[^;]*)", head_bytes)
    return body.decode(), found.group(1).decode() if found else None


def test_a_flash_made_in_one_worker_shows_in_the_other(tmp_path):
    if not reachable("127.0.0.1", 6379, timeout=0.5):
        pytest.skip("Redis is not running on 127.0.0.1:6379")
    root = write_site(tmp_path / "site", WORKER_SITE)
    prefix = f"pyweb-test-flash:{uuid.uuid4().hex[:8]}:"
    proc, port = start_serve(
        root, "--workers", "2", "--cache", f"redis://127.0.0.1:6379/0?prefix={prefix}"
    )
    seen: list[tuple[str, str]] = []
    try:
        cookie: str | None = None

        def browse(target: str) -> str:
            """GET as a browser does: the session cookie kept, replaced or dropped."""
            nonlocal cookie
            body, set_cookie = _get(port, target, cookie)
            if set_cookie is not None:  # (a session emptied by flashes() is dropped)
                cookie = set_cookie if not set_cookie.endswith("=") else None
            return body

        def crossed() -> bool:
            maker = browse("/add")
            taker, _, messages = browse("/take").partition(" ")
            seen.append((maker, taker))
            assert messages == f"from {maker}", seen  # in the same worker or the other
            return taker != maker

        until(crossed, "a flash made in one worker and shown by the other", limit=60)
        assert browse("/take").endswith(" ")  # shown once: nothing left
    finally:
        stop_serve(proc)
        import redis

        client = redis.Redis(host="127.0.0.1", port=6379)
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.unlink(*keys)
