"""A real browser (headless Chromium) logs in, reaches a members-only page, logs out; and a
page on another site (another port) that posts a form into this one is refused.

The second half is the CSRF attack of the "Login and sessions" tutorial: the attacker's page
auto-submits a form whose action is the victim site's ``/note``. Both sites are on
127.0.0.1, so the browser *does* send the victim's session cookie with the attacker's POST
(SameSite looks at the site, not the port); only the CSRF token stops it. To show the
attack is real, the same page succeeds against a victim with the check turned off.
"""

from __future__ import annotations

import pytest

from pyweb.app.site import Site
from pyweb.protocol.response import Response
from pyweb.testing import serve
from tests.browser.chromium import needs_chromium

from ..app.conftest import write_site

pytestmark = [
    needs_chromium,
    pytest.mark.loops("trio", "asyncio"),
]

SITE = {
    "login.py": """
        from pyweb import auth, csrf_field, qq
        from pyweb.forms import get_string

        USERS = {"alice": await auth.hash_password("wonderland")}
        if conn.method == "POST":
            user = get_string("user")
            if await auth.verify_password(get_string("password"), USERS.get(user), user=user):
                auth.login(user)
                conn.redirect(auth.safe_next(conn.form.get("next")), 303)
            else:
                conn.return_("<title>Wrong</title>wrong name or password", status=401)
        else:
            token = csrf_field()
            nxt = conn.query.get("next", "/")
            conn.return_(qq('''<title>Log in</title><form method="post">{token}
              <input type="hidden" name="next" value="{nxt}">
              <input name="user"> <input name="password" type="password">
              <input type="submit" value="Log in"></form>'''))
    """,
    "private.py": """
        from pyweb import auth, qq
        from pyweb.html import BUTTON, FORM
        user = auth.require_login()
        notes = conn.session.get("notes", [])
        logout = FORM(BUTTON("Log out"), method="post", action="/logout")
        conn.return_(qq('<title>Members</title><p id="who">Hello {user}</p><p id="notes">{n}</p>{logout}', n=", ".join(notes)))
    """,
    "note.py": """
        from pyweb import auth
        auth.require_login()
        conn.session["notes"] = [*conn.session.get("notes", []), conn.form.get("text", "")]
        conn.redirect("/private", 303)
    """,
    "logout.py": """
        from pyweb import auth
        auth.logout()
        conn.redirect("/login", 303)
    """,
}


def attacker(victim: str):
    """Another site: its page posts a form into the victim's /note as soon as it loads."""
    page = f"""<!DOCTYPE html><title>Win a prize</title>
<form action="{victim}/note" method="post"><input name="text" value="written by the attacker"></form>
<script>document.forms[0].submit()</script>""".encode()

    async def handler(ctx):
        return Response(200, [("Content-Type", "text/html; charset=utf-8")], page)

    return handler


def log_in(page, base: str) -> None:
    page.goto(base + "/private")
    assert page.title() == "Log in"  # a stranger was sent to the login page
    page.fill('input[name="user"]', "alice")
    page.fill('input[name="password"]', "wonderland")
    with page.expect_navigation():  # the title of the page it leads to, not of this one
        page.click('input[type="submit"]')
    assert page.title() == "Members"  # and back to the page asked for (?next=)
    assert page.inner_text("#who") == "Hello alice"


def test_log_in_reach_a_private_page_log_out(browser, tmp_path):
    root = write_site(tmp_path / "site", SITE)
    with serve(root) as client:
        base = client.base_url
        log_in(browser, base)
        cookie = [c for c in browser.context.cookies() if c["name"] == "pyweb_session"][0]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
        assert browser.evaluate("document.cookie") == ""  # page scripts cannot read it
        browser.click("text=Log out")
        assert browser.title() == "Log in"
        browser.goto(base + "/private")
        assert browser.title() == "Log in"


def test_a_cross_site_form_post_is_refused(browser, tmp_path):
    root = write_site(tmp_path / "site", SITE)
    with serve(root) as victim, serve(attacker(victim.base_url)) as evil:
        assert victim.server.port != evil.server.port
        log_in(browser, victim.base_url)
        browser.goto(evil.base_url + "/")
        browser.wait_for_load_state()
        assert "403" in browser.title() and "CSRF token" in browser.content()
        browser.goto(victim.base_url + "/private")
        assert browser.inner_text("#notes") == ""  # nothing was written


def test_without_the_check_the_same_attack_succeeds(browser, tmp_path):
    """The control: the attack is real, so the refusal above is the check's doing."""
    root = write_site(tmp_path / "site", SITE)
    with (
        serve(Site(root, csrf_exempt=["/note"])) as victim,
        serve(attacker(victim.base_url)) as evil,
    ):
        log_in(browser, victim.base_url)
        browser.goto(evil.base_url + "/")
        browser.wait_for_load_state()
        assert browser.title() == "Members"
        assert browser.inner_text("#notes") == "written by the attacker"
