"""Template pages (jinja2 in templates/, the ML Server Pages analogue)."""

from __future__ import annotations

import pytest

from pyweb.testing import serve

from ..csrf_helpers import TOKEN_PAGE, token_header

pytestmark = pytest.mark.loops("trio", "asyncio")

FILES = {
    "templates/hello.html": "<p>{{ greeting }}Hello, {{ form.get('name', 'stranger') }} ({{ conn.method }})</p>\n",
    "templates/typo.html": "<p>{{ nmae }}</p>\n",
    "templates/list.html": "<ul>{% for r in rows %}<li>{{ r }}</li>{% endfor %}</ul>\n",
    "templates/nested/deep.html": "deep {{ form.get('x') }}\n",
    "uses.py": "conn.return_template('list.html', rows=['<a>', 'b'])\n",
    "hello.html": "<p>a static file with {{ braces }}</p>\n",
    **TOKEN_PAGE,
}


def test_template_pages(site):
    root = site(FILES)
    with serve(root, dev=True) as client:
        r = client.get(
            "/hello?name=<script>alert(1)</script>",
        )
        assert r.status == 500  # 'greeting' is undefined: StrictUndefined names it
        assert "greeting" in r.text and "UndefinedError" in r.text
        root.joinpath("templates/hello.html").write_text(
            "<p>Hello, {{ form.get('name', 'stranger') }} ({{ conn.method }})</p>\n"
        )
        r = client.get("/hello?name=<script>alert(1)</script>")
        assert r.status == 200
        assert r.text == "<p>Hello, &lt;script&gt;alert(1)&lt;/script&gt; (GET)</p>\n"
        token = token_header(client)
        assert client.post("/hello", {"name": "Ada"}, headers=token).text == "<p>Hello, Ada (POST)</p>\n"
        assert client.get("/nested/deep?x=1").text == "deep 1\n"
        assert client.get("/uses").text == "<ul><li>&lt;a&gt;</li><li>b</li></ul>\n"
        r = client.get("/typo")
        assert r.status == 500 and "nmae" in r.text
        # template source is never served; a static .html file still is, untouched
        assert client.get("/templates/hello.html").status == 404
        assert client.get("/hello.html").text == "<p>a static file with {{ braces }}</p>\n"
