"""``make demo-nginx`` (scripts/demo_nginx.py): a site from ``pyweb new`` behind nginx with
two workers and a Redis cache, and the nginx configuration docs/production.md shows.

The demo checks each of its requests itself (a page, a service, a form's POST with and
without its CSRF token, the session seen by both workers, a WebSocket, a forged client
address, the operator pages) and exits non-zero when one answers otherwise; this test runs
it and reads the verdict. It needs nginx and Redis: outside CI it skips without them, under
CI=true (whose system packages install nginx) a missing one is a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import reachable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import demo_nginx  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def test_the_docs_show_the_configuration_the_demo_runs():
    text = (ROOT / "docs" / "production.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```nginx\n(.*?)```", text, re.S)
    assert demo_nginx.nginx_site(8080, 8000) in blocks


def _needed() -> None:
    nginx = demo_nginx.find_nginx()
    missing = [what for what, ok in (("nginx", nginx), ("Redis on 127.0.0.1:6379",
               reachable("127.0.0.1", 6379, timeout=0.5))) if not ok]  # fmt: skip
    if missing:
        if os.environ.get("CI") == "true":
            raise AssertionError(f"{' and '.join(missing)} missing")
        pytest.skip(f"{' and '.join(missing)} missing")


@pytest.mark.slow
def test_the_demo_serves_a_new_site_behind_nginx():
    _needed()
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo_nginx.py")],
        capture_output=True, text=True, timeout=150,
        env=dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/sbin"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "every step answered as expected" in out
    assert "BAD" not in out
    # the access log names the visitor nginx forwarded, not nginx
    assert re.search(r'^    127\.0\.0\.2 - - \[.*\] "POST /note HTTP/1\.1" 303 ', out, re.M), out
