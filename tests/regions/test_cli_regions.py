"""``pyweb serve`` names the regions implementation in its banner; ``PYWEB_REGIONS=python``
forces the fallback; the regions flags reach the site (a real subprocess, real sockets, on
each loop)."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

import pyweb_regions
from tests.helpers import raw_get, serve_command

from .conftest import write_site

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]


def _serve(root: Path, *flags: str, env: dict[str, str] | None = None):
    proc = subprocess.Popen(
        serve_command(root, "--port", "0", *flags),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    banner = proc.stdout.readline()  # type: ignore[union-attr]
    return proc, banner


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_site(
        tmp_path / "site",
        {
            "_lib.py": "hits = 0\n",
            "bump.py": """
                import _lib
                _lib.hits += 1
                conn.return_(f"hits={_lib.hits}", content_type="text/plain")
            """,
        },
    )


@pytest.mark.parametrize("forced", [False, True])
def test_banner_names_the_implementation(root, forced):
    env = {"PYWEB_REGIONS": "python"} if forced else {"PYWEB_REGIONS": ""}
    proc, banner = _serve(root, "--access-log", "none", "--strict-regions", env=env)
    try:
        # PYWEB_REGIONS="" lets the server pick C whenever it was built, even when this
        # test process itself runs with PYWEB_REGIONS=python (make test-pure).
        built = importlib.util.find_spec("pyweb_regions._regions") is not None
        expected = "python" if forced or not built else "c"
        assert banner.endswith(f", regions {expected})\n"), banner
        port = int(re.search(r":(\d+)/", banner).group(1))  # type: ignore[union-attr]
        reply = raw_get(port, "/bump")
        assert reply.startswith(b"HTTP/1.1 500 ") and b"`hits`" in reply
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        err = proc.stderr.read()  # type: ignore[union-attr]
        assert "this page changed module global `hits`" in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_table_1_flags_and_the_stats_page(root):
    import json

    proc, banner = _serve(
        root, "--access-log", "none", "--exec-library", "--no-script-cache", "--profile-alloc"
    )
    try:
        port = int(re.search(r":(\d+)/", banner).group(1))  # type: ignore[union-attr]
        for _ in range(2):  # library re-run before each request: nothing to restore
            assert raw_get(port, "/bump").endswith(b"hits=1")
        (root / "bump.py").write_text('conn.return_("recompiled", content_type="text/plain")\n')
        assert raw_get(port, "/bump").endswith(b"recompiled")  # --no-script-cache
        reply = raw_get(port, "/_pyweb/stats.json")
        stats = json.loads(reply.split(b"\r\n\r\n", 1)[1])
        assert stats["implementation"] == pyweb_regions.IMPLEMENTATION
        assert stats["mutations_reported"] == 0
        if stats["alloc_available"]:
            assert stats["pages"][f"{root.name}/bump.py"]["requests"] == 3
        else:
            assert "not available" in stats["alloc_message"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
