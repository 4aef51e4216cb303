"""A state change needs a POST and a token: the CSRF attacks, over real sockets.

Before: a page written like the guest book's ``guest_add`` answered every method and read
the query into ``conn.form``, so ``GET /account_update?email=...`` (a link, an image) changed
a logged-in user's e-mail with no token; PROPFIND and OPTIONS skipped the check, and a token
in a POST's URL was accepted. Each test here is one of those attacks, and it fails.
"""

from __future__ import annotations

import pytest

from .conftest import Served

pytestmark = pytest.mark.loops("trio", "asyncio")


def _email(client: Served) -> str:
    answer = client.get("/account")
    assert answer.status == 200, answer.text[:300]
    return answer.text


def test_get_with_the_form_in_the_query_changes_nothing(served: Served) -> None:
    served.login()
    answer = served.get("/account_update?email=mallory@example.com")
    assert answer.status == 405
    assert answer.headers["allow"] == "POST"
    assert _email(served) == "email=None"


def test_a_post_with_the_token_in_the_body_or_header_changes_the_account(served: Served) -> None:
    served.login()
    token = served.get("/csrf").text
    answer = served.post("/account_update", {"email": "a@example.com", "csrf_token": token})
    assert answer.status == 200, answer.text[:300]
    assert _email(served) == "email=a@example.com"
    answer = served.post(
        "/account_update", {"email": "b@example.com"}, headers={"X-CSRF-Token": token}
    )
    assert answer.status == 200, answer.text[:300]
    assert _email(served) == "email=b@example.com"


def test_a_token_in_the_url_of_a_post_is_not_taken(served: Served) -> None:
    served.login()
    token = served.get("/csrf").text
    answer = served.post(f"/account_update?csrf_token={token}", {"email": "m@example.com"})
    assert answer.status == 403
    assert "CSRF" in answer.text
    assert _email(served) == "email=None"


@pytest.mark.parametrize("method", ["PROPFIND", "PUT", "PATCH", "DELETE", "MKCOL", "LOCK"])
def test_every_method_but_the_safe_ones_needs_the_token(served: Served, method: str) -> None:
    served.login()
    answer = served.request(
        method,
        "/account_update",
        body=b"email=m%40example.com",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert answer.status == 403, (method, answer.status, answer.text[:200])
    assert _email(served) == "email=None"


@pytest.mark.parametrize("method", ["OPTIONS", "TRACE", "HEAD"])
def test_the_safe_methods_reach_a_post_only_page_as_a_405(served: Served, method: str) -> None:
    served.login()
    answer = served.request(method, "/account_update?email=m%40example.com")
    assert answer.status == 405, (method, answer.status)
    assert _email(served) == "email=None"


def test_a_get_form_is_still_read_by_the_getters(served: Served) -> None:
    answer = served.get("/search?q=owls")
    assert (answer.status, answer.text) == (200, "found owls")


def test_a_posts_form_is_its_body_alone(served: Served) -> None:
    token = served.get("/csrf").text
    answer = served.post("/echo?x=query", {"y": "body"}, headers={"X-CSRF-Token": token})
    assert answer.status == 200, answer.text[:300]
    assert answer.json() == {"form": {"y": "body"}, "query": {"x": "query"}}
    answer = served.get("/echo?x=query")
    assert answer.json() == {"form": {"x": "query"}, "query": {"x": "query"}}
