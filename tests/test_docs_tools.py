"""The docs build's two helpers: the griffe extension that turns Sphinx roles and ``::``
blocks into Markdown, and the check that fails ``make docs`` when any is left raw."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def check():
    return load("check_docs_site")


@pytest.fixture(scope="module")
def roles():
    pytest.importorskip("griffe")
    return load("docs_roles")


def test_the_check_finds_raw_roles_and_markers(check, tmp_path):
    assert check.problems("<p>See :func:`get_nat` and :class:`~pyweb.quot.Quot`.</p>") == [
        "raw role ':func:`'",
        "raw role ':class:`'",
    ]
    assert check.problems("<p>Use it like this::</p><pre><code>x = 1</code></pre>") == [
        "'::' marker in 'Use it like this::'"
    ]
    assert check.problems("<pre><code>a :func:`b` c::</code></pre><p>fine: a::b</p>") == []
    site = tmp_path / "site"
    (site / "x").mkdir(parents=True)
    (site / "x" / "index.html").write_text("<p>:meth:`Conn.exit`</p>")
    assert check.main(["check", str(site)]) == 1
    (site / "x" / "index.html").write_text("<p><code>Conn.exit()</code></p>")
    assert check.main(["check", str(site)]) == 0


def test_roles_become_links_or_code(roles):
    import griffe

    module = griffe.load("pyweb.forms", extensions=None)
    getter = module["get_nat"]
    text = roles.roles_to_markdown(
        "see :func:`parse_nat`, :class:`~pyweb.app.conn.Conn` and :func:`nowhere_at_all`", getter
    )
    assert '<autoref identifier="pyweb.forms.parse_nat" optional><code>parse_nat()</code>' in text
    assert '<autoref identifier="pyweb.app.conn.Conn" optional><code>Conn</code></autoref>' in text
    assert "<code>nowhere_at_all()</code>" in text and ":func:" not in text


def test_literal_blocks_become_fenced_code(roles):
    text = "Use it::\n\n    with serve('pages') as c:\n        c.get('/')\n\nThen more."
    assert roles.literal_blocks(text) == (
        "Use it:\n\n```python\nwith serve('pages') as c:\n    c.get('/')\n```\n\nThen more."
    )
