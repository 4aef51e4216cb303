"""Cookie attributes are validated: ``set_cookie(domain=...)`` or ``path=...`` with ``;``,
CR/LF or other characters a cookie attribute cannot hold raises ``ValueError`` naming the
value (before, ``domain="x; Path=/admin"`` injected an attribute). Over real sockets, on
both loops: the page's error is the 500 page; the server goes on serving.
"""

from __future__ import annotations

import json

import pytest

import pyweb.testing
from pyweb.app.site import Site
from tests.helpers import write_site

pytestmark = pytest.mark.loops("trio", "asyncio")

PAGE = """
import json
which = conn.query["which"]
value = json.loads(conn.query["value"])  # (JSON: a NUL or CR cannot travel in a raw query)
try:
    conn.set_cookie("pref", "dark", **{which: value})
except ValueError as exc:
    conn.return_("refused: " + str(exc), content_type="text/plain")
else:
    conn.return_("set", content_type="text/plain")
"""

BAD_DOMAINS = [
    "x; Path=/admin", "example.com;", "exa mple.com", "example.com\r\nX-Evil: 1",
    "ex\x00ample.com", "bücher.example", "-bad.example", "bad-.example", "a..b", "",
]  # fmt: skip
BAD_PATHS = ["/a; Domain=evil.example", "/a\r\nX: 1", "/ä", "/a\x7f"]


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory):
    return write_site(tmp_path_factory.mktemp("cookies") / "site", {"c.py": PAGE})


def _ask(client, which: str, value: str):
    return client.get("/c", params={"which": which, "value": json.dumps(value)})


def test_bad_domains_and_paths_are_refused_naming_the_value(site_dir):
    with pyweb.testing.serve(Site(site_dir)) as client:
        for which, values in (("domain", BAD_DOMAINS[:-1]), ("path", BAD_PATHS)):
            for value in values:
                response = _ask(client, which, value)
                assert response.status == 200
                assert response.text.startswith("refused: "), (which, value, response.text)
                assert repr(value) in response.text
                assert response.headers.get("set-cookie") is None


def test_good_attributes_still_work(site_dir):
    with pyweb.testing.serve(Site(site_dir)) as client:
        for value in ("example.com", ".example.com", "xn--bcher-kva.example", "localhost"):
            response = _ask(client, "domain", value)
            assert response.text == "set"
            assert f"Domain={value}" in response.headers.get("set-cookie")
        response = _ask(client, "path", "/shop/cart")
        assert "Path=/shop/cart" in response.headers.get("set-cookie")


def test_an_empty_domain_means_none(site_dir):
    with pyweb.testing.serve(Site(site_dir)) as client:
        response = _ask(client, "domain", "")
        assert response.text == "set" and "Domain" not in response.headers.get("set-cookie")
