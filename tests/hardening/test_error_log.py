"""Repeated identical tracebacks are summarised: a page that fails the same way 300 times
writes its traceback once and a few counting lines, not 300 tracebacks (over real sockets,
the server's own error log)."""

from __future__ import annotations

import io

import pytest

import pyweb.testing

pytestmark = pytest.mark.loops("trio", "asyncio")


def test_the_same_traceback_is_written_once_and_counted(tmp_path):
    site = tmp_path / "pages"
    site.mkdir()
    (site / "boom.py").write_text("x = {}\nconn.return_(x['missing'])\n")
    (site / "other.py").write_text("conn.return_(1 / 0)\n")
    log = io.StringIO()
    with pyweb.testing.serve(site, error_log=log) as client:
        for _ in range(300):
            assert client.get("/boom").status == 500
        assert client.get("/other").status == 500  # another error: its own traceback
    text = log.getvalue()
    assert text.count("Traceback") == 2, text
    assert text.count("raised KeyError") == 4  # the first message, 3 summaries
    assert "repeated 10 times so far" in text and "repeated 100 times so far" in text
    assert "repeated 299 times in all" in text  # given when the log closes
    assert len(text.splitlines()) < 30
