"""Login: argon2 off the event loop, failures counted per account, the stored name kept.

* ``hash_password``/``verify_password`` run in a worker thread in a page (awaited); a
  forgotten ``await`` is a TypeError, never a true value.
* Failures are counted per account (NFKC + casefold of the name the user table stores):
  after ``carol`` is locked, ``Carol``, ``cArol``, ``CAROL`` and ``ＣＡＲＯＬ`` are locked too,
  on SQLite, PostgreSQL and MariaDB (whose collation is case-insensitive, so ``CAROL``
  finds carol's row there).
* ``login()`` keeps the stored name: ``current_user()`` never says ``CAROL``.
* The 429 carries ``Retry-After``; a non-Latin-1 ``next`` is percent-encoded, not a 500.

Over real sockets, on both loops, against the real databases.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid

import pytest
from argon2 import PasswordHasher

import pyweb.testing
from pyweb import auth, db
from pyweb.app.site import Site
from pyweb.runtime.testing import run as run_on
from pyweb.testing import reachable
from tests.helpers import write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

PASSWORD = "correct horse battery"

LOGIN = """
from pyweb import auth, csrf_field, db, qq
from pyweb.forms import get_string

if conn.method == "POST":
    user = get_string("user", max_length=50)
    password = get_string("password", max_length=200)
    row = await db.zero_or_one_row(qq("select name, hash from TABLE where name = {user}"))
    stored = row["name"] if row else user
    if await auth.verify_password(password, row["hash"] if row else None, user=stored):
        auth.login(user)  # the typed spelling: login keeps the verified, stored one
        conn.redirect(auth.safe_next(conn.form.get("next")), 303)
    else:
        conn.return_("wrong name or password", status=401)
else:
    token = csrf_field()
    conn.return_(qq('<form method="post">{token}<input name="user"></form>'))
"""

ME = """
from pyweb import auth
conn.return_(auth.current_user() or "-", content_type="text/plain")
"""

URLS = {
    "sqlite": None,  # the site's own data/pyweb.sqlite3
    "postgresql": "postgresql://postgres@127.0.0.1:5432/test",
    "mysql": "mysql://root@127.0.0.1:3306/test",
}
PORTS = {"postgresql": 5432, "mysql": 3306}


def _admin(url: str, *statements: str) -> None:
    database = db.Database(url, pools=1, handles=1)

    async def go() -> None:
        for statement in statements:
            await database.dml(statement)

    try:
        run_on(go, "trio", virtual_time=False)
    finally:
        database.close()


@pytest.fixture(params=list(URLS))
def member_site(request, tmp_path):
    """A site with the login page of docs/auth.md over a table of its own, in one of the
    three databases, with the accounts ``carol…`` and ``dave…`` (unique per test)."""
    kind = request.param
    table = "member_" + uuid.uuid4().hex[:10]
    suffix = uuid.uuid4().hex[:6]
    names = {"carol": "carol" + suffix, "dave": "dave" + suffix}
    # argon2id with low costs: verify_password checks a hash with the parameters it carries,
    # so these tests spend their time on logins; the cost of the default parameters is
    # test_four_concurrent_logins_do_not_stall_a_static_file's subject.
    hashed = PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1).hash(PASSWORD)
    root = write_site(
        tmp_path / "site", {"login.py": LOGIN.replace("TABLE", table), "me.py": ME}
    )
    url = URLS[kind]
    if url is None:
        url = f"sqlite:///{root / 'data' / 'members.sqlite3'}"
        (root / "data").mkdir()
    elif not reachable("127.0.0.1", PORTS[kind]):
        pytest.skip(f"{kind} is not reachable")
    collation = " character set utf8mb4 collate utf8mb4_general_ci" if kind == "mysql" else ""
    _admin(
        url,
        f"create table {table} (name varchar(50) primary key, hash varchar(200)){collation}",
        *(f"insert into {table} values ('{n}', '{hashed}')" for n in names.values()),
    )
    db.configure(url)
    try:
        yield kind, root, names
    finally:
        db.configure(None)
        if kind != "sqlite":
            _admin(url, f"drop table {table}")


def _login(client, user: str, password: str, next_page: str = "/me"):
    client.csrf_token("/login")
    return client.post(
        "/login", {"user": user, "password": password, "next": next_page}, csrf=True
    )


def test_failures_are_counted_per_account(member_site):
    kind, root, names = member_site
    carol = names["carol"]
    variants = [carol.capitalize(), carol[:1] + carol[1:].upper(), carol.upper(),
                "".join(chr(ord(c) + 0xFEE0) if c.isalpha() else c for c in carol.upper())]
    with pyweb.testing.serve(Site(root, secret_key="k" * 32)) as client:
        statuses = [_login(client, carol, "wrong").status for _ in range(5)]
        assert statuses == [401] * 5
        refused = _login(client, carol, "wrong")
        assert refused.status == 429
        retry = int(refused.headers["retry-after"])
        assert 1 <= retry <= auth.FAILURE_WINDOW
        for variant in variants:  # the same account, spelled otherwise: locked as well
            assert _login(client, variant, "wrong").status == 429, variant
        assert _login(client, carol.upper(), PASSWORD).status == 429  # even when right


def test_login_keeps_the_stored_name(member_site):
    kind, root, names = member_site
    dave = names["dave"]
    with pyweb.testing.serve(Site(root, secret_key="k" * 32)) as client:
        typed = dave.upper() if kind == "mysql" else dave  # only MariaDB finds DAVE's row
        response = _login(client, typed, PASSWORD)
        assert response.status == 303, response.text
        assert client.get("/me").text == dave  # never DAVE…
        if kind != "mysql":  # case-sensitive tables: DAVE is an unknown user
            other = pyweb.testing.Client(f"http://127.0.0.1:{client.server.port}")
            assert _login(other, dave.upper(), PASSWORD).status == 401


def test_a_non_latin1_next_is_encoded(member_site):
    kind, root, names = member_site
    if kind != "sqlite":
        pytest.skip("the redirect does not depend on the database")
    with pyweb.testing.serve(Site(root, secret_key="k" * 32)) as client:
        for target, location in (("/€", "/%E2%82%AC"), ("/。evil.example", "/%E3%80%82evil.example"),
                                 ("/a b?x=ü", "/a%20b?x=%C3%BC")):  # fmt: skip
            response = _login(client, names["dave"], PASSWORD, next_page=target)
            assert response.status == 303, (target, response.status)
            assert response.headers["location"] == location


# ------------------------------------------------------------------ off the event loop

AWAITED = """
from pyweb import auth
hashed = await auth.hash_password("pw")
ok = await auth.verify_password("pw", hashed)
conn.return_(f"{ok} {hashed[:9]}", content_type="text/plain")
"""

FORGOTTEN = """
from pyweb import auth
hashed = "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA"
if auth.verify_password("guess", hashed, user="x"):
    conn.return_("logged in", content_type="text/plain")
else:
    conn.return_("no", content_type="text/plain")
"""


def test_hashing_is_awaited_in_a_page_and_a_forgotten_await_fails_closed(tmp_path):
    root = write_site(tmp_path / "site", {"awaited.py": AWAITED, "forgotten.py": FORGOTTEN})
    with pyweb.testing.serve(Site(root, dev=True, secret_key="k" * 32)) as client:
        assert client.get("/awaited").text == "True $argon2id"
        response = client.get("/forgotten")
        assert response.status == 500
        assert "await auth.verify_password" in response.text
        assert response.text != "logged in"


SLOW_LOGIN = """
from pyweb import auth, csrf_field, qq
if conn.method == "POST":
    ok = await auth.verify_password(conn.form["password"], None, user=conn.form["user"])
    conn.return_("no", status=401)
else:
    token = csrf_field()
    conn.return_(qq('<form method="post">{token}</form>'))
"""


def test_four_concurrent_logins_do_not_stall_a_static_file(tmp_path):
    """The review's measurement: four clients logging in (argon2id, about half a second
    each) pushed a static file from 1 ms to 409 ms median. Off the loop it stays quick.
    The bound is generous (a loaded 2-core machine): median under 150 ms, max under 1 s."""
    root = write_site(tmp_path / "site", {"login.py": SLOW_LOGIN, "hello.txt": "hello"})
    stop = threading.Event()
    logins = [0]

    with pyweb.testing.serve(Site(root, secret_key="k" * 32)) as client:
        base = f"http://127.0.0.1:{client.server.port}"

        def log_in_forever(n: int) -> None:
            me = pyweb.testing.Client(base)
            me.csrf_token("/login")
            while not stop.is_set():
                user = f"u{n}-{uuid.uuid4().hex[:8]}"  # a fresh name each time, as in the attack
                assert me.post("/login", {"user": user, "password": "x"}, csrf=True).status == 401
                logins[0] += 1

        threads = [threading.Thread(target=log_in_forever, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        try:
            deadline = time.monotonic() + 30
            while logins[0] < 4 and time.monotonic() < deadline:  # the hashing has begun
                client.get("/hello.txt")
            latencies = []
            for _ in range(40):
                started = time.perf_counter()
                assert client.get("/hello.txt").text == "hello"
                latencies.append(time.perf_counter() - started)
        finally:
            stop.set()
            for t in threads:
                t.join(30)
    assert logins[0] >= 4
    median = statistics.median(latencies)
    print(f"static file during 4 logins: median {median * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms")
    assert median < 0.15 and max(latencies) < 1.0, latencies
