"""Workers start whatever the current directory holds, and a supervisor whose workers
cannot start says why and exits (pyweb.server.workers, pyweb.cli.supervise).

Before: started from the folder that holds a clone of pyweb named ``pyweb``, each worker
(``python -m pyweb``) imported the clone's root as a namespace package ``pyweb`` and died
with an ImportError, while the supervisor restarted them forever and went on printing
"serving"; the port never answered.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import http_request, until, write_site

pytestmark = pytest.mark.timeout(120)

SUPERVISOR_BANNER = re.compile(r"on http://127\.0\.0\.1:(\d+)/ with 2 workers")


def pyweb_script() -> str:
    """The installed ``pyweb`` command: unlike ``python -m``, it does not put the current
    directory on sys.path, as a user's shell command does not."""
    return str(Path(sys.executable).with_name("pyweb"))


def test_workers_ignore_a_pyweb_folder_in_the_current_directory(tmp_path):
    shadow = tmp_path / "pyweb"  # what a clone's root looks like from its parent folder:
    (shadow / "notebook").mkdir(parents=True)  # `pyweb.notebook` would resolve to its
    (shadow / "docs").mkdir()  # notebook/ folder (ImportError: cannot import name 'grade')
    (shadow / "README.md").write_text("a clone of pyweb, not the package\n")
    site = write_site(tmp_path / "site", {"hello.py": 'conn.return_("<h1>hello</h1>")'})
    proc = subprocess.Popen(
        [pyweb_script(), "serve", str(site), "--port", "0", "--workers", "2",
         "--access-log", "none"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        banner = proc.stdout.readline()  # type: ignore[union-attr]
        found = SUPERVISOR_BANNER.search(banner)
        assert found, banner
        port = int(found.group(1))

        def answered() -> bool:
            try:
                return http_request(port, "/hello")[0] == 200
            except OSError:
                return False

        until(answered, "a worker answers /hello", limit=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
    errors = proc.stderr.read()  # type: ignore[union-attr]
    assert "ImportError" not in errors and "cannot start" not in errors, errors
    assert status == 0


def test_a_sigterm_right_after_the_banner_drains(tmp_path):
    """The banner comes once the supervisor's signal handlers are in: a SIGTERM sent the
    moment it is read is a drain (exit 0, "draining" said), never the default action.

    Before: the banner was printed before ``trio.run`` installed the handlers, and such a
    SIGTERM killed the supervisor (status -15), its listening socket with it."""
    site = write_site(tmp_path / "site", {"hello.py": 'conn.return_("<h1>hello</h1>")'})
    for _ in range(3):  # the window was a few milliseconds: try it more than once
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyweb", "serve", str(site), "--port", "0",
             "--workers", "2", "--access-log", "none"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            banner = proc.stdout.readline()  # type: ignore[union-attr]
            proc.send_signal(signal.SIGTERM)
            assert SUPERVISOR_BANNER.search(banner), banner
            status = proc.wait(30)
            stderr = proc.stderr.read()  # type: ignore[union-attr]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert status == 0, stderr
        assert "SIGTERM: draining the workers" in stderr
