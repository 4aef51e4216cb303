"""``make test`` and ``make test-slow`` between them run every test, and CI runs both.

``make test`` runs the suite in two parts: the tests not marked ``serial`` spread over
processes, then the serial ones alone, collected from ``SERIAL_TESTS`` only (a second
collection of the whole suite would cost as much as many tests). The serial mark comes from
one place, tests/conftest.py's ``SERIAL_DIRS``, so the folders the Makefile names must be
those; a test marked serial anywhere else would be run by neither part. The suites of
minutes (marked ``slow``) are ``make test-slow``, which CI must call.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests import conftest

ROOT = Path(__file__).resolve().parents[1]


def makefile_variable(name: str) -> list[str]:
    found = re.search(rf"^{name}\s*:?=\s*(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert found, f"the Makefile defines no {name}"
    return found.group(1).split()


def test_the_serial_part_collects_the_folders_that_conftest_marks_serial():
    assert makefile_variable("SERIAL_TESTS") == [f"tests/{d}" for d in conftest.SERIAL_DIRS]


def test_no_test_is_marked_serial_outside_those_folders():
    marked = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("*.py")
        if path.name != "conftest.py" and "mark.serial" in path.read_text(encoding="utf-8")
        and path != Path(__file__)
    ]
    assert marked == []


def test_ci_runs_the_slow_suites_too():
    steps = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert any(step.startswith("make test ") for step in steps)
    assert any(step.startswith("make test-slow") for step in steps)
