"""No dead code in pyweb/: vulture finds no unused function, class, method, attribute or
variable there, a use by a test, a page or a benchmark counting as a use. The names that
code outside the repository calls by name (asyncio, HTMLParser, locust...) and the public
API no module calls are listed, each with its reason, in scripts/vulture_allow.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ALLOW = ROOT / "scripts" / "vulture_allow.py"


def test_vulture_finds_in_pyweb_only_the_names_the_allow_list_gives_a_reason_for() -> None:
    pytest.importorskip("vulture")  # in the dev extra: make dev installs it
    done = subprocess.run(
        [sys.executable, "-m", "vulture", "pyweb", "tests", "pages", "benchmarks",
         "--exclude", "*/.venv*,*/py27/*"],  # (the peers' venvs, the Autobahn suite)
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 3), done.stderr  # 3: it found something
    found = {
        match[1]: line
        for line in done.stdout.splitlines()
        if line.startswith("pyweb/") and (match := re.search(r"unused \w+ '(\w+)'", line))
    }
    allowed = set(re.findall(r"^_\.(\w+)", ALLOW.read_text(encoding="utf-8"), re.M))
    unexplained = sorted(line for name, line in found.items() if name not in allowed)
    assert unexplained == [], "dead code (delete it, or give its reason in the allow list)"
    assert sorted(allowed - set(found)) == [], "allowed names vulture no longer reports"
