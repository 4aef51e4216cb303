"""The fixture the browser tests share: a fresh Chromium page per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def browser() -> Iterator[Any]:
    """A new page of a headless Chromium, closed after the test. (Imported here, not at the
    top: a test module importing tests.browser.chromium is what skips without playwright.)"""
    from tests.browser.chromium import CHROMIUM, sync_api

    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium.new_page()
        finally:
            chromium.close()
