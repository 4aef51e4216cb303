"""Helpers for the pages tests: write a small site into a temporary directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import write_site


def touch_later(path: Path) -> None:
    """Make sure a rewritten file's mtime differs from the old one's (coarse clocks)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


@pytest.fixture
def site(tmp_path):
    def make(files: dict[str, str | bytes]) -> Path:
        return write_site(tmp_path / "site", files)

    return make
