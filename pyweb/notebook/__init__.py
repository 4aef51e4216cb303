"""Jupyter integration: run a pyweb server from a notebook, write pages from cells, check them.

This is the teaching surface of pyweb (``tutorials/`` and ``notebook/``). A notebook plays
both parts of the SMLserver book's set-up (§2, §2.1): it is the editor that writes the
scripts into the site directory, and the browser that requests them::

    import pyweb.notebook
    srv = pyweb.notebook.serve()          # a fresh temporary site; returns at once
    %load_ext pyweb.notebook

    %%page time_of_day                    # the cell body becomes <site>/time_of_day.py
    import time
    conn.return_(f"<p>The time of day is {time.strftime('%H.%M.%S')}.</p>")

    r = srv.get("/time_of_day")           # a pyweb.testing.TestResponse
    srv.show("/time_of_day")              # the page, inline
    srv.log                               # the access log, one line per request
    srv.stop()

One idea per module:

* :mod:`pyweb.notebook.server` -- the background server (:func:`serve`,
  :class:`NotebookServer`): a thread running trio, its logs collected into lists;
* :mod:`pyweb.notebook.magics` -- the cell magics ``%%page``, ``%%template``,
  ``%%file_in_site`` (``%load_ext pyweb.notebook``);
* :mod:`pyweb.notebook.checks` -- the checks of exercise notebooks (:func:`expect`,
  :func:`expect_form`, :func:`expect_table`), failing in plain words;
* :mod:`pyweb.notebook.grade` -- ``pyweb grade``: a class's notebooks run on fresh kernels,
  one row per check.

The server runs with ``dev=True``: a page that fails shows its traceback, and a page file
rewritten by ``%%page`` is compiled again on the next request.
"""

from __future__ import annotations

from pyweb.notebook.checks import (
    CheckFailed,
    expect,
    expect_form,
    expect_table,
    explain_error,
    forms_on,
    list_items,
    run_async,
    tables_on,
)
from pyweb.notebook.magics import (
    MagicUsageError,
    PageSyntaxError,
    file_in_site_magic,
    load_ipython_extension,
    page_magic,
    template_magic,
)
from pyweb.notebook.server import NotebookServer, current, serve, stop_all

__all__ = [
    "NotebookServer",
    "serve",
    "current",
    "stop_all",
    "expect",
    "CheckFailed",
    "explain_error",
    "expect_form",
    "forms_on",
    "tables_on",
    "expect_table",
    "list_items",
    "run_async",
    "MagicUsageError",
    "PageSyntaxError",
    "page_magic",
    "template_magic",
    "file_in_site_magic",
    "load_ipython_extension",
]
