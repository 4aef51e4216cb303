"""User docs and code comments speak to users: no pointers to material outside the
repository (research notes, a shared folder), no issue numbers of the project's tracker,
no names of who built it. (The built site's API reference is checked by
scripts/check_docs_site.py after `make docs`.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("docs", "pyweb", "pages", "tutorials", "notebook", "benchmarks", "tests")
SUFFIXES = {".md", ".py", ".ipynb", ".html", ".yml", ".toml", ".sql", ".css"}
FORBIDDEN = re.compile(
    r"\.\./shared|shared/research|research notes?\b|\b[Ii]ssue #?\d+|\(issue\b|the lead\b"
)


THIRD_PARTY = {"site-packages", "py27"}
"""Folders of installed packages, not ours (py27: the Autobahn suite, tests/autobahn/install.sh)."""


def files():
    yield ROOT / "README.md"
    yield ROOT / "mkdocs.yml"
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in SUFFIXES and path.is_file() and not THIRD_PARTY & set(path.parts):
                yield path


def test_no_internal_references_in_docs_and_comments():
    found = []
    this = Path(__file__).resolve()
    for path in files():
        if path.resolve() == this:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


MEASUREMENT_PAGES = {"performance.md", "benchmarks.md"}
"""Where measurements live; a how-to page links to them instead of carrying a table."""

MEASURED_CELL = re.compile(
    r"^\**[~≈]?[\d.,–]+ ?(µs|ms|ns|×)\**(,.*)?$|req/s|^µs$|instructions per request|B allocated"
)
"""A table cell that holds a measurement (a time, a ratio, a rate, bytes allocated), or a
header that names one; a setting such as "30 s" or "1,000" is not one."""


def test_how_to_pages_carry_no_measurement_tables():
    found = []
    for path in sorted((ROOT / "docs").glob("*.md")):
        if path.name in MEASUREMENT_PAGES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            cells = line.strip().strip("|").split("|") if line.startswith("|") else []
            if any(MEASURED_CELL.search(cell.strip()) for cell in cells):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert not found, "move these to docs/performance.md or benchmarks.md:\n" + "\n".join(found)
