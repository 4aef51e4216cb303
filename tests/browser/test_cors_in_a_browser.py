"""A real browser (headless Chromium) on a page of one origin calls a service of another
(another port of 127.0.0.1: another origin). A ``PUT`` with a JSON body needs a CORS
preflight: when the service's site allows the page's origin, the browser sends the
preflight, then the request, and the page's script reads the answer; when it does not, the
preflight is refused, the request is never sent, and the script gets an error. The server's
access log shows what the browser sent."""

from __future__ import annotations

import io

import pytest

from pyweb.protocol.response import Response
from pyweb.testing import serve
from tests.browser.chromium import needs_chromium
from tests.helpers import until, write_site

pytestmark = [
    needs_chromium,
    pytest.mark.loops("trio", "asyncio"),
]

API = {
    "api.py": """
from dataclasses import dataclass

from pyweb import service


@dataclass
class Item:
    name: str


@service("/api/items", methods=["PUT"], csrf=False)
def put_item(item: Item):
    return {"stored": item.name}
""",
}

CALL = """async (url) => {
    try {
        const answer = await fetch(url, {
            method: "PUT",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({name: "tea"}),
        });
        return {status: answer.status, body: await answer.json()};
    } catch (error) {
        return {error: String(error)};
    }
}"""
"""The page's script: a PUT with a JSON body (not a "simple" request: preflighted)."""


async def page_of_origin_a(ctx):
    return Response(
        200, [("Content-Type", "text/html; charset=utf-8")], b"<!doctype html><title>A</title>"
    )


def test_an_allowed_origin_calls_the_service(browser, tmp_path):
    log = io.StringIO()
    with serve(page_of_origin_a) as a:
        root = write_site(tmp_path / "api", API)
        with serve(
            root, cors_origins=(a.base_url,), cors_headers=("Content-Type",), access_log=log
        ) as b:
            browser.goto(a.base_url + "/")
            result = browser.evaluate(CALL, b.base_url + "/api/items")
            assert result == {"status": 200, "body": {"stored": "tea"}}
            until(lambda: "PUT /api/items" in log.getvalue(), "the PUT in the access log")
    assert "OPTIONS /api/items" in log.getvalue()  # the browser asked first


def test_another_origin_is_refused(browser, tmp_path):
    log = io.StringIO()
    with serve(page_of_origin_a) as a:
        root = write_site(tmp_path / "api", API)
        allowed = "https://somewhere-else.example"
        with serve(
            root, cors_origins=(allowed,), cors_headers=("Content-Type",), access_log=log
        ) as b:
            browser.goto(a.base_url + "/")
            result = browser.evaluate(CALL, b.base_url + "/api/items")
            assert "error" in result and "fetch" in result["error"].lower(), result
            until(lambda: "OPTIONS /api/items" in log.getvalue(), "the preflight in the log")
            assert '"OPTIONS /api/items HTTP/1.1" 403' in log.getvalue()
    assert "PUT /api/items" not in log.getvalue()  # the browser never sent the request


def test_without_any_setting_the_browser_keeps_other_origins_out(browser, tmp_path):
    """The default: nothing allowed (the preflight meets the method rules' 405)."""
    with serve(page_of_origin_a) as a:
        root = write_site(tmp_path / "api", API)
        with serve(root) as b:
            browser.goto(a.base_url + "/")
            result = browser.evaluate(CALL, b.base_url + "/api/items")
            assert "error" in result, result
