"""Sessions as a state machine (hypothesis), against a real server: whatever a browser does
in whatever order (visit, log in, log out, send a forged cookie, drop its cookies), what the
server remembers for it matches a model of one browser."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from pyweb.testing import Client, serve

from ..csrf_helpers import csrf_token
from .conftest import write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

SITE = {
    "count.py": """
        conn.session["n"] = conn.session.get("n", 0) + 1
        conn.return_(str(conn.session["n"]))
    """,
    "peek.py": """
        from pyweb import auth
        conn.return_(f"{conn.session.get('n', 0)} {auth.current_user()}")
    """,
    "login.py": """
        from pyweb import auth, csrf_field, qq
        if conn.method == "POST":
            auth.login(conn.form["user"])
            conn.return_("in")
        else:
            token = csrf_field()
            conn.return_(qq('<form method="post">{token}</form>'))
    """,
    "logout.py": """
        from pyweb import auth
        auth.logout()
        conn.return_("out")
    """,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory, loop):
    root = write_site(tmp_path_factory.mktemp("machine") / "site", SITE)
    with serve(root, loop=loop) as client:
        yield client


class OneBrowser(RuleBasedStateMachine):
    """The model: the browser's count and user, as the server should remember them."""

    base_url = ""  # set by the test below

    @initialize()
    def fresh_browser(self):
        self.client = Client(self.base_url)  # a new browser: no cookies
        self.count, self.user = 0, None

    def teardown(self):
        self.client.close()

    @rule()
    def visit(self):
        self.count += 1
        assert self.client.get("/count").text == str(self.count)

    @rule(name=st.sampled_from(["ada", "bob"]))
    def log_in(self, name):
        token = csrf_token(self.client, "/login")
        assert self.client.post("/login", {"user": name, "csrf_token": token}).text == "in"
        self.user = name  # the data stays, under a new id

    @rule()
    def log_out(self):
        assert self.client.get("/logout").text == "out"
        self.count, self.user = 0, None

    @rule(forged=st.sampled_from(["x", "abc.def", "InBvc2l0aXZlIg.bad"]))
    def forged_cookie_is_no_session(self, forged):
        answer = self.client.get("/peek", headers={"Cookie": f"pyweb_session={forged}"})
        assert answer.text == "0 None"

    @rule()
    def lose_cookies(self):
        self.client.close()
        self.client = Client(self.base_url)  # the same person, a browser without cookies
        self.count, self.user = 0, None

    @invariant()
    def the_server_remembers_what_the_model_says(self):
        assert self.client.get("/peek").text == f"{self.count} {self.user}"


def test_sessions_follow_the_model(server):
    OneBrowser.base_url = server.base_url
    # A fresh subclass per run: settings() may decorate a class once (one run per loop).
    fresh = type("OneBrowserRun", (OneBrowser,), {})
    machine = settings(max_examples=25, stateful_step_count=12, deadline=None)(fresh)
    machine.TestCase().runTest()
