"""A real browser (headless Chromium) fills in the example guest book's form, declared once
(``pyweb.forms.Form``): a bad field comes back beside its box with what was typed kept, the
good entry is stored, and the next page shows the flash message once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pyweb import db
from pyweb.testing import serve
from tests.browser.chromium import needs_chromium

pytestmark = [
    needs_chromium,
    pytest.mark.loops("trio", "asyncio"),
]

PAGES = Path(__file__).resolve().parents[2] / "pages"


@pytest.fixture
def guest_book(tmp_path):
    root = tmp_path / "pages"
    shutil.copytree(PAGES, root, ignore=shutil.ignore_patterns("data", "__pycache__"))
    db.configure(f"sqlite:///{tmp_path / 'guest.sqlite3'}", site=root)
    try:
        with serve(root) as client:
            yield client.base_url
    finally:
        db.configure(None)


def test_the_guest_book_form_in_a_browser(browser, guest_book):
    browser.goto(guest_book + "/guest")
    browser.fill('input[name="name"]', "   ")  # blank: the server refuses it
    browser.fill('input[name="email"]', "ann@example.org")
    browser.fill('textarea[name="comment"]', "Lovely <b>place</b>")
    with browser.expect_navigation():
        browser.click('input[type="submit"]')
    error = browser.locator("#name-error")
    assert error.inner_text() == "Expected a non-empty text of at most 100 characters."
    assert browser.input_value('input[name="email"]') == "ann@example.org"  # kept as typed
    assert browser.input_value('textarea[name="comment"]') == "Lovely <b>place</b>"
    assert browser.get_attribute('input[name="name"]', "aria-describedby") == "name-error"

    browser.fill('input[name="name"]', "Ann")
    with browser.expect_navigation():
        browser.click('input[type="submit"]')
    assert browser.url.endswith("/guest")
    assert browser.locator(".flash.success").inner_text() == (
        "Thank you: your comment is in the guest book."
    )
    assert "Lovely <b>place</b>" in browser.inner_text("main")  # shown as text
    browser.reload()
    assert browser.locator(".flash").count() == 0  # shown once
