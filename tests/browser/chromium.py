"""What every browser test needs: playwright's sync API and Debian's Chromium. A test module
imports these names; without playwright the module is skipped, without Chromium its tests
are (and under CI=true a missing Chromium is a failure, never a skip)."""

from __future__ import annotations

import os
import shutil

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and os.environ.get("CI") == "true":
    pytest.fail(
        "no chromium on this machine, and CI=true (.ci/system-packages installs it)", pytrace=False
    )
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine")
"""The mark of a test module that drives Chromium."""
