"""docs/getting-started.md, followed word for word: `make run`, its banner, the first page
created while the server runs (no restart), the qq fix, the deliberate mistake; and a
second `make run` on the same port (one clear line, exit status 2)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "getting-started.md").read_text()

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
]


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC, re.S)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def make_run(site: Path, port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    return subprocess.Popen(
        ["make", "-s", "run", f"SITE={site}", f"PORT={port}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # Ctrl-C goes to make and the server, as in a terminal
    )


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_getting_started_word_for_word(tmp_path):
    site = tmp_path / "pages"
    shutil.copytree(ROOT / "pages", site, ignore=shutil.ignore_patterns("data", "__pycache__"))
    port = free_port()
    proc = make_run(site, port)
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]
        assert f"on http://127.0.0.1:{port}/ (scheduler one-to-one, dev mode on" in first, (
            first + proc.stderr.read()  # type: ignore[union-attr]
        )
        banner = "".join(proc.stdout.readline() for _ in range(5))  # type: ignore[union-attr]
        # the banner the page shows, with this run's port and site
        for line in (
            f"Open http://127.0.0.1:{port}/ in your browser.",
            f"Edit {site}/NAME.py (or make a new one) and reload the browser: no restart needed.",
            "Errors show on the page with the line that failed (development mode).",
            f"Ctrl-C stops the server. Another port: make run PORT={port + 1}",
        ):
            assert line in banner
            assert line.replace(str(site), "pages").replace(str(port + 1), "8001").replace(
                str(port), "8000"
            ) in DOC
        base = f"http://127.0.0.1:{port}"
        assert get(base + "/")[0] == 200

        # "Leave make run running and create pages/hi.py"
        first_page, fixed_page = python_blocks()[:2]
        (site / "hi.py").write_text(first_page)
        assert get(base + "/hi?name=Ada") == (200, "<h1>Hi, Ada!</h1>")
        assert "<b>" in get(base + "/hi?name=%3Cb%3EAda%3C/b%3E")[1]  # the bug
        first = (site / "hi.py").stat().st_mtime_ns
        (site / "hi.py").write_text(fixed_page)
        os.utime(site / "hi.py", ns=(first + 10**9, first + 10**9))  # surely a new mtime
        assert get(base + "/hi?name=%3Cb%3EAda%3C/b%3E") == (
            200,
            "<h1>Hi, &lt;b&gt;Ada&lt;/b&gt;!</h1>",
        )

        # "Make a mistake on purpose"
        mistake = re.search(r"write `(conn\.return_\(qq\(.*?\)\))`", DOC).group(1)  # type: ignore[union-attr]
        (site / "hi.py").write_text(fixed_page.replace(fixed_page.splitlines()[-1], mistake))
        status, text = get(base + "/hi?name=Ada")
        assert status == 500
        assert "qq: name &#x27;nmae&#x27; is not defined" in text
        assert "hi.py" in text

        # a second learning server on the same port: one line, exit status 2
        second = make_run(site, port)
        out, err = second.communicate(timeout=60)
        assert second.returncode != 0
        assert (
            f"pyweb: error: 127.0.0.1:{port} is already in use (another pyweb or program); "
            f"stop it or choose another port: make run PORT={port + 1} / --port {port + 1}\n"
        ) in err
        assert "Exceptions from Trio nursery" not in err and "Traceback" not in err
    finally:
        stop(proc)
    assert proc.returncode is not None
