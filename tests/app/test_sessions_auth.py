"""Signed values, the site's key, sessions, login and CSRF, over real sockets."""

from __future__ import annotations

import subprocess
import sys

import pytest
from argon2 import PasswordHasher
from hypothesis import given
from hypothesis import strategies as st

from pyweb import auth, signing
from pyweb.app.csrf import unmask
from pyweb.app.sessions import Session
from pyweb.app.site import Site
from pyweb.testing import serve

from ..csrf_helpers import csrf_token, token_from
from ..helpers import forged, free_port
from .conftest import write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

_LOW_COST = PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1)
USERS = {
    "alice": _LOW_COST.hash("wonderland"),
    **{f"bob-{loop}": _LOW_COST.hash("bob's own") for loop in ("trio", "asyncio")},
}
"""The test site's stored hashes: argon2id, made once, with low costs. ``verify_password``
checks a hash with the parameters it carries, so the login tests spend their time on
logins, not in the key derivation; the default parameters are the subject of
test_password_hashes_are_argon2id_and_verify alone."""

LOGIN = f"USERS = {USERS!r}\n" + """
from pyweb import auth, csrf_field, qq
from pyweb.forms import get_string

if conn.method == "POST":
    user = get_string("user")
    password = get_string("password")
    if await auth.verify_password(password, USERS.get(user), user=user):
        auth.login(user)
        conn.redirect(auth.safe_next(conn.form.get("next")), 303)
    else:
        conn.return_("wrong name or password", status=401)
else:
    token = csrf_field()
    conn.return_(qq('<form method="post">{token}<input name="user"><input name="password"></form>'))
"""

SITE = {
    "login.py": LOGIN,
    "private.py": """
        from pyweb import auth
        user = auth.require_login()
        conn.return_(f"members only: {user}")
    """,
    "logout.py": """
        from pyweb import auth
        auth.logout()
        conn.redirect("/", 303)
    """,
    "visits.py": """
        conn.session["n"] = conn.session.get("n", 0) + 1
        conn.return_(str(conn.session["n"]))
    """,
    "peek.py": """
        conn.return_(repr(dict(conn.session)))
    """,
    "form.py": """
        from pyweb.html import FORM, INPUT
        conn.return_(FORM(INPUT(name="x"), method="post", action="/echo"))
    """,
    "echo.py": """
        conn.return_("got " + conn.form.get("x", "-"))
    """,
    "api.py": """
        from pyweb import service

        @service("/api/echo", methods=["POST"], csrf=False)
        def echo(x: str):
            return {"x": x}
    """,
    "templates/tform.html": '<form method="post" action="/echo">{{ csrf_field() }}</form>',
}


def _cookie(response) -> str:
    for header in response.headers.get_all("set-cookie"):
        if header.startswith("pyweb_session="):
            return header
    raise AssertionError(f"no session cookie in {response.headers!r}")


# -- signing ---------------------------------------------------------------------------------


@pytest.mark.loop_free
def test_sign_and_unsign_round_trip_and_refuse_forgeries():
    signing.configure("k" * 32)
    try:
        token = signing.sign({"n": 42}, salt="guess")
        assert signing.unsign(token, salt="guess") == {"n": 42}
        with pytest.raises(signing.BadSignature):
            signing.unsign(token, salt="other")  # signed for something else
        value, _, signature = token.rpartition(".")
        with pytest.raises(signing.BadSignature):  # the signature altered
            signing.unsign(value + "." + forged(signature), salt="guess")
        payload, _, rest = token.partition(".")
        with pytest.raises(signing.BadSignature):  # another value under the same signature
            signing.unsign(
                signing.sign({"n": 1}, salt="guess").split(".")[0] + "." + rest, salt="guess"
            )
        with pytest.raises(signing.SignatureExpired):
            signing.unsign(token, salt="guess", max_age=-1)
        signing.configure("z" * 32)
        with pytest.raises(signing.BadSignature):  # another site's key
            signing.unsign(token, salt="guess")
    finally:
        signing.configure(None)


@pytest.mark.loop_free
def test_key_rotation_old_key_verifies_new_key_signs():
    signing.configure("old-key-" * 4)
    try:
        old_token = signing.sign(7, salt="s")
        signing.configure(["new-key-" * 4, "old-key-" * 4])
        assert signing.unsign(old_token, salt="s") == 7
        new_token = signing.sign(7, salt="s")
        signing.configure("new-key-" * 4)
        assert signing.unsign(new_token, salt="s") == 7
        with pytest.raises(signing.BadSignature):
            signing.unsign(old_token, salt="s")
    finally:
        signing.configure(None)


@pytest.mark.loop_free
@given(value=st.text(max_size=80), salt=st.sampled_from(["pyweb.csrf", "pyweb.session", "x"]))
def test_signer_signs_as_itsdangerous_does(value, salt):
    # The signer keys its HMAC once per key and signs with copies (pyweb.signing
    # _KeyedHMAC): the bytes must be itsdangerous's own Signer's, for every key of a
    # rotation, and a signature made one way must verify the other way.
    from itsdangerous import Signer

    keys = ["new-key-" * 4, "old-key-" * 4]
    signing.configure(keys)
    try:
        ours = signing.signer(salt)
        for _ in range(2):  # the second time through the keyed HMAC kept from the first
            theirs = Signer(list(reversed(keys)), salt=salt)
            assert ours.sign(value) == theirs.sign(value)
            assert ours.unsign(theirs.sign(value)) == value.encode()
            old = Signer(keys[1], salt=salt).sign(value)  # signed before the rotation
            assert ours.unsign(old) == value.encode()
            with pytest.raises(signing.BadSignature):
                ours.unsign(Signer("another-site-key" * 2, salt=salt).sign(value))
    finally:
        signing.configure(None)


def test_signer_signs_from_many_threads_at_once():
    # Pages in worker threads sign too: copies of one keyed HMAC taken at the same time
    # must not mix their inputs.
    from concurrent.futures import ThreadPoolExecutor

    from itsdangerous import Signer

    signing.configure("k" * 32)
    try:
        ours, theirs = signing.signer("s"), Signer("k" * 32, salt="s")
        values = [f"value-{i}" * (i % 7 + 1) for i in range(2000)]
        with ThreadPoolExecutor(8) as pool:
            signed = list(pool.map(ours.sign, values))
        assert signed == [theirs.sign(v) for v in values]
    finally:
        signing.configure(None)


@pytest.mark.loop_free
def test_short_keys_are_refused():
    with pytest.raises(ValueError, match="at least 16"):
        signing.configure("short")


def test_dev_key_is_created_once_in_data_and_never_served(site, monkeypatch):
    monkeypatch.delenv("PYWEB_SECRET_KEY")
    root = site({"hello.py": "conn.return_('hi')\n"})
    Site(root, dev=True)
    key_file = root / "data" / "secret_key"
    first = key_file.read_text()
    Site(root, dev=True)
    assert key_file.read_text() == first
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    with serve(root, dev=True) as client:
        assert client.get("/data/secret_key").status == 404
    signing.configure(None)


@pytest.mark.loop_free  # (the command line refuses before a loop is chosen)
def test_production_site_that_needs_a_key_refuses_to_start(site, monkeypatch, tmp_path):
    root = site(SITE)
    monkeypatch.delenv("PYWEB_SECRET_KEY")
    with pytest.raises(signing.MissingSecretKey, match="PYWEB_SECRET_KEY"):
        Site(root)
    result = subprocess.run(
        [sys.executable, "-m", "pyweb", "serve", str(root), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in __import__("os").environ.items() if k != "PYWEB_SECRET_KEY"},
    )
    assert result.returncode == 2
    assert "secret_key" in result.stderr and "PYWEB_SECRET_KEY" in result.stderr
    # A site with nothing to sign starts without one.
    plain = write_site(tmp_path / "plain", {"hello.py": "conn.return_('hi')\n"})
    Site(plain)


# -- sessions --------------------------------------------------------------------------------


def test_session_lasts_across_requests_and_cookie_is_safe(site):
    root = site(SITE)
    with serve(root) as client:
        first = client.get("/visits")
        assert first.text == "1"
        cookie = _cookie(first)
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
        assert "Secure" not in cookie  # plain http here
        held = client.cookies["pyweb_session"]
        for expected in ("2", "3", "4"):
            response = client.get("/visits")
            assert response.text == expected
            assert response.headers.get_all("set-cookie") == []  # the data is on the server
        assert client.cookies["pyweb_session"] == held
    with serve(root) as other:  # another browser: its own session
        assert other.get("/visits").text == "1"


def test_secure_cookie_behind_https_proxy(site):
    root = site(SITE)
    with serve(root) as client:
        response = client.get("/visits", headers={"X-Forwarded-Proto": "https"})
        assert "Secure" in _cookie(response)


def test_a_page_that_never_writes_sets_no_cookie(site):
    root = site(SITE)
    with serve(root) as client:
        response = client.get("/peek")
        assert response.text == "{}"
        assert response.headers.get_all("set-cookie") == []


def test_forged_or_unknown_session_cookie_is_no_session(site):
    root = site(SITE)
    with serve(root) as client:
        client.get("/visits")
        client.get("/visits")
        good = client.cookies["pyweb_session"]
        sid_part = good.partition(".")[0]
        signed, _, signature = good.rpartition(".")
        forged_values = [
            signed + "." + forged(signature),  # a changed signature
            signing.timed_signer("pyweb.session").sign("made-up-id").decode(),  # no such session
            signing.signer("pyweb.session").sign("made-up-id").decode(),  # no timestamp
            "not-even-a-token",
            sid_part,
        ]
        for value in forged_values:
            response = client.get("/peek", headers={"Cookie": f"pyweb_session={value}"})
            assert response.status == 200
            assert response.text == "{}", value
        assert client.get("/visits").text == "3"  # the real one still works


def test_session_expires_after_the_idle_time(site):
    from pyweb import cache

    clock = cache.FakeClock()
    cache.configure("memory", clock=clock)
    try:
        root = site(SITE)
        with serve(Site(root, session_idle=60)) as client:
            assert client.get("/visits").text == "1"
            clock.advance(59)
            assert client.get("/visits").text == "2"  # used: the idle time starts again
            clock.advance(59)
            assert client.get("/visits").text == "3"
            clock.advance(61)
            assert client.get("/visits").text == "1"  # expired: a new session
    finally:
        cache.configure("memory")


def test_session_values_must_be_json(site):
    root = site({"bad.py": "conn.session['x'] = object()\nconn.return_('no')\n"})
    with serve(root, dev=True) as client:
        response = client.get("/bad")
        assert response.status == 500
        assert "JSON values" in response.text


@pytest.mark.loop_free
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["set", "del", "hold"]),
            st.sampled_from(["a", "b", "_csrf_token"]),
            st.integers(),
        )
    )
)
def test_session_reads_agree_with_a_dict_and_change_nothing(operations):
    """get, ``in``, len and iteration answer as the dict of what was written and held, and
    reading never marks the session changed (only a changed session is stored)."""
    session, model = Session(), {}
    for op, key, value in operations:
        if op == "set":
            session[key] = model[key] = value
        elif op == "hold":
            session.hold(key, str(value))
            model[key] = str(value)
        elif key in model:
            del session[key], model[key]
        modified = session.modified
        for name in ("a", "b", "_csrf_token", "never"):
            assert session.get(name) == model.get(name)
            assert session.get(name, "none") == model.get(name, "none")
            assert (name in session) == (name in model)
        assert session.modified == modified
        assert sorted(session) == sorted(model) and len(session) == len(model)


# -- login ------------------------------------------------------------------------------------


@pytest.mark.loop_free
def test_password_hashes_are_argon2id_and_verify():
    hashed = auth.hash_password("wonderland")
    assert hashed.startswith("$argon2id$")
    assert hashed != auth.hash_password("wonderland")  # salted
    assert auth.verify_password("wonderland", hashed)
    assert not auth.verify_password("Wonderland", hashed)
    with pytest.raises(ValueError, match="not a password hash"):
        auth.verify_password("wonderland", "wonderland")


def test_login_private_page_logout(site):
    root = site(SITE)
    with serve(root) as client:
        stranger = client.get("/private?page=2")
        assert stranger.status == 303
        assert stranger.headers["location"] == "/login?next=/private%3Fpage%3D2"
        token = csrf_token(client, "/login")
        # A first visit stores no session: the form's token is in a cookie of its own.
        assert "pyweb_session" not in client.cookies and "pyweb_csrf" in client.cookies
        client.get("/visits")  # a session made after the form was shown keeps its token
        before = client.cookies["pyweb_session"]
        response = client.post(
            "/login",
            {"user": "alice", "password": "wonderland", "csrf_token": token, "next": "/private"},
        )
        assert response.status == 303
        assert response.headers["location"] == "/private"
        assert client.cookies["pyweb_session"] != before  # a new id on login (no fixation)
        assert client.get("/private").text == "members only: alice"
        # The old id is worth nothing now.
        old = client.get("/private", headers={"Cookie": f"pyweb_session={before}"})
        assert old.status == 303
        assert client.get("/logout").status == 303
        assert client.get("/private").status == 303


def test_next_is_only_a_local_path(site):
    root = site(SITE)
    with serve(root) as client:
        for target, expected in [
            ("/private", "/private"),
            ("https://evil.example/", "/"),
            ("//evil.example/x", "/"),
            ("/\\evil.example", "/"),
            ("javascript:alert(1)", "/"),
        ]:
            token = csrf_token(client, "/login")  # (a login makes a new token)
            response = client.post(
                "/login",
                {"user": "alice", "password": "wonderland", "csrf_token": token, "next": target},
            )
            assert response.headers["location"] == expected, target


def test_failed_logins_are_rate_limited_per_user_and_client(site, loop):
    # A name per loop: failures are counted for a minute in this process, and the other
    # loop's run of this test may have been here just before.
    bob = f"bob-{loop}"
    root = site(SITE)
    with serve(root) as client:
        token = csrf_token(client, "/login")
        for _ in range(auth.MAX_FAILURES):
            bad = client.post("/login", {"user": bob, "password": "x", "csrf_token": token})
            assert bad.status == 401
        right = client.post("/login", {"user": bob, "password": "bob's own", "csrf_token": token})
        assert right.status == 429  # blocked: not even the right password is checked
        blocked = client.post("/login", {"user": bob, "password": "x", "csrf_token": token})
        assert blocked.status == 429
        # Another user name from the same client is not blocked.
        ok = client.post("/login", {"user": "alice", "password": "wonderland", "csrf_token": token})
        assert ok.status == 303


def test_login_required_service_and_trap_guard(site):
    root = site(
        {
            **SITE,
            "members.py": """
                import pyweb
                from pyweb import auth, service

                @service("/members/list")
                @auth.login_required
                def members():
                    return {"user": auth.current_user()}

                @pyweb.trap("/vault/*")
                def vault(conn):
                    auth.require_login()
            """,
            "vault/gold.txt": "gold\n",
        }
    )
    with serve(root) as client:
        assert client.get("/members/list").status == 303
        assert client.get("/vault/gold.txt").headers["location"] == "/login?next=/vault/gold.txt"
        token = csrf_token(client, "/login")
        client.post("/login", {"user": "alice", "password": "wonderland", "csrf_token": token})
        assert client.get("/members/list").json() == {"user": "alice"}
        assert client.get("/vault/gold.txt").text == "gold\n"


# -- CSRF --------------------------------------------------------------------------------------


def test_post_without_token_is_refused_and_nothing_runs(site):
    root = site(
        {
            **SITE,
            "count.py": """
                from pyweb import cache
                c = cache.get(cache.String, cache.Int, "test-csrf-runs", cache.Size(1000))
                c.insert("runs", c.lookup("runs", 0) + 1)
                conn.return_(str(c.lookup("runs")))
            """,
        }
    )
    with serve(root) as client:
        # (the named cache is the process's: both loops' runs of this test share it)
        before = int(client.get("/count").text)
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            response = client.request(method, "/count", body=b"")
            assert response.status == 403, method
            assert "CSRF token" in response.text
        assert client.get("/count").text == str(before + 1)  # the page ran for GETs only


def test_403_page_says_how_to_add_the_token_in_dev(site):
    root = site(SITE)
    with serve(root, dev=True) as client:
        response = client.post("/echo", {"x": "1"})
        assert response.status == 403
        assert "csrf_field()" in response.text and "X-CSRF-Token" in response.text
    with serve(root) as client:
        response = client.post("/echo", {"x": "1"})
        assert response.status == 403
        assert "no CSRF token" in response.text
        assert "csrf_field()" not in response.text


def test_token_from_form_field_header_html_form_and_template(site):
    root = site(SITE)
    with serve(root) as client:
        token = csrf_token(client, "/form")  # pyweb.html.FORM(method="post") added it
        assert client.post("/echo", {"x": "a", "csrf_token": token}).text == "got a"
        assert client.post("/echo", {"x": "b"}, headers={"X-CSRF-Token": token}).text == "got b"
        # {{ csrf_field() }}: the same secret, masked afresh for each page (BREACH)
        again = token_from(client.get("/tform").text)
        assert again != token and unmask(again) == unmask(token)
        # (the first character: the last one carries padding bits, and one time in
        # sixteen "x" there decoded to the same token)
        forged = ("x" if token[0] != "x" else "y") + token[1:]
        wrong = client.post("/echo", {"x": "c", "csrf_token": forged})
        assert wrong.status == 403 and "not this session" in wrong.text
    with serve(root) as other:  # another browser's token is not this one's
        other.get("/form")
        assert other.post("/echo", {"x": "d", "csrf_token": token}).status == 403


def test_first_visit_token_is_a_signed_cookie_not_a_stored_session(site):
    root = site(SITE)
    with serve(root) as client:
        response = client.get("/form")
        fields = response.headers.get_all("set-cookie")
        assert [f.split("=", 1)[0] for f in fields] == ["pyweb_csrf"]  # no session stored
        assert fields[0].endswith("; Path=/; HttpOnly; SameSite=Lax")
        assert response.headers["cache-control"] == "private, no-store"
        token = token_from(response.text)
        signed = client.cookies["pyweb_csrf"]
        assert signing.signer("pyweb.csrf").unsign(signed).decode() == unmask(token)
        again = client.get("/form")  # the same secret while the browser keeps the cookie
        assert unmask(token_from(again.text)) == unmask(token)
        assert again.headers.get_all("set-cookie") == []
        assert client.post("/echo", {"x": "a", "csrf_token": token}).text == "got a"
        assert "pyweb_session" not in client.cookies
        # The cookie must be this site's signature for this use: a changed one, or a
        # session id's signed value, is no token.
        for cookie in (("B" if signed[0] == "A" else "A") + signed[1:],  # another value
                       signing.signer("pyweb.session").sign(unmask(token)).decode()):  # fmt: skip
            refused = client.post(
                "/echo", {"x": "b", "csrf_token": token}, headers={"Cookie": f"pyweb_csrf={cookie}"}
            )
            assert refused.status == 403 and "no session" in refused.text
        # A token without its cookie, or a cookie without its token, is refused too.
        assert (
            client.post("/echo", {"x": "c", "csrf_token": token}, headers={"Cookie": "a=b"}).status
            == 403
        )
        assert client.post("/echo", {"x": "d"}).status == 403


def test_a_browser_with_a_session_is_checked_against_the_session_only(site):
    root = site(SITE)
    with serve(root) as client:
        client.get("/visits")  # a session first: the token goes in it, as it always did
        response = client.get("/form")
        assert response.headers.get_all("set-cookie") == []  # the id the browser has
        assert "pyweb_csrf" not in client.cookies
        token = token_from(response.text)
        assert "_csrf_token" in client.get("/peek").text
        assert client.post("/echo", {"x": "a", "csrf_token": token}).text == "got a"
    with serve(root) as other:  # a signed cookie token does not pass for a session's
        first = other.get("/form")
        cookie_token = token_from(first.text)
        signed = other.cookies["pyweb_csrf"]
        session = client.cookies["pyweb_session"]
        forged = other.post(
            "/echo",
            {"x": "b", "csrf_token": cookie_token},
            headers={"Cookie": f"pyweb_session={session}; pyweb_csrf={signed}"},
        )
        assert forged.status == 403 and "not this session" in forged.text


def test_exemptions_service_flag_and_setting(site):
    root = site(SITE)
    with serve(root) as client:
        assert client.post("/api/echo", {"x": "1"}).json() == {"x": "1"}
    with serve(Site(root, csrf_exempt=["/echo"])) as client:
        assert client.post("/echo", {"x": "2"}).text == "got 2"
        assert client.post("/visits").status == 403


def test_token_changes_on_login(site):
    root = site(SITE)
    with serve(root) as client:
        before = csrf_token(client, "/login")
        client.post("/login", {"user": "alice", "password": "wonderland", "csrf_token": before})
        after = csrf_token(client, "/form")
        assert after != before
        assert client.post("/echo", {"x": "1", "csrf_token": before}).status == 403


# -- security headers ---------------------------------------------------------------------------


def test_security_headers(site):
    root = site({**SITE, "data.py": "conn.return_({'a': 1})\n", "style.css": "p{}\n"})
    with serve(root) as client:
        html = client.get("/form")
        assert html.headers["x-content-type-options"] == "nosniff"
        assert html.headers["x-frame-options"] == "SAMEORIGIN"
        assert html.headers["referrer-policy"] == "same-origin"
        assert "strict-transport-security" not in html.headers
        for path in ("/data", "/style.css", "/nothing-here"):
            response = client.get(path)
            assert response.headers["x-content-type-options"] == "nosniff", path
        assert "x-frame-options" not in client.get("/data").headers
    custom = Site(root, frame_options="DENY", referrer_policy=None, hsts=31536000)
    with serve(custom) as client:
        html = client.get("/form")
        assert html.headers["x-frame-options"] == "DENY"
        assert "referrer-policy" not in html.headers
        assert "strict-transport-security" not in html.headers  # HSTS over https only
        html = client.get("/form", headers={"X-Forwarded-Proto": "https"})  # (a trusted proxy)
        assert html.headers["strict-transport-security"] == "max-age=31536000"


def test_a_page_may_set_its_own_security_header(site):
    root = site({"own.py": "conn.return_('x', headers=[('X-Frame-Options', 'DENY')])\n"})
    with serve(root) as client:
        assert client.get("/own").headers.get_all("x-frame-options") == ["DENY"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


@pytest.mark.loop_free
@given(json_values, st.data())
def test_any_json_value_round_trips_and_any_changed_character_is_refused(value, data):
    signing.configure("property-test-key-0123456789")
    try:
        token = signing.sign(value, salt="p")
        assert signing.unsign(token, salt="p") == value
        at = data.draw(st.integers(0, len(token) - 1))
        replacement = data.draw(st.sampled_from("AbZ09-_."))
        changed = token[:at] + replacement + token[at + 1 :]
        if changed != token:
            try:
                decoded = signing.unsign(changed, salt="p")
            except signing.BadSignature:
                pass
            else:  # base64 padding bits: a change that decodes to the same bytes
                assert decoded == value
    finally:
        signing.configure(None)


# -- the settings, through pyweb serve and pyweb.toml ---------------------------------------


@pytest.mark.loop_free  # (`pyweb serve` on its default loop: what is read is the same on both)
def test_settings_from_pyweb_toml(tmp_path):
    """secret_key (a list: rotation), csrf_exempt, login_url and the headers, read by
    `pyweb serve` from the site's pyweb.toml, with no PYWEB_SECRET_KEY in the environment."""
    import os
    import time

    from pyweb.testing import Client

    root = write_site(
        tmp_path / "site",
        {
            **SITE,
            "pyweb.toml": """
                secret_key = ["the-new-key-0123456789", "the-old-key-0123456789"]
                csrf_exempt = ["/echo"]
                login_url = "/signin"
                frame_options = "DENY"
                referrer_policy = "none"
                hsts = 600
                session_idle = 120
            """,
        },
    )
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYWEB_SECRET_KEY"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyweb", "serve", str(root), "--port", str(port),
         "--access-log", "none"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        client = Client(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 30
        while True:
            try:
                response = client.get("/form", headers={"X-Forwarded-Proto": "https"})
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
                time.sleep(0.1)
        assert response.headers["x-frame-options"] == "DENY"
        assert "referrer-policy" not in response.headers
        assert response.headers["strict-transport-security"] == "max-age=600"
        assert client.post("/echo", {"x": "1"}).text == "got 1"  # exempt: no token needed
        assert client.post("/visits").status == 403  # everything else still checked
        assert client.get("/private").headers["location"] == "/signin?next=/private"
        # The cookie is signed with the first key: it verifies with that key alone.
        signing.configure("the-new-key-0123456789")
        try:
            client.get("/visits")
            sid = signing.timed_signer("pyweb.session").unsign(client.cookies["pyweb_session"])
            assert sid
        finally:
            signing.configure(None)
    finally:
        proc.terminate()
        proc.wait(20)


def test_the_servers_own_error_pages_say_nosniff_too(site):
    import socket

    root = site({"hello.py": "conn.return_('hi')\n"})
    with serve(root) as client:
        with socket.create_connection(("127.0.0.1", client.server.port), timeout=10) as sock:
            sock.sendall(b"GARBAGE\r\n\r\n")  # no site sees this: the parser answers 400
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 400") and b"x-content-type-options: nosniff" in head
