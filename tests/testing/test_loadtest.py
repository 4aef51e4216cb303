"""pyweb loadtest and pyweb.testing.locust: real locust, real server, real sockets.

locust is installed on first use into its own environment (``make test`` does it first, so
that no test has to wait for pip). On both loops: ``pyweb loadtest`` serves on
``$PYWEB_TESTING_LOOP``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyweb.testing import default_loop
from tests.helpers import write_site

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.loops("trio", "asyncio")]


def loadtest(*args: str) -> subprocess.CompletedProcess[str]:
    """``pyweb loadtest ARGS``, its site served on the test's loop (checked in its output)."""
    loop = default_loop()
    done = subprocess.run(
        [sys.executable, "-m", "pyweb", "loadtest", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=400,
        env={**os.environ, "PYWEB_TESTING_LOOP": loop},
    )  # fmt: skip
    assert done.returncode == 2 or f" on {loop}; " in done.stdout, done.stdout[-3000:]
    return done


def aggregated(output: str) -> tuple[int, int]:
    """(requests, failures) from the Aggregated line of locust's table."""
    line = next(line for line in output.splitlines() if line.strip().startswith("Aggregated"))
    requests, failures = re.search(r"Aggregated\s+(\d+)\s+(\d+)\(", line).groups()
    return int(requests), int(failures)


def test_the_example_site_under_load_has_no_failures():
    done = loadtest("pages", "--locustfile", "benchmarks/locustfile.py",
                    "--users", "5", "--time", "4s")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    requests, failures = aggregated(done.stdout + done.stderr)
    assert requests > 50 and failures == 0
    for name in ("/guess (a guess)", "/guest_add (sign)", "/exchange"):
        assert name in done.stdout + done.stderr


FORM_SITE = {
    # A form with pyweb's CSRF token (csrf_field()); a POST reaches the page only with the
    # session's token (pyweb checks it first), and the page also checks that the token came
    # as the X-CSRF-Token header too, then redirects (303).
    "form.py": """
        from pyweb import csrf_field

        if conn.method == "POST":
            if conn.headers.get("x-csrf-token") != conn.form.get("csrf_token"):
                conn.return_("<title>400 Bad Request</title> no header", status=400)
            else:
                conn.redirect("/done.html", 303)
        else:
            token = csrf_field()
            conn.return_(f'<form method="post">{token}<input name="x"></form>')
    """,
    "done.html": "<p>thanks</p>",
    "broken.py": """
        conn.return_("<pre>Traceback (most recent call last):\\n  oops</pre>")
    """,
    "index.html": '<a href="/form">form</a> <a href="/done.html">done</a>',
}

USERS = """
from locust import constant, task
from pyweb.testing.locust import PywebUser


class FormFiller(PywebUser):
    wait_time = constant(0.05)

    @task
    def fill(self):
        self.client.get("/form")
        with self.client.post("/form", data={"x": "1"}, catch_response=True) as r:
            if r.url.endswith("/done.html") and "thanks" in r.text:
                r.success()  # the redirect after the POST was followed
            else:
                r.failure(f"not redirected: {r.status_code} {r.url}")
"""

BROKEN_USERS = USERS.replace('self.client.get("/form")', 'self.client.get("/broken")')


def test_pyweb_user_keeps_cookies_fills_csrf_tokens_and_follows_redirects(tmp_path):
    site = write_site(tmp_path / "site", FORM_SITE)
    (tmp_path / "users.py").write_text(USERS)
    done = loadtest(str(site), "--locustfile", str(tmp_path / "users.py"),
                    "--users", "2", "--time", "3s")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    requests, failures = aggregated(output)
    assert requests > 10 and failures == 0
    assert "POST     /form" in output


def test_an_error_page_is_a_failure_even_with_status_200(tmp_path):
    site = write_site(tmp_path / "site", FORM_SITE)
    (tmp_path / "users.py").write_text(BROKEN_USERS)
    done = loadtest(str(site), "--locustfile", str(tmp_path / "users.py"),
                    "--users", "1", "--time", "4s")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    assert "error page with status 200" in output
    # The POST that follows has no token (no form was seen): pyweb answers 403, and the
    # user's own verdict (catch_response=True) is the one reported.
    assert "not redirected: 403" in output


def test_without_a_locustfile_a_visitor_follows_the_links(tmp_path):
    site = write_site(tmp_path / "site", FORM_SITE)
    done = loadtest(str(site), "--users", "2", "--time", "4s")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "visitor_locustfile.py" in output
    assert "GET      /form" in output and "GET      /done.html" in output


def test_the_visitor_skips_links_marked_as_deliberate_errors(tmp_path):
    site = write_site(tmp_path / "site", {
        "index.html": '<a href="/ok.html">ok</a> <a href="/nope" data-expect-status="404">a 404</a>',
        "ok.html": '<a href="/">home</a>',
    })
    done = loadtest(str(site), "--users", "2", "--time", "3s")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "GET      /ok.html" in output and "/nope" not in output


def test_the_example_site_passes_its_own_loadtest():
    # Before: the visitor counted the index's deliberate /svc/mul?n=abc (a 400 on purpose)
    # as a failure, and `pyweb loadtest pages` exited 1 on the project's own site.
    done = loadtest("pages", "--users", "3", "--time", "5s")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    requests, failures = aggregated(output)
    assert requests > 10 and failures == 0, output[-3000:]


def test_a_missing_locustfile_is_a_clear_error(tmp_path):
    done = loadtest("pages", "--locustfile", str(tmp_path / "nope.py"))
    assert done.returncode == 2 and "no locustfile" in done.stderr
