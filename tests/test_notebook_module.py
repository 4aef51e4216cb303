"""pyweb.notebook outside a kernel: serve/get/stop, logs, the cell magics, the checks.

The server is real (127.0.0.1, port 0, a thread or trio guest mode on asyncio); the magics
run in a real IPython InteractiveShell. tests/test_notebooks.py runs the same things in a
real Jupyter kernel.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

import pyweb.notebook as nb
import pyweb.notebook.server as nb_server
from pyweb.protocol.response import Response

pytestmark = [pytest.mark.timeout(60), pytest.mark.loops("trio", "asyncio")]


@pytest.fixture(autouse=True)
def no_server_left_behind():
    yield
    assert nb.stop_all() == 0, "a test left a server running"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text(
        "<html><head><title>Hi</title></head><body><p>Fish &amp; chips</p>"
        '<a href="other.html">other</a></body></html>'
    )
    (tmp_path / "notes.txt").write_text("plain <text>")
    return tmp_path


@pytest.fixture
def srv(site: Path):
    server = nb.serve(site)
    yield server
    server.stop()


@pytest.fixture
def shell():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "pyweb.notebook")
    return shell


async def failing(ctx):
    if ctx.request.path == "/boom":
        undefined_name  # noqa: B018, F821  (a NameError on purpose)
    return Response(200, [("Content-Type", "text/plain")], b"handler says hi")


# --- serve, requests, stop ------------------------------------------------------------------


def test_serve_directory_get_and_url(srv, site):
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", srv.url)
    assert srv.port > 0 and srv.url.endswith(f":{srv.port}/")
    assert srv.site_dir == site.resolve()
    r = srv.get("/index.html")
    assert r.status == 200 and r.content_type == "text/html"
    assert "Fish &amp; chips" in r.text
    assert srv.get("/missing.html").status == 404
    assert srv.running and "(thread)" in repr(srv)


def test_post_and_request_reach_the_server(srv):
    # The static site refuses POST on an existing file with 405 and an Allow field.
    r = srv.post("/index.html", {"a": "1"})
    assert r.status == 405 and "GET" in r.headers["allow"]
    assert srv.request("HEAD", "/notes.txt").status == 200


def test_log_has_one_line_per_request_in_order(srv):
    srv.get("/index.html")
    srv.get("/missing.html")
    srv.get("/notes.txt")
    log = srv.log
    assert len(log) == 3
    assert '"GET /index.html HTTP/1.1" 200' in log[0]
    assert '"GET /missing.html HTTP/1.1" 404' in log[1]
    assert log[2].startswith("127.0.0.1 - - [")


def test_errors_collects_tracebacks_of_failed_requests():
    with nb.serve(failing) as srv:
        assert srv.site_dir is None
        assert srv.get("/").text == "handler says hi"
        r = srv.get("/boom")
        assert r.status == 500
        assert "NameError" in r.text  # dev=True: the traceback is on the page
        errors = srv.errors
        assert len(errors) == 1 and "NameError: name 'undefined_name'" in errors[0]
        assert errors[0].startswith("[")  # one entry, starting with its time stamp


def test_dev_false_hides_the_traceback():
    with nb.serve(failing, dev=False) as srv:
        r = srv.get("/boom")
        assert r.status == 500 and "NameError" not in r.text


def test_stop_is_idempotent_and_forgets_the_server(site):
    srv = nb.serve(site)
    assert nb.current() is srv
    port = srv.port
    srv.stop()
    srv.stop()
    assert not srv.running and "(stopped)" in repr(srv)
    with pytest.raises(RuntimeError, match=r"srv = pyweb\.notebook\.serve"):
        nb.current()
    with pytest.raises(RuntimeError, match="stopped"):
        srv.get("/")
    # The port is closed: a fresh client cannot connect.
    from pyweb.testing import Client

    with pytest.raises(OSError):
        Client(f"http://127.0.0.1:{port}", timeout=2).get("/")


def test_stop_all_stops_servers_whose_variable_is_gone(site):
    nb.serve(site)  # a set-up cell run twice: the first server's variable is overwritten
    srv = nb.serve()
    assert nb.stop_all() == 2
    assert not srv.running and nb_server._running == []
    assert nb.stop_all() == 0


def test_stopping_the_current_server_makes_the_previous_one_current(site):
    first = nb.serve()
    second = nb.serve(site)
    assert nb.current() is second
    second.stop()
    assert nb.current() is first
    nb.page_magic("hello", "conn.return_('<p>hi</p>')")
    assert first.get("/hello").text == "<p>hi</p>"
    first.stop()
    with pytest.raises(RuntimeError, match="no pyweb server is running"):
        nb.current()


def test_context_manager_stops(site):
    with nb.serve(site) as srv:
        assert srv.get("/notes.txt").text == "plain <text>"
    assert not srv.running


def test_default_site_is_a_temporary_directory_removed_on_stop():
    srv = nb.serve()
    site_dir = srv.site_dir
    assert site_dir is not None and site_dir.is_dir()
    assert [p.name for p in site_dir.iterdir()] == ["templates"]
    (site_dir / "a.txt").write_text("A")
    assert srv.get("/a.txt").text == "A"
    srv.stop()
    assert not site_dir.exists()


def test_a_given_site_is_never_removed(site):
    nb.serve(site).stop()
    assert (site / "index.html").exists()


def test_two_servers_the_last_is_current(site, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    with nb.serve(site) as first, nb.serve(other) as second:
        assert nb.current() is second and first.port != second.port
        assert first.get("/notes.txt").status == 200
        assert second.get("/notes.txt").status == 404


def test_serve_errors_name_the_offending_value(tmp_path):
    with pytest.raises(NotADirectoryError, match="no-such-dir"):
        nb.serve(tmp_path / "no-such-dir")
    with pytest.raises(ValueError, match="'fibre'"):
        nb.serve(tmp_path, mode="fibre")
    with pytest.raises(ValueError, match="scheduler"):
        nb.serve(tmp_path, scheduler="nope")


def test_config_keywords_reach_the_server(site):
    with nb.serve(site, scheduler="pool", pool_size=2) as srv:
        assert srv._server.config.scheduler == "pool"
        assert srv.get("/notes.txt").status == 200


# --- showing pages --------------------------------------------------------------------------


def test_view_is_a_srcdoc_iframe_with_a_base(srv):
    view = srv.view("/index.html", height=123)
    assert type(view).__name__ == "HTML"
    assert "GET /index.html → 200 OK (text/html)" in view.data
    assert "height:123px" in view.data
    # Its own origin: no allow-same-origin, so a page's script cannot reach the notebook.
    assert '<iframe sandbox="allow-forms allow-scripts" srcdoc=' in view.data
    srcdoc = re.search(r'srcdoc="([^"]*)"', view.data).group(1)
    document = html.unescape(srcdoc)
    assert document.startswith("<html><head><base href=")
    assert f'<base href="{srv.url}index.html">' in document
    assert "Fish &amp; chips" in document  # the page, escaped once more inside the attribute


def test_view_of_text_is_preformatted(srv):
    view = srv.view("/notes.txt")
    assert "&lt;pre&gt;plain &amp;lt;text&amp;gt;&lt;/pre&gt;" in view.data


def test_view_live_is_an_iframe_of_the_url(srv):
    view = srv.view("/index.html", live=True)
    assert type(view).__name__ == "IFrame"
    assert view.src == srv.url + "index.html"


def test_show_displays(srv, capsys):
    srv.show("/notes.txt")  # outside a kernel, display() prints the repr
    assert "HTML" in capsys.readouterr().out


# --- guest mode -----------------------------------------------------------------------------


def test_guest_mode_needs_a_running_loop(site):
    with pytest.raises(RuntimeError, match="mode='thread'"):
        nb.serve(site, mode="guest")


def test_guest_mode_on_asyncio(site):
    async def main() -> None:
        srv = nb.serve(site, mode="guest")
        # Still starting: the loop has not had a turn since serve() returned.
        with pytest.raises(RuntimeError, match="still starting"):
            _ = srv.port
        with pytest.raises(RuntimeError, match=r"await srv\.aget"):
            srv.get("/")
        await srv.started()
        assert srv.port > 0 and "(guest)" in repr(srv)
        r = await srv.aget("/notes.txt")
        assert r.status == 200 and r.text == "plain <text>"
        assert (await srv.apost("/notes.txt", {"x": "1"})).status == 405
        assert type(srv.view("/")).__name__ == "IFrame"  # cannot fetch from this thread
        await srv.astop()
        assert not srv.running
        await srv.astop()  # idempotent

    asyncio.run(main())


def test_guest_mode_stopped_before_it_started(site):
    async def main() -> None:
        srv = nb.serve(site, mode="guest")
        srv.stop()  # the loop has not run trio yet
        await srv.astop()  # returns: the guest run ended without serving
        assert not srv.running and srv._server.listener is None

    asyncio.run(main())


# --- the cell magics ------------------------------------------------------------------------


def test_magic_before_any_server_says_what_to_do(shell):
    assert nb_server._current is None
    with pytest.raises(RuntimeError, match=r"srv = pyweb\.notebook\.serve\(\)"):
        shell.run_cell_magic("page", "hello", "conn.return_('hi')\n")


def test_file_in_site_writes_and_rewrites(shell, srv, capsys):
    shell.run_cell_magic("file_in_site", "hello.txt", "one\n")
    assert "wrote hello.txt" in capsys.readouterr().out
    assert srv.get("/hello.txt").text == "one\n"
    shell.run_cell_magic("file_in_site", "hello.txt", "two\n")
    assert srv.get("/hello.txt").text == "two\n"
    shell.run_cell_magic("file_in_site", "css/site.css", "p {}\n")
    assert srv.get("/css/site.css").content_type == "text/css"


def test_page_magic_writes_name_py(shell, srv, capsys):
    shell.run_cell_magic("page", "time_of_day", "conn.return_('now')\n")
    out = capsys.readouterr().out
    assert out.strip() == f"wrote time_of_day.py: {srv.url}time_of_day"
    assert (srv.site_dir / "time_of_day.py").read_text() == "conn.return_('now')\n"
    shell.run_cell_magic("page", "shop/cart.py", "pass\n")  # a trailing .py is accepted
    assert (srv.site_dir / "shop" / "cart.py").read_text() == "pass\n"


def test_template_magic_writes_templates_name_html(shell, srv):
    path = nb.template_magic("hello", "<p>{{ form.name }}</p>\n")
    assert path == srv.site_dir / "templates" / "hello.html"
    assert path.read_text() == "<p>{{ form.name }}</p>\n"
    assert nb.template_magic("bye.html", "x").name == "bye.html"


def test_page_magic_refuses_a_syntax_error_and_writes_nothing(srv):
    with pytest.raises(nb.PageSyntaxError) as info:
        nb.page_magic("broken", "x = 1\nif x\n    pass\n")
    assert info.value.lineno == 2 and info.value.filename.endswith("broken.py")
    assert str(info.value) == "expected ':' (line 2 of broken.py: if x); the page was not written"
    assert not (srv.site_dir / "broken.py").exists()


def test_page_magic_allows_top_level_await_as_pages_do(srv):
    nb.page_magic("slow", "from pyweb import runtime\nawait runtime.sleep(0)\nconn.return_('<p>late</p>')\n")
    assert srv.get("/slow").text == "<p>late</p>"


def test_a_syntax_error_keeps_the_previous_page_served(shell, srv):
    nb.page_magic("hello", "conn.return_('<p>one</p>')\n")
    with pytest.raises(nb.PageSyntaxError):
        nb.page_magic("hello", "conn.return_('<p>two</p>'\n")
    assert srv.get("/hello").text == "<p>one</p>"
    assert (srv.site_dir / "hello.py").read_text() == "conn.return_('<p>one</p>')\n"


def test_a_syntax_error_in_a_cell_is_one_red_line(shell, srv, capsys):
    result = shell.run_cell("%%page broken\nconn.return_('<p>'\n")
    assert isinstance(result.error_in_exec, nb.PageSyntaxError)
    shown = capsys.readouterr()
    text = shown.out + shown.err
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines == [
        "\x1b[1;31mSyntax error:\x1b[0m '(' was never closed "
        "(line 1 of broken.py: conn.return_('<p>'); the page was not written"
    ], lines


def test_magic_show_displays_the_page(shell, srv, capsys):
    shell.run_cell_magic("file_in_site", "hi.html --show", "<p>hi</p>")
    out = capsys.readouterr().out
    assert "wrote hi.html" in out and "HTML" in out


def test_magic_server_option(shell, site, tmp_path_factory):
    other = tmp_path_factory.mktemp("other")
    with nb.serve(site) as first, nb.serve(other):
        shell.user_ns["first"] = first
        shell.user_ns["number"] = 42
        shell.run_cell_magic("file_in_site", "x.txt --server first", "to the first")
        assert (site / "x.txt").read_text() == "to the first"
        assert not (other / "x.txt").exists()
        with pytest.raises(RuntimeError, match="no variable 'nobody'"):
            shell.run_cell_magic("page", "p --server nobody", "pass\n")
        with pytest.raises(RuntimeError, match="number is a int, not a server"):
            shell.run_cell_magic("page", "p --server number", "pass\n")


def test_magic_on_a_handler_server_or_a_stopped_one(shell, site):
    with nb.serve(failing):
        with pytest.raises(RuntimeError, match="serves a handler"):
            shell.run_cell_magic("page", "p", "pass\n")
    srv = nb.serve(site)
    shell.user_ns["old"] = srv
    srv.stop()
    with pytest.raises(RuntimeError, match="was stopped"):
        shell.run_cell_magic("page", "p --server old", "pass\n")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "needs a name"),
        ("a b", "one name only"),
        ("a --colour", "unknown option '--colour'"),
        ("a --server", "--server needs a variable"),
        ("../escape", "inside the site directory"),
        ("/etc/passwd", "inside the site directory"),
        ("'unclosed", "No closing quotation"),
    ],
)
def test_magic_usage_errors(srv, line, message):
    with pytest.raises(nb.MagicUsageError, match=re.escape(message)):
        nb.page_magic(line, "pass\n")


def test_rewrite_always_changes_the_modification_time(srv):
    first = nb.file_in_site_magic("same.txt", "x")
    before = first.stat().st_mtime_ns
    os.utime(first, ns=(before + 10**9, before + 10**9))  # as if the clock went back later
    nb.file_in_site_magic("same.txt", "y")
    assert first.stat().st_mtime_ns > before + 10**9
    assert not [p for p in srv.site_dir.iterdir() if p.name.startswith(".~")]


# --- checks ---------------------------------------------------------------------------------


def test_expect_passes_and_returns_the_response(srv):
    r = srv.get("/index.html")
    assert nb.expect(r, contains=["Fish & chips", "<title>Hi</title>"], matches=r"Fish\s+&") is r
    nb.expect(r, content_type="text/html", not_contains="salad")


def test_expect_explains_a_500_with_the_error_line():
    with nb.serve(failing) as srv:
        with pytest.raises(nb.CheckFailed) as info:
            nb.expect(srv.get("/boom"), message="Asking for /boom")
    text = str(info.value)
    assert text.startswith("Asking for /boom. Your page answered 500 Internal Server Error")
    assert "the error was NameError: name 'undefined_name' is not defined" in text
    assert "(line " in text and "test_notebook_module.py" in text


def test_expect_explains_a_404(srv):
    with pytest.raises(nb.CheckFailed, match=r"404 Not Found instead of 200; is the page written"):
        nb.expect(srv.get("/temperature"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"contains": "212"}, "We expected '212' somewhere on the page; it was not there."),
        ({"not_contains": "chips"}, "'chips' should not be on the page, but it is."),
        ({"matches": r"\d\d\.\d\d"}, r"Nothing on the page looks like '\\d\\d\\.\\d\\d'"),
        ({"content_type": "text/plain"}, "We expected content type text/plain, the page said text/html."),
        ({"status": 201}, "answered 200 OK instead of 201."),
    ],
)  # fmt: skip
def test_expect_failure_messages(srv, kwargs, message):
    with pytest.raises(nb.CheckFailed) as info:
        nb.expect(srv.get("/index.html"), message="For c=100", **kwargs)
    assert str(info.value).startswith("For c=100. ")
    assert message in str(info.value)
    if "contains" in kwargs or "matches" in kwargs:
        assert "The page says: 'Hi Fish & chips other'" in str(info.value)


def test_check_failed_is_an_assertion_error():
    assert issubclass(nb.CheckFailed, AssertionError)


# --- with the pages layer -------------------------------------------------------------------


def test_page_magic_serves_the_page_and_a_rewrite_is_recompiled(shell):
    with nb.serve() as srv:
        shell.run_cell_magic("page", "hello", "conn.return_('<p>one</p>')\n")
        assert srv.get("/hello").text == "<p>one</p>"
        shell.run_cell_magic("page", "hello", "conn.return_('<p>two</p>')\n")
        assert srv.get("/hello").text == "<p>two</p>"
        assert srv.get("/hello", params={"x": "1"}).status == 200


def test_template_magic_serves_the_template(shell):
    with nb.serve() as srv:
        shell.run_cell_magic("template", "hello", "<p>Hello {{ form.name }}</p>\n")
        assert srv.get("/hello", params={"name": "Ada"}).text == "<p>Hello Ada</p>\n"
        shell.run_cell_magic("template", "hello", "<p>Bye {{ form.name }}</p>\n")
        assert srv.get("/hello", params={"name": "Ada"}).text == "<p>Bye Ada</p>\n"


def test_a_failing_page_in_a_folder_called_pyweb_keeps_its_line(shell, tmp_path):
    # A clone of the repository is a folder called pyweb (git's default), and so may be a
    # student's site: only the installed package's own frames are the framework's.
    site = tmp_path / "pyweb" / "site"
    site.mkdir(parents=True)
    with nb.serve(site) as srv:
        shell.run_cell_magic("page", "oops", "x = 1\nconn.return_(f'{y}')\n")
        with pytest.raises(nb.CheckFailed) as info:
            nb.expect(srv.get("/oops"))
    assert "/pyweb/" in str(site) + "/"
    assert str(info.value).endswith("NameError: name 'y' is not defined (line 2 of oops.py).")


def test_a_failing_page_is_explained_with_its_line(shell):
    with nb.serve() as srv:
        shell.run_cell_magic("page", "oops", "x = 1\nconn.return_(f'{y}')\n")
        with pytest.raises(nb.CheckFailed) as info:
            nb.expect(srv.get("/oops"))
    assert str(info.value) == (
        "Your page answered 500 Internal Server Error instead of 200; the error was "
        "NameError: name 'y' is not defined (line 2 of oops.py)."
    )


FORM_PAGE = """
from pyweb import csrf_field

n = conn.form.get("n", "7")
conn.return_(f'''<form action="answer" method="post">{csrf_field()}
  <input type="hidden" name="n" value="{n}">
  <input type="text" name="guess" value="">
  <input type="checkbox" name="sure">
  <input type="submit" name="go" value="Go">
</form>''')
"""

ANSWER_PAGE = """
items = sorted((k, conn.form[k]) for k in conn.form if k != "csrf_token")
conn.return_(f"{conn.method} {items}", content_type="text/plain")
"""


def test_forms_on_and_submit_like_a_browser():
    with nb.serve() as srv:
        nb.page_magic("ask", FORM_PAGE)
        nb.page_magic("answer", ANSWER_PAGE)
        page = srv.get("/ask")
        [form] = nb.forms_on(page)
        assert form.pop("values").pop("csrf_token")  # the CSRF field, a random token
        assert form == {
            "action": "answer",
            "method": "post",
            "fields": ["csrf_token", "n", "guess", "sure", "go"],
        }
        # The hidden fields go back by themselves (the CSRF token too, or the POST would
        # be refused); the action is relative to /ask.
        r = srv.submit("/ask", {"guess": "3"})
        assert r.text == "POST [('guess', '3'), ('n', '7')]"
        r = srv.submit(srv.get("/ask", params={"n": "9"}), {"guess": "4"}, path="/ask")
        assert r.text == "POST [('guess', '4'), ('n', '9')]"
        nb.page_magic("getform", "conn.return_('<form><input name=q></form>')")
        r = srv.submit("/getform", {"q": "a b"})  # no action, no method: GET the same page
        assert r.status == 200 and srv.log[-1].split('"')[1] == "GET /getform?q=a+b HTTP/1.1"
        with pytest.raises(nb.CheckFailed, match="There is no form to fill in on /answer"):
            srv.submit("/answer", {})


def test_expect_form_messages():
    with nb.serve() as srv:
        nb.page_magic("ask", FORM_PAGE)
        nb.page_magic("none", "conn.return_('<p>nothing</p>')")
        assert nb.expect_form(srv.get("/ask"), ["n", "guess"])["method"] == "post"
        with pytest.raises(nb.CheckFailed) as info:
            nb.expect_form(srv.get("/ask"), ["c"], message="Asking for /ask")
        assert str(info.value) == (
            "Asking for /ask. We expected a form with fields 'c'; the page's form has 'n', "
            "'guess', 'sure', 'go'. A field gets its name from the name attribute: "
            '<input name="...">.'
        )
        with pytest.raises(nb.CheckFailed, match="the page has no form. The page says: 'nothing'"):
            nb.expect_form(srv.get("/none"), ["c"])


NO_TOKEN_PAGE = """
conn.return_('<form action="answer" method="post"><input name="guess"></form>')
"""


def test_a_post_form_without_the_csrf_field_fails_as_under_make_run():
    # The notebook's server checks CSRF as `pyweb serve` does: the form's POST is refused,
    # and both the form check and the submission say what to add.
    with nb.serve() as srv:
        nb.page_magic("bare", NO_TOKEN_PAGE)
        nb.page_magic("answer", ANSWER_PAGE)
        with pytest.raises(nb.CheckFailed) as info:
            nb.expect_form(srv.get("/bare"), ["guess"], message="Asking for /bare")
        assert str(info.value).startswith(
            "Asking for /bare. The form is sent with method=post but carries no CSRF token"
        )
        assert "{csrf_field()}" in str(info.value)
        with pytest.raises(nb.CheckFailed, match=r"The form on /bare is sent with method=post "
                           r"but carries no CSRF token, so the server refuses it \(403"):  # fmt: skip
            srv.submit("/bare", {"guess": "3"})
        request, status = srv.log[-1].split('"')[1:3]
        assert (request, status.split()[0]) == ("POST /answer HTTP/1.1", "403")


def test_post_sends_the_token_only_when_asked():
    with nb.serve() as srv:
        nb.page_magic("ask", FORM_PAGE)
        nb.page_magic("answer", ANSWER_PAGE)
        assert srv.post("/answer", {"guess": "1"}).status == 403  # no form seen, no token
        srv.get("/ask")  # the form, with its token, as a browser loads it
        assert srv.post("/answer", {"guess": "1"}).status == 403  # exactly what is given
        r = srv.post("/answer", {"guess": "1"}, csrf=True)
        assert (r.status, r.text) == (200, "POST [('guess', '1')]")


def test_csrf_false_turns_the_check_off():
    with nb.serve(csrf=False) as srv:
        nb.page_magic("answer", ANSWER_PAGE)
        r = srv.post("/answer", {"guess": "1"})
        assert (r.status, r.text) == (200, "POST [('guess', '1')]")


def test_tables_and_expect_table():
    with nb.serve() as srv:
        nb.page_magic(
            "t",
            "conn.return_('<table><tr><th>a</th><td> 1 </td></tr><tr><td>2</td><td>4</td></tr>"
            "</table><table><td>x</td></table>')",
        )
        r = srv.get("/t")
        assert nb.tables_on(r) == [[["a", "1"], ["2", "4"]], [["x"]]]
        assert nb.expect_table(r, [["a", 1], [2, 4]]) == [["a", "1"], ["2", "4"]]
        cases = [
            ([["a", 1]], "We expected a table with 1 row of 2 cells; yours has 2 rows (the first is ['a', '1'])."),
            ([["a", 1, 0], [2, 4, 0]], "Row 1 should have 3 cells, ['a', '1', '0']; it has 2: ['a', '1']."),
            ([["a", 1], [2, 5]], "Row 2, column 2 should be '5'; it is '4'."),
        ]  # fmt: skip
        for rows, message in cases:
            with pytest.raises(nb.CheckFailed) as info:
                nb.expect_table(r, rows, message="For n=2")
            assert str(info.value) == "For n=2. " + message
        nb.page_magic("plain", "conn.return_('<p>TODO</p>')")
        with pytest.raises(nb.CheckFailed, match="with 3 rows of 3 cells; the page has no table"):
            nb.expect_table(srv.get("/plain"), [[1, 2, 3]] * 3)


def test_show_a_response_from_a_post(capsys):
    with nb.serve() as srv:
        nb.page_magic("ask", FORM_PAGE)
        nb.page_magic("answer", ANSWER_PAGE)
        srv.get("/ask")  # a form, so that the POST can carry its token
        view = srv.view(srv.post("/answer", {"a": "<1>"}, csrf=True))
        assert "response → 200 OK (text/plain)" in view.data
        srcdoc = html.unescape(re.search(r'srcdoc="([^"]*)"', view.data).group(1))
        assert srcdoc == "<pre>" + html.escape("POST [('a', '<1>')]") + "</pre>"


def test_check_failed_renders_without_a_traceback():
    error = nb.CheckFailed("For c=100. We expected '212'.")
    assert error._render_traceback_() == [
        "\x1b[1;31mCheck failed:\x1b[0m For c=100. We expected '212'."
    ]
