"""A real browser (headless Chromium driven by Playwright) plays the guessing game to the end.

The test client proves the HTTP; this proves the page works as a page: the form submits
with POST, the hidden ``n`` survives the round trip, the pictures load, "Play again?" starts
a new game. It needs Chromium on the machine (``apt-get install chromium``) and skips,
saying so, without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyweb.testing import serve
from tests.browser.chromium import CHROMIUM, needs_chromium, sync_api

pytestmark = [
    needs_chromium,
    pytest.mark.loops("trio", "asyncio"),
]

PAGES = Path(__file__).resolve().parents[2] / "pages"


@pytest.fixture(scope="module")
def browser_page(loop):
    with serve(PAGES, loop=loop) as client, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield client.base_url, browser.new_page()
        finally:
            browser.close()


def follow(page, selector: str) -> None:
    """Click ``selector`` and wait for the page it leads to: the title is read from the new
    page, never from the one still unloading (an empty title on a loaded machine)."""
    with page.expect_navigation():
        page.click(selector)


@pytest.mark.parametrize("url", ["/guess", "/svc/guess"])
def test_play_the_guessing_game_in_a_browser(browser_page, url):
    base, page = browser_page
    page.goto(base + url)
    assert page.title() == "Guess a number between 0 and 100"
    page.fill('input[name="guess"]', "abc")
    follow(page, 'input[type="submit"]')
    assert page.title() == "You must type a number - try again"
    low, high, titles = 0, 100, []
    while len(titles) < 10:
        guess = (low + high) // 2
        page.fill('input[name="guess"]', str(guess))
        follow(page, 'input[type="submit"]')
        title = page.title()
        titles.append(title)
        if "too big" in title:
            high = guess - 1
        elif "too small" in title:
            low = guess + 1
        else:
            break
    assert titles[-1] == "Congratulations!", titles
    if url == "/guess":  # the script version shows the paper's pictures
        page.wait_for_load_state("load")  # pictures load after the title is known
        assert (
            page.evaluate("document.images[0].complete && document.images[0].naturalWidth") == 120
        )
    follow(page, "text=Play again?")
    assert page.title() == "Guess a number between 0 and 100"
