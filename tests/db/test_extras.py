"""A missing optional driver is named with the extra that installs it (pyweb.extras).

Before: ``--db postgresql://...`` without asyncpg said only ``No module named 'asyncpg'``,
and docs/db.md did not say which extra to install. The drivers are installed here, so the
tests hide one through ``sys.modules`` (an entry of None makes its import fail as if it
were missing).
"""

from __future__ import annotations

import sys

import pytest

from pyweb.cache.core import _make_backend
from pyweb.db import make_driver
from pyweb.db.driver import parse_url
from pyweb.extras import MissingExtra, require


@pytest.mark.parametrize(
    "url, module, extra",
    [
        ("postgresql://postgres@127.0.0.1:5432/test", "asyncpg", "postgresql"),
        ("mysql://root@127.0.0.1:3306/test", "aiomysql", "mysql"),
    ],
)
def test_a_missing_driver_names_its_extra(monkeypatch, url, module, extra):
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingExtra) as caught:
        make_driver(parse_url(url))
    message = str(caught.value)
    assert f"needs the {module} package" in message
    assert f"pip install 'pyweb[{extra}]'" in message
    assert isinstance(caught.value, ImportError)  # `except ImportError` still catches it


def test_a_missing_redis_client_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(MissingExtra, match=r"pip install 'pyweb\[redis\]'"):
        _make_backend("redis://127.0.0.1:6379/0", None)


def test_require_returns_the_module_when_it_is_there():
    assert require("json", "none", "a test").dumps([1]) == "[1]"


def test_a_module_that_fails_inside_is_not_called_missing(tmp_path, monkeypatch):
    # The package exists but something it imports does not: that error stays as it is.
    (tmp_path / "half_installed.py").write_text("import no_such_dependency_of_it\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as caught:
        require("half_installed", "x", "a test")
    assert not isinstance(caught.value, MissingExtra)
    assert caught.value.name == "no_such_dependency_of_it"
