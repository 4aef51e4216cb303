"""A beginner's slips in a notebook, each named with its fix: a Flask-style ``return`` in a
``%%page`` cell is refused with the sentence ``pyweb serve`` gives (docs/common-mistakes.md
checks the served pages); the checks' own helpers name a forgotten ``await``."""

from __future__ import annotations

import pytest
import trio

import pyweb.notebook
from pyweb.notebook import CheckFailed, PageSyntaxError, page_magic, run_async


def test_a_page_returning_its_html_is_told_to_call_conn_return(tmp_path):
    srv = pyweb.notebook.serve(tmp_path)
    try:
        with pytest.raises(PageSyntaxError) as caught:
            page_magic("flask", 'title = "Hi"\nreturn "<h1>Hi</h1>"')
        assert str(caught.value) == (
            "'return' outside function; a page is a script, not a function: it answers with "
            'conn.return_(...), so write conn.return_("<h1>...</h1>") instead of return '
            "(line 2 of flask.py); the page was not written"
        )
        assert not (tmp_path / "flask.py").exists()
    finally:
        srv.stop()


def test_run_async_names_a_forgotten_await_and_stops_a_busy_loop():
    async def forgot():
        return trio.sleep(0)

    async def busy():
        while True:
            pass

    with pytest.raises(CheckFailed, match=r"gave <coroutine object sleep .*a forgotten await\?"):
        run_async(forgot, what="forgot()")
    with pytest.raises(CheckFailed, match=r"busy\(\) did not return within 0.3 s. Is there a loop"):
        run_async(busy, seconds=0.3, what="busy()")
    assert run_async(trio.sleep, 0) is None  # a function that returns nothing: fine
