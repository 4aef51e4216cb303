"""Page scripts (SMLserver §2.1): served at /NAME, run per request, compiled once, checked."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pyweb.app.site import Site, SiteError, check_site
from pyweb.testing import serve

from ..csrf_helpers import TOKEN_PAGE, token_header
from .conftest import touch_later

pytestmark = pytest.mark.loops("trio", "asyncio")


def test_script_is_served_at_name_and_name_py_redirects_there(site):
    root = site({"hi.py": "conn.return_('<p>hi</p>')\n"})
    with serve(root) as client:
        r = client.get("/hi")
        assert r.status == 200
        assert r.headers["content-type"] == "text/html; charset=utf-8"
        assert r.text == "<p>hi</p>"
        alias = client.get("/hi.py?x=1")  # one URL per page: the alias is sent there
        assert (alias.status, alias.headers["location"]) == (308, "/hi?x=1")


def test_top_level_code_runs_once_per_request_with_fresh_globals(site):
    root = site(
        {
            "count.py": """
                try:
                    seen += 1          # a global from an earlier request would survive here
                except NameError:
                    seen = 1
                conn.return_(str(seen))
            """
        }
    )
    with serve(root) as client:
        assert [client.get("/count").text for _ in range(3)] == ["1", "1", "1"]


def test_top_level_await(site):
    root = site(
        {
            "wait.py": """
                from pyweb import runtime
                await runtime.sleep(0)  # the running loop's sleep: trio's or asyncio's
                body = await conn.body()
                conn.return_(f"slept, body={body!r}", content_type="text/plain")
            """,
            **TOKEN_PAGE,
        }
    )
    with serve(root) as client:
        headers = {"Content-Type": "application/octet-stream", **token_header(client)}
        r = client.post("/wait", b"raw bytes", headers=headers)
        assert r.text == "slept, body=b'raw bytes'"
        assert r.headers["content-type"] == "text/plain"


def test_library_is_initialised_once_and_never_served(site):
    root = site(
        {
            "_initcount.py": """
                import itertools
                INITS = itertools.count(1)
                FIRST = next(INITS)      # 1 when the module is initialised
            """,
            "use.py": "import _initcount\nconn.return_(str(_initcount.FIRST))\n",
            "pkg_lib/__init__.py": "NAME = 'package'\n",
            "pkg_lib/helper.py": "def shout(s):\n    return s.upper()\n",
            "usepkg.py": "from pkg_lib.helper import shout\nimport pkg_lib\nconn.return_(shout(pkg_lib.NAME))\n",
        }
    )
    with serve(root) as client:
        assert [client.get("/use").text for _ in range(3)] == ["1", "1", "1"]
        assert client.get("/usepkg").text == "PACKAGE"
        # library code is not a page, and its source is not a file to download
        for path in ("/_initcount", "/_initcount.py", "/pkg_lib/helper", "/pkg_lib/helper.py"):
            assert client.get(path).status == 404, path


def test_a_script_named_like_a_standard_module_does_not_shadow_it(site):
    root = site({"json.py": "import json\nconn.return_(json.dumps([1]))\n"})
    with serve(root) as client:
        assert client.get("/json").text == "[1]"
    import json

    assert not json.__file__.startswith(str(root))  # the standard module, not the page


def test_index_script_answers_the_directory(site):
    root = site({"index.py": "conn.return_('home')\n", "sub/index.py": "conn.return_('sub')\n"})
    with serve(root) as client:
        assert client.get("/").text == "home"
        assert client.get("/sub/").text == "sub"
        assert client.get("/sub/index").text == "sub"


def test_scripts_are_compiled_once_in_production(site):
    root = site({"v.py": "conn.return_('one')\n"})
    with serve(root) as client:
        assert client.get("/v").text == "one"
        (root / "v.py").write_text("conn.return_('two')\n")
        touch_later(root / "v.py")
        assert client.get("/v").text == "one"  # the cached code; a restart picks up edits


def test_dev_mode_recompiles_a_changed_script_and_finds_new_ones(site):
    root = site(
        {
            "v.py": "conn.return_('one')\n",
            "_lib.py": "WORD = 'old'\n",
            "w.py": "import _lib\nconn.return_(_lib.WORD)\n",
        }
    )
    with serve(root, dev=True) as client:
        assert client.get("/v").text == "one"
        assert client.get("/w").text == "old"
        (root / "v.py").write_text("conn.return_('two')\n")
        touch_later(root / "v.py")
        assert client.get("/v").text == "two"
        (root / "_lib.py").write_text("WORD = 'new'\n")
        touch_later(root / "_lib.py")
        assert client.get("/w").text == "new"
        (root / "fresh.py").write_text("conn.return_('fresh')\n")
        assert client.get("/fresh").text == "fresh"
        # a syntax error introduced while serving is shown on the page, with file and line
        (root / "v.py").write_text("conn.return_('x'\n")
        touch_later(root / "v.py")
        r = client.get("/v")
        assert r.status == 500
        assert "v.py:1" in r.text and "SyntaxError" in r.text


BROKEN = {
    "ok.py": "conn.return_('ok')\n",
    "bad1.py": "x = 1\nif x\n    conn.return_('no')\n",
    "bad2.py": "def f():\n    return 1\nreturn 2\n",
    "_badlib.py": "import os\nvalue = = 3\n",
    "svc.py": "from pyweb import service\n\n@service\nasync def svc_f(n: complex):\n    return 'x'\n",
    "templates/broken.html": "<p>{% if %}</p>\n",
}


def test_check_reports_every_error_with_file_and_line(site):
    root = site(BROKEN)
    _, problems = check_site(root)
    shown = sorted(str(p) for p in problems)
    assert any(s.startswith("site/bad1.py:2: SyntaxError") for s in shown), shown
    assert any(s.startswith("site/bad2.py:3: SyntaxError") for s in shown), shown
    assert any(s.startswith("site/_badlib.py:2: SyntaxError") for s in shown), shown
    assert any(s.startswith("site/svc.py:") and "complex" in s for s in shown), shown
    assert any(s.startswith("site/templates/broken.html:1: TemplateSyntaxError") for s in shown)
    assert len(problems) == 5


def test_production_refuses_a_broken_site_and_dev_serves_what_works(site):
    root = site(BROKEN)
    with pytest.raises(SiteError) as info:
        Site(root)
    assert len(info.value.problems) == 5
    assert "bad1.py:2" in str(info.value)
    with serve(root, dev=True) as client:
        assert client.get("/ok").text == "ok"
        r = client.get("/bad1")
        assert r.status == 500 and "bad1.py:2" in r.text


def run_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyweb", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.loop_free
def test_cli_check(site):
    root = site(BROKEN)
    result = run_cli("check", str(root))
    assert result.returncode == 1
    assert "bad1.py:2: SyntaxError" in result.stdout
    assert "bad2.py:3: SyntaxError" in result.stdout
    assert "5 error(s)" in result.stderr
    good = run_cli("check", "pages")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "no errors" in good.stdout


@pytest.mark.loop_free  # (refused before a loop is chosen)
def test_cli_serve_refuses_a_broken_site(site):
    root = site(BROKEN)
    result = run_cli("serve", str(root), "--port", "0")
    assert result.returncode == 2
    assert "bad1.py:2" in result.stderr and "--dev" in result.stderr


def test_dev_mode_finds_a_templates_folder_made_later_and_tracebacks_start_at_the_page(site):
    root = site({"boom.py": "def f():\n    return 1 / 0\n\nf()\n"})
    with serve(root, dev=True) as client:
        assert client.get("/later").status == 404
        (root / "templates").mkdir()
        (root / "templates" / "later.html").write_text("<p>later {{ conn.method }}</p>")
        assert client.get("/later").text == "<p>later GET</p>"
        text = client.get("/boom").text
        traceback = text[text.index("your code first") :]
        assert "ZeroDivisionError: division by zero" in traceback
        assert "site.py" not in traceback  # the framework's frames are not the student's
        # the page's frames, in call order, each with its source and the failing line marked
        assert traceback.index("boom.py</code>, line 4") < traceback.index("line 2, in <code>f")
        assert '<span class="hit">   2      return 1 / 0</span>' in traceback
