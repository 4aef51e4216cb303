"""One URL per page: no spelling of a trapped path reaches the page without its trap.

Before: under ``@pyweb.trap("/admin/*")`` (docs/routing.md), ``/admin`` was sent to the login
page but ``/admin.py`` and ``/admin%2Epy`` answered the admin page to anyone. Traps are now
matched on the path's canonical spelling (:func:`pyweb.app.traps.canonical`), and the ``.py``
alias of a page is answered with a redirect to its one URL.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyweb.app.traps import canonical

from .conftest import Served

pytestmark = pytest.mark.loops("trio", "asyncio")

SPELLINGS = [
    "/admin", "/admin.py", "/admin%2Epy", "/admin%2epy", "/%61dmin", "/%61dmin.py", "/ADMIN",
    "/Admin.py", "/admin/", "/admin/index.py", "//admin", "/admin.py?x=1", "/members/feed",
    "/members/feed.py", "/members%2Ffeed", "/members/feed%2Epy", "/MEMBERS/feed",
    "/members/./feed", "/members//feed.py",
]  # fmt: skip


@pytest.mark.parametrize("path", SPELLINGS)
def test_a_stranger_never_gets_the_trapped_page(served: Served, path: str) -> None:
    answer = served.get(path)
    assert "ADMIN PAGE" not in answer.text and "MEMBERS FEED" not in answer.text, (path, answer)
    assert answer.status in (303, 308, 400, 404), (path, answer.status)
    if answer.status == 308:  # the alias: sent to the page's one URL, where the trap runs
        again = served.get(answer.headers["location"])
        assert again.status == 303, (path, answer.headers["location"], again.status)
        assert again.headers["location"].startswith("/login")


def test_the_py_alias_is_sent_to_the_one_url(served: Served) -> None:
    answer = served.get("/admin.py?tab=2")
    assert answer.status == 308
    assert answer.headers["location"] == "/admin?tab=2"
    assert served.get("/plain.py").headers["location"] == "/plain"
    assert served.get("/plain").text == "plain"


def test_a_member_gets_the_page_at_its_url(served: Served) -> None:
    served.login()
    assert served.get("/admin").text == "ADMIN PAGE"
    assert served.get("/members/feed").text == "MEMBERS FEED"


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """``/admin`` or ``/members/feed`` as an attacker might write it: letters in any case,
    any of them percent-encoded, extra slashes and dot segments, the ``.py`` alias."""
    words = draw(st.sampled_from([["admin"], ["members", "feed"]]))
    parts = []
    for word in words:
        letters = []
        for ch in word:
            ch = ch.upper() if draw(st.booleans()) else ch
            letters.append(f"%{ord(ch):02X}" if draw(st.booleans()) else ch)
        parts.append("".join(letters))
        parts.extend(draw(st.lists(st.sampled_from(["", "."]), max_size=2)))
    path = "/" + "/".join(parts)
    if draw(st.booleans()):
        path += draw(st.sampled_from([".py", "%2Epy", "%2epy", ".PY"]))
    return path


@given(path=spellings())
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_spelling_gets_past_the_trap(served: Served, path: str) -> None:
    client = served.fresh()
    try:
        answer = client.get(path)
        assert "ADMIN PAGE" not in answer.text and "MEMBERS FEED" not in answer.text, path
    finally:
        client.close()


@given(st.text(alphabet="/.aAyYpP", max_size=20))
def test_canonical_is_one_spelling(path: str) -> None:
    once = canonical(path)
    assert once.startswith("/") and once == once.lower()
    assert "/./" not in once and "/../" not in once and "//" not in once
    assert canonical(path.upper()) == once  # any case
    assert canonical("/x/../" + path) == once  # dot segments
    last = path.rsplit("/", 1)[-1]
    if last not in ("", ".", "..") and not path.lower().endswith(".py"):
        assert canonical(path + ".py") == once  # the alias
