"""Error pages are real pages (over real sockets): every status pyweb sends is a small styled
page with the status in words and a link home; a site overrides them with templates; in
development mode a traceback starts with the site's own code; private templates stay private."""

from __future__ import annotations

import html
import re
import socket
import textwrap
from http import HTTPStatus

import pytest

import pyweb.testing
from pyweb.app.site import Site
from pyweb.protocol.parser import Limits

pytestmark = pytest.mark.loops("trio", "asyncio")

PAGES = {
    "ok.py": 'conn.return_("<p>ok</p>")\n',
    "boom.py": textwrap.dedent(
        """\
        def average(prices):
            return sum(prices) / len(prices)

        avg = average([])
        conn.return_(f"<p>{avg}</p>")
        """
    ),
    "uses_db.py": textwrap.dedent(
        """\
        import _helpers

        conn.return_(_helpers.broken())
        """
    ),
    "_helpers.py": "import json\n\n\ndef broken():\n    return json.loads('{not json')\n",
    "slow.py": "from pyweb import runtime\n\nawait runtime.sleep(10)\nconn.return_('late')\n",
    "form.py": textwrap.dedent(
        """\
        from pyweb.forms import get_email, get_nat, wrap_fail

        n = wrap_fail(get_nat)("nights", min=1, max=30)
        email = wrap_fail(get_email)("email")
        conn.return_(f"{n} {email}")
        """
    ),
    "file.txt": "a file\n",
}

STATUS_WORDS = {
    status: HTTPStatus(status).phrase
    for status in (400, 403, 404, 405, 408, 413, 414, 431, 500, 503)
}


@pytest.fixture
def site_dir(tmp_path):
    root = tmp_path / "pages"
    root.mkdir()
    for name, text in PAGES.items():
        (root / name).write_text(text)
    return root


def raw(port: int, data: bytes, *, wait_close: bool = True) -> bytes:
    """Send bytes, read the whole answer (the server closes after an error of the protocol)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            out += chunk
    return out


def every_status(client, port: int) -> dict[int, tuple[int, str]]:
    """Make the server send each error status once; {status: (status seen, body)}."""
    pages = {}

    def keep(r):
        pages[r.status] = (r.status, r.text)

    keep(client.get("/nothing-here"))  # 404
    keep(client.post("/file.txt", {"a": "1"}))  # 405
    keep(client.get("/boom"))  # 500
    keep(client.get("/slow"))  # 503 (page_timeout 0.5)
    keep(client.get("/_pyweb/status", headers={"Authorization": "Bearer wrong"}))  # 403
    for data in (
        b"GET /a b c\r\n\r\n",  # 400: a malformed request line
        b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",  # 414
        b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n",  # 431
        b"POST /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000,  # 413
        b"GET / HTTP/1.1\r\nHost: x\r\n",  # 408: the head never ends (header_timeout 0.5)
    ):
        answer = raw(port, data)
        head, _, body = answer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        pages[status] = (status, body.decode("utf-8", "replace"))
    return pages


def serve(root, *, dev):
    site = Site(root, dev=dev, page_timeout=0.5)
    return pyweb.testing.serve(
        site,
        dev=dev,
        error_log=None,
        header_timeout=0.5,
        status=True,
        status_token="right",
        limits=Limits(max_body=1000),
    )


@pytest.mark.parametrize("dev", [False, True])
def test_every_error_status_is_a_small_styled_page(site_dir, dev):
    with serve(site_dir, dev=dev) as client:
        pages = every_status(client, client.server.port)
    assert sorted(pages) == sorted(STATUS_WORDS)
    for status, (_, text) in pages.items():
        assert text.startswith("<!DOCTYPE html>"), (status, text[:200])
        assert "<style>" in text and "</style>" in text  # its own inline stylesheet
        assert f"<h1>{status} {STATUS_WORDS[status]}</h1>" in text, (status, text[:400])
        assert 'href="/"' in text  # a link home
        assert "stylesheet" not in text  # nothing to load: it works when the site is broken
    production_500 = pages[500][1]
    if dev:
        assert "ZeroDivisionError" in production_500
        assert "your code first" in production_500
        assert "took longer than 0.5 s" in pages[503][1]
    else:
        assert "The details are in the server's error log" in production_500
        assert "ZeroDivisionError" not in production_500  # nothing of the insides
        assert "The page took too long to answer" in pages[503][1]


def test_a_site_overrides_every_status_with_its_templates(site_dir):
    templates = site_dir / "templates"
    templates.mkdir()
    (templates / "_layout.html").write_text(
        '<!DOCTYPE html><html><head><link rel="stylesheet" href="/style.css"></head>'
        "<body>{% block content %}{% endblock %}</body></html>"
    )
    (templates / "_error.html").write_text(
        '{% extends "_layout.html" %}{% block content %}'
        "<h1>SITE {{ status }} {{ title }}</h1><p>{{ detail }}</p>{% endblock %}"
    )
    (templates / "_404.html").write_text(
        '{% extends "_layout.html" %}{% block content %}<h1>SITE lost</h1>{% endblock %}'
    )
    with serve(site_dir, dev=False) as client:
        pages = every_status(client, client.server.port)
        form = client.get("/form?nights=0&email=nobody")
    assert sorted(pages) == sorted(STATUS_WORDS)
    for status, (_, text) in pages.items():
        if status == 404:
            assert "<h1>SITE lost</h1>" in text
        else:
            assert f"<h1>SITE {status} {STATUS_WORDS[status]}</h1>" in text, (status, text)
        assert '<link rel="stylesheet" href="/style.css">' in text  # the site's layout
    # production: the 500's detail is not the traceback, the form's 400 lists every bad field
    assert "ZeroDivisionError" not in pages[500][1]
    assert form.status == 400
    assert "<h1>SITE 400 Bad form input</h1>" in form.text
    text = html.unescape(form.text)
    assert "nights: '0' (expected a natural number from 1 to 30)" in text
    assert "email: 'nobody' (expected an e-mail address" in text


def test_a_broken_error_template_falls_back_to_pyweb_s_page(site_dir):
    (site_dir / "templates").mkdir()
    (site_dir / "templates" / "_404.html").write_text("{{ no_such_name }}")
    with serve(site_dir, dev=False) as client:
        r = client.get("/nothing-here")
    assert r.status == 404
    assert "<h1>404 Not Found</h1>" in r.text


def test_dev_tracebacks_start_with_the_site_s_own_frames(site_dir):
    with serve(site_dir, dev=True) as client:
        text = client.get("/uses_db").text
    ours = text[text.index("your code first") : text.index("<details")]
    # the page's frame, then the library's, each with source lines around the failing line
    assert ours.index("pages/uses_db.py</code>, line 3") < ours.index("pages/_helpers.py</code>")
    assert "<span class=\"hit\">   5      return json.loads(&#x27;{not json&#x27;)</span>" in ours
    assert "   4  def broken():" in ours  # a line around it
    assert "json/decoder.py" not in ours  # the standard library's frames are folded ...
    folded = text[text.index("<details") :]
    assert re.search(r"<summary>\d+ frames? in pyweb, trio and other libraries", folded)
    assert "json/decoder.py" in folded  # ... but still there


def test_a_syntax_error_shows_the_line_with_a_caret(site_dir):
    with serve(site_dir, dev=True) as client:
        (site_dir / "broken.py").write_text("total = 1\nitems = [1, 2, 3\nconn.return_(str(items))\n")
        r = client.get("/broken")
    assert r.status == 500
    assert "SyntaxError: &#x27;[&#x27; was never closed" in r.text
    assert '<span class="hit">   2  items = [1, 2, 3</span>' in r.text
    assert '<span class="caret">              ^</span>' in r.text  # under the "["
    assert "site.py" not in r.text  # the compile step is not the student's code


def test_the_form_page_lists_every_bad_field_in_both_modes(site_dir):
    for dev in (False, True):
        with serve(site_dir, dev=dev) as client:
            r = client.get("/form?nights=0&email=nobody")
        assert r.status == 400
        assert "<h1>400 Bad form input</h1>" in r.text
        assert "2 form fields were missing or invalid" in r.text
        assert "<td><code>nights</code></td>" in r.text
        assert "a natural number from 1 to 30" in r.text
        assert "<td><code>email</code></td>" in r.text
        assert 'href="/"' in r.text


def test_private_templates_are_never_pages(site_dir):
    templates = site_dir / "templates"
    (templates / "parts").mkdir(parents=True)
    (templates / "_layout.html").write_text(
        "<html><body><h1>{{ heading }}</h1>{% block content %}{% endblock %}</body></html>"
    )
    (templates / "_partial.html").write_text("<p>partial</p>")
    (templates / "parts" / "_row.html").write_text("<tr></tr>")
    (templates / "list.html").write_text(
        '{% extends "_layout.html" %}{% set heading = "List" %}'
        '{% block content %}{% include "_partial.html" %}{% endblock %}'
    )
    for dev in (False, True):
        with serve(site_dir, dev=dev) as client:
            for url in ("/_layout", "/_partial", "/parts/_row", "/_layout.html", "/templates/_layout.html"):
                assert client.get(url).status == 404, url
            r = client.get("/list")
            assert r.status == 200
            assert r.text == "<html><body><h1>List</h1><p>partial</p></body></html>"
