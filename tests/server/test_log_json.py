"""``log_format = "json"`` end to end: ``pyweb serve`` writes both logs as one JSON object a
line, and what the site logs with Python's ``logging`` (``getLogger("mysite")``) lands in
the error log in that format, on each loop, in one process and in a worker.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import http_request, start_serve, stop_serve, until, write_site

pytestmark = [pytest.mark.timeout(120), pytest.mark.loops("trio", "asyncio")]

SITE = {
    "warn.py": """
        import logging
        logging.getLogger("mysite").warning("the rate service is down, showing %s", "yesterday")
        conn.return_("ok")
    """,
    "boom.py": """
        raise ValueError("the page broke")
    """,
}


def entries(path) -> list[dict]:
    """Every line of a log, each parsed as JSON (a line that is not JSON fails the test)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_both_logs_and_the_sites_logger_are_json(tmp_path, loop, workers):
    site = write_site(tmp_path / "site", SITE)
    access, error = tmp_path / "access.log", tmp_path / "error.log"
    proc, port = start_serve(
        site, "--log-format", "json", "--access-log", str(access), "--error-log", str(error),
        "--workers", workers,
    )  # fmt: skip
    try:
        assert http_request(port, "/warn") == (200, b"ok")
        assert http_request(port, "/boom")[0] == 500
        until(lambda: len(entries(access)) >= 2, "two access entries")
        until(lambda: len(entries(error)) >= 2, "two error entries")
    finally:
        assert stop_serve(proc) == 0
    by_target = {e["target"]: e for e in entries(access)}
    assert by_target["/warn"]["status"] == 200 and by_target["/boom"]["status"] == 500
    assert by_target["/warn"]["host"] == "127.0.0.1"
    logged = entries(error)
    (mine,) = [e for e in logged if e["message"].startswith("mysite: ")]
    assert mine["level"] == "warning"
    assert mine["message"] == "mysite: the rate service is down, showing yesterday"
    (failed,) = [e for e in logged if e["traceback"]]
    assert "ValueError: the page broke" in failed["traceback"]
