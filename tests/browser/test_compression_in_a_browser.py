"""A real browser (headless Chromium) reads compressed answers: a page and its stylesheet
come gzip- or brotli-encoded, and the browser shows the page with the style applied (a
body it could not decode would show nothing, or no colour)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyweb.testing import serve
from tests.browser.chromium import CHROMIUM, needs_chromium, sync_api
from tests.helpers import write_site

pytestmark = [
    needs_chromium,
    pytest.mark.loops("trio", "asyncio"),
]

SITE = {
    "style.css": "#last { color: rgb(1, 2, 3); }\n" + "p { margin: 0.2em 0; }\n" * 100,
    "index.py": (
        "from pyweb import qq, static_url\n"
        "rows = ''.join(f'<p>row {i}</p>' for i in range(200))\n"
        'conn.return_(qq(f\'<!doctype html><link rel=stylesheet href="{static_url("style.css")}">\''
        " + rows + '<p id=last>the end</p>'))\n"
    ),
}


def test_a_browser_decodes_a_compressed_page_and_stylesheet(tmp_path: Path) -> None:
    root = write_site(tmp_path / "site", SITE)
    with serve(root) as client, sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = chromium.new_page()
            codings: dict[str, str | None] = {}
            page.on(
                "response",
                lambda r: codings.__setitem__(
                    r.url.split("?")[0], r.headers.get("content-encoding")
                ),
            )
            page.goto(client.base_url + "/index")
            assert page.inner_text("#last") == "the end"
            color = page.eval_on_selector("#last", "e => getComputedStyle(e).color")
            assert color == "rgb(1, 2, 3)"
        finally:
            chromium.close()
    assert codings[client.base_url + "/index"] in ("gzip", "br"), codings
    assert codings[client.base_url + "/style.css"] in ("gzip", "br"), codings
